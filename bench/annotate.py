"""Workspace benchmark: step-switch time in a real browser and autosave latency under 50 concurrent annotators.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/ws_bench REDIS_URL=redis://127.0.0.1:6379/4 \
        .venv/bin/python bench/annotate.py [--annotators 50] [--saves 20] [--workers 4] [--threads 8] [--no-browser] [--lockstep]

It migrates the database named by DATABASE_URL (its own bench database, not yours), imports 15-step
1920×1080 traces through the real importer, starts uvicorn on 127.0.0.1, then
1. drives Chromium through a trace with the keyboard and reads the page's Performance API measures
   of its step-switch function (``ws-step-switch``, prefetch on): target p95 ≤ 50 ms; then zooms with the wheel
   in and out for two seconds and times the frames painted (``requestAnimationFrame``): bar 50 frames/s;
2. runs N annotators as threads, each logged in over HTTP with its own session, taking a trace
   with a lease and autosaving drafts with the version it was based on: target p95 ≤ 50 ms, 0 errors,
   and every accepted write present in the database afterwards.

Annotators work independently: each starts at a random moment within the first ``--think`` seconds and
waits a random 0.5–1.5 × ``--think`` between its saves (mean ``--think``, ~1 save/s each by default).
``--lockstep`` starts them all at once and waits exactly ``--think``, which keeps every save of a round
arriving together: a burst test, reported separately. Besides the round trip it reports the server's own
share (the Server-Timing header) and the uvicorn processes' CPU time per save.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEPS = 15
PASSWORD = "bench-password-7731"


def p95(values):
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_traces(folder: Path, count: int, tag: str) -> Path:
    from PIL import Image, ImageDraw

    for i in range(1, STEPS + 1):
        image = Image.new("RGB", (1920, 1080), (240, 242, 246))
        draw = ImageDraw.Draw(image)
        for row in range(30):
            draw.rectangle(
                (40, 60 + row * 32, 40 + (row * 53 + i * 97) % 1500 + 200, 80 + row * 32), fill=(60 + i * 10, 90, 140)
            )
        draw.text((1700, 20), tag, fill=(0, 0, 0))  # new bytes per run: screenshots are stored by content hash
        image.save(folder / f"s{i}.png")
    with (folder / "traces.jsonl").open("w") as out:
        for n in range(count):
            steps = [
                {
                    "screenshot": f"s{i}.png",
                    "thought": f"Step {i}: open the menu.",
                    "action": f"click(start_box='<|box_start|>({100 + 40 * i},{200 + 30 * i})<|box_end|>')",
                }
                for i in range(1, STEPS + 1)
            ]
            out.write(
                json.dumps(
                    {
                        "format": "trace-studio/v1",
                        "external_id": f"{tag}-{n}",
                        "instruction": f"Bench task {n}",
                        "steps": steps,
                    }
                )
                + "\n"
            )
    return folder


def seed(count: int, tag: str, tmp: Path):
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces import services

    users = [
        user_create_with_role(username=f"{tag}-a{n}", password=PASSWORD, role=Role.ANNOTATOR) for n in range(count)
    ]
    project = services.project_create(name=f"Bench {tag}", members=users)
    folder = write_traces(tmp, count, tag)
    job = services.import_job_create(
        project=project,
        user=None,
        upload_name=str(folder),
        original_name="bench",
        fmt="native",
        server_path=True,
        enqueue=False,
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.errors
    return project, users


def login(base: str, username: str):
    import requests

    session = requests.Session()
    session.trust_env = False  # loopback: no proxy lookup through the environment on every request
    session.get(f"{base}/login/", timeout=30)
    response = session.post(
        f"{base}/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{base}/login/"},
        timeout=30,
    )
    response.raise_for_status()
    return session


def annotator_claim(base, username, project_id):
    """Log in and take a trace with a lease (setup, not measured)."""
    session = login(base, username)
    headers = {"X-CSRFToken": session.cookies["csrftoken"], "Referer": base}
    claim = session.post(f"{base}/api/projects/{project_id}/next-trace/", headers=headers, timeout=60)
    claim.raise_for_status()
    return session, headers, claim.json()["annotation"]


def cpu_seconds(root_pid: int) -> float:
    """User + system CPU seconds of a process and its children (Linux /proc), e.g. uvicorn and its workers."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == root_pid or int(fields[1]) == root_pid:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def server_ms(header: str | None) -> float | None:
    """The server's own time for a response, from its Server-Timing header (app;dur=<ms>)."""
    for part in (header or "").split(","):
        name, _, duration = part.strip().partition(";dur=")
        if name == "app" and duration:
            return float(duration)
    return None


