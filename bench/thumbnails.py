"""Web memory for first views of large screenshots' thumbnails.

    .venv/bin/python bench/thumbnails.py [--count 8] [--width 3840] [--height 2160] [--forget-thumbnails]

It migrates a fresh SQLite database in a temporary data dir, imports one trace of ``--count`` PNG screenshots
through the real importer, starts the web server (uvicorn, DEBUG off, one process) and sends ``--count`` first
views of the thumbnails at once, each from its own logged-in session. It reports the web process's resident
memory before, its peak during (the kernel's high-water mark, VmHWM) and what it still holds after, and the
slowest answer.

``--forget-thumbnails`` drops the thumbnails the import made (the state of screenshots imported before imports
made them). Against a checkout from before this change, run the same file with or without it: there the first
view decoded each screenshot in the request.
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PASSWORD = "bench-password-7731"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_mb(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def screenshot_png(width: int, height: int, seed: int) -> bytes:
    """A screenshot-like PNG: a flat background with bars and text, different bytes per seed."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), (238, 240, 244))
    draw = ImageDraw.Draw(image)
    for row in range(0, height - 40, 36):
        draw.rectangle((40, row + 10, 40 + (row * 7 + seed * 131) % (width - 80), row + 30), fill=(60, 90, 140))
    draw.text((20, 4), f"bench {seed} {time.time()}", fill=(0, 0, 0))
    # A photo-like region (a wallpaper, a video) that does not compress: real 4K screenshots are megabytes.
    image.paste(
        Image.frombytes("RGB", (width // 4, height // 4), os.urandom(width // 4 * (height // 4) * 3)),
        (width // 2, height // 2),
    )
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def seed(count: int, width: int, height: int, forget: bool) -> tuple[list[str], str]:
    from django.core.files.storage import default_storage

    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.importers.base import ImageRef, ImportedStep, ImportedTrace
    from traces.models import Screenshot
    from traces.services import project_create, trace_import_one

    user = user_create_with_role(username="bench-annotator", role=Role.ANNOTATOR, password=PASSWORD)
    project = project_create(name="Thumbnail bench", members=[user])
    images = [screenshot_png(width, height, n) for n in range(count)]
    steps = [
        ImportedStep(screenshot=ImageRef(f"s{n}.png", (lambda data=data: data)), raw_response="Action: wait()")
        for n, data in enumerate(images)
    ]
    imported = ImportedTrace(external_id="bench", instruction="Look", source="native", steps=steps)
    trace = trace_import_one(project=project, imported=imported).trace
    shots = [step.screenshot for step in trace.steps.order_by("index")]
    if forget:
        for shot in shots:
            if shot.thumbnail:
                default_storage.delete(shot.thumbnail.name)
        Screenshot.objects.filter(pk__in=[s.pk for s in shots]).update(thumbnail="")
    made = sum(bool(s.thumbnail) for s in Screenshot.objects.filter(pk__in=[s.pk for s in shots]))
    print(
        f"{count} screenshots {width}×{height} PNG, {sum(map(len, images)) / 1e6:.1f} MB; thumbnails at import: {made}"
    )
    return [s.thumbnail_url for s in shots], user.username


def login(base: str, username: str):
    import requests

    session = requests.Session()
    session.trust_env = False
    session.get(f"{base}/login/", timeout=30)
    response = session.post(
        f"{base}/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{base}/login/"},
        timeout=30,
    )
    response.raise_for_status()
    return session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=8, help="screenshots, viewed at once")
    parser.add_argument("--width", type=int, default=3840)
    parser.add_argument("--height", type=int, default=2160)
    parser.add_argument("--forget-thumbnails", action="store_true", help="as if imported before thumbnails")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-thumbnails-"))
    env = dict(
        os.environ,
        STUDIO_DATA_DIR=str(tmp / "data"),
        STUDIO_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="studio.settings",
    )
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    os.environ.clear()
    os.environ.update(env)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.db import connection

    urls, username = seed(args.count, args.width, args.height, args.forget_thumbnails)
    connection.close()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server_env = dict(
        env,
        STUDIO_DEBUG="false",
        STUDIO_WEB_THREADS=str(max(8, args.count)),
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
    )
    command = [sys.executable, "-m", "uvicorn", "studio.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen([*command, "--log-level", "warning"], cwd=REPO, env=server_env)
    try:
        import requests

        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{base}/login/", timeout=2)
                break
            except requests.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        sessions = [login(base, username) for _ in urls]
        for session in sessions:  # warm: every session has been through the middleware and a page once
            session.get(f"{base}/", timeout=30)
        time.sleep(1)
        before = memory_mb(server.pid)
        barrier = threading.Barrier(len(urls))
        results: list[tuple[int, str, int, float]] = []

        def view(session, url: str) -> None:
            barrier.wait()
            start = time.perf_counter()
            response = session.get(f"{base}{url}", timeout=120)
            results.append(
                (
                    response.status_code,
                    response.headers.get("Content-Type", ""),
                    len(response.content),
                    time.perf_counter() - start,
                )
            )

        threads = [threading.Thread(target=view, args=pair) for pair in zip(sessions, urls)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        during = memory_mb(server.pid)
        time.sleep(2)
        after = memory_mb(server.pid)
        statuses = sorted({(code, kind) for code, kind, _, _ in results})
        print(f"answers: {statuses}, {sum(size for *_, size, _ in results) / 1e6:.1f} MB sent")
        print(f"slowest answer: {max(seconds for *_, seconds in results) * 1000:.0f} ms")
        print(
            f"web RSS: {before['VmRSS']:.0f} MB before, peak {during['VmHWM']:.0f} MB during "
            f"(+{during['VmHWM'] - before['VmRSS']:.0f} MB), {after['VmRSS']:.0f} MB held after"
        )
    finally:
        server.terminate()
        server.wait(20)


if __name__ == "__main__":
    main()