def annotator_run(base, username, claimed, saves, latencies, server_times, errors, accepted, start, think, lockstep):
    session, headers, annotation = claimed
    version = annotation["version"]
    rng = random.Random(username)
    # The saves go over one kept-alive http.client connection: a client far lighter than requests, so the
    # load generator takes less of the CPU it shares with the server it measures. Login, CSRF and the
    # claim came through requests (annotator_claim); their cookies ride along.
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    save_headers = {
        **headers,
        "Content-Type": "application/json",
        "Cookie": "; ".join(f"{c.name}={c.value}" for c in session.cookies),
    }
    path = f"/api/annotations/{annotation['id']}/draft/"
    start.wait()
    if not lockstep:
        time.sleep(rng.uniform(0, think))
    for k in range(saves):
        body = {
            "version": version,
            "note": f"{username} save {k}",
            "corrected_thought": f"thought {k} " * 20,
            "verdict": "error",
            "tau": 1 + k % STEPS,
            "editor_state": {"corrected": {"type": "click", "args": {"start_box": [10 + k, 20 + k]}}},
        }
        payload = json.dumps(body)
        t0 = time.perf_counter()
        try:
            connection.request("PUT", path, body=payload, headers=save_headers)
            response = connection.getresponse()
            content = response.read()
        except Exception as exc:  # counted as an error
            errors.append(f"{username}: {exc!r}")
            connection.close()
            continue
        latencies.append((time.perf_counter() - t0) * 1000)
        server_times.append(server_ms(response.getheader("Server-Timing")))
        if response.status != 200:
            errors.append(f"{username}: {response.status} {content[:200]!r}")
            continue
        version = json.loads(content)["version"]
        accepted[annotation["id"]] = (version, body["note"], body["tau"])
        # a person works between autosaves (the page debounces edits by 0.7 s)
        time.sleep(think if lockstep else rng.uniform(0.5 * think, 1.5 * think))


def step_switch(base: str, username: str, annotation_url: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1920, "height": 1080})
        page.goto(f"{base}/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        page.goto(f"{base}{annotation_url}")
        page.wait_for_selector("#ws[data-ready='1']")
        for _ in range(4):
            for _ in range(STEPS):
                page.keyboard.press("j")
                page.wait_for_timeout(30)
            for _ in range(STEPS):
                page.keyboard.press("k")
                page.wait_for_timeout(30)
        durations = page.evaluate("performance.getEntriesByName('ws-step-switch').map(e => e.duration)")
        frame_gaps = zoom_frame_gaps(page)
        browser.close()
    return durations, frame_gaps


def zoom_frame_gaps(page) -> list[float]:
    """Wheel zoom in and out over the screenshot for about two seconds; the gaps between the frames the browser
    painted meanwhile (``requestAnimationFrame`` times), in ms."""
    frame = page.locator("#ws-stage .ws-frame").first.bounding_box()
    page.mouse.move(frame["x"] + frame["width"] * 0.4, frame["y"] + frame["height"] * 0.5)
    page.evaluate(
        """() => {
        window.frameTimes = [];
        const tick = (t) => { window.frameTimes.push(t); if (window.frameTimes.length < 100000) requestAnimationFrame(tick); };
        requestAnimationFrame(tick);
    }"""
    )
    for i in range(60):
        page.mouse.wheel(0, -120 if (i // 15) % 2 == 0 else 120)
        page.wait_for_timeout(30)
    times = page.evaluate("window.frameTimes")
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4, help="uvicorn processes (docker-compose's web default)")
    parser.add_argument(
        "--threads", type=int, default=8, help="request threads per uvicorn process (STUDIO_WEB_THREADS)"
    )
    parser.add_argument("--think", type=float, default=1.0, help="mean seconds between one annotator's autosaves")
    parser.add_argument("--no-browser", action="store_true", help="skip the step-switch measurement")
    parser.add_argument("--lockstep", action="store_true", help="all annotators save at the same moments (burst test)")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        print("note: DATABASE_URL is not set; measuring on SQLite (the target is stated for PostgreSQL)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-annotate-"))
    env = dict(
        os.environ,
        STUDIO_DATA_DIR=str(tmp / "data"),
        STUDIO_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="studio.settings",
    )
    os.environ.update(env)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.db import connection

    from annotation.models import Annotation

    tag = f"b{int(time.time())}"
    project, users = seed(args.annotators, tag, tmp)
    connection.close()
    # The studio's own settings, with DEBUG off as in the full stack (DEBUG keeps every query's SQL per request).
    server_env = dict(
        env,
        STUDIO_DEBUG="false",
        STUDIO_WEB_THREADS=str(args.threads),
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "studio.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=server_env,
    )
    try:
        import requests

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                requests.get(f"{base}/login/", timeout=2)
                break
            except requests.ConnectionError:
                time.sleep(0.3)
        latencies, server_times, errors, accepted = [], [], [], {}
        gate = threading.Event()
        claims = [annotator_claim(base, u.username, project.pk) for u in users]
        threads = [
            threading.Thread(
                target=annotator_run,
                args=(
                    base,
                    u.username,
                    c,
                    args.saves,
                    latencies,
                    server_times,
                    errors,
                    accepted,
                    gate,
                    args.think,
                    args.lockstep,
                ),
            )
            for u, c in zip(users, claims)
        ]
        for t in threads:
            t.start()
        time.sleep(0.5)
        t0 = time.perf_counter()
        cpu_before = cpu_seconds(server.pid)
        gate.set()
        for t in threads:
            t.join(300)
        wall = time.perf_counter() - t0
        server_cpu_ms = (cpu_seconds(server.pid) - cpu_before) * 1000
        missing = []
        for annotation_id, (version, note, tau) in accepted.items():
            row = Annotation.objects.get(pk=annotation_id)
            if (row.version, row.note, row.tau) != (version, note, tau):
                missing.append(annotation_id)
        first = Annotation.objects.filter(annotator=users[0]).first()
        durations, frame_gaps = (
            ([], []) if args.no_browser else step_switch(base, users[0].username, f"/annotations/{first.pk}/")
        )
    finally:
        server.terminate()
        server.wait(20)
    # The workspace's modules (the entry, its parts and the shared modules it imports) and its style sheets.
    page_files = ["static/js/workspace.js", "static/css/workspace.css", "static/css/studio.css"]
    page_files += [f"static/js/{name}.js" for name in ("dom", "api", "geometry", "zoom", "action_editor", "prescore")]
    page_files += [str(p.relative_to(REPO)) for p in (REPO / "static/js/workspace").glob("*.js")]
    js_css = sum((REPO / p).stat().st_size for p in page_files)
    if durations:
        print(
            f"step switch (browser, Performance API, prefetch on): n={len(durations)} "
            f"median={statistics.median(durations):.2f} ms p95={p95(durations):.2f} ms (target ≤ 50 ms)"
        )
    if frame_gaps:
        fps = 1000 * len(frame_gaps) / sum(frame_gaps)
        print(
            f"wheel zoom on a 1920x1080 screenshot: {len(frame_gaps)} frames, {fps:.1f} frames/s, "
            f"p95 frame {p95(frame_gaps):.1f} ms (bar 50 frames/s)"
        )
    print(
        f"autosave: {args.annotators} annotators × {args.saves} saves{' in lockstep' if args.lockstep else ''} "
        f"over HTTP to uvicorn ({args.workers} workers × {args.threads} threads), "
        f"{connection.vendor}: n={len(latencies)} median={statistics.median(latencies):.1f} ms p95={p95(latencies):.1f} ms "
        f"(target ≤ 50 ms), errors={len(errors)}, wall={wall:.1f}s"
    )
    timed = [t for t in server_times if t is not None]
    if timed:
        print(
            f"  of which at the server (Server-Timing, request in to response out): median={statistics.median(timed):.1f} ms "
            f"p95={p95(timed):.1f} ms; the rest is the network stack and the load generator sharing the same cores"
        )
    print(
        f"  server CPU (uvicorn processes) per save: {server_cpu_ms / max(1, len(latencies)):.1f} ms "
        f"({server_cpu_ms / 1000 / wall:.2f} cores busy on average over {os.cpu_count()} cores)"
    )
    print(
        f"accepted writes present afterwards: {len(accepted) - len(missing)}/{len(accepted)} annotations hold their last accepted save"
    )
    print(f"workspace page JS+CSS: {js_css / 1024:.1f} KB (limit 150 KB), no CDN")
    for line in errors[:10]:
        print("  error:", line)
    return 0 if not errors and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
