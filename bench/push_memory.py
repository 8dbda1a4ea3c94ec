"""Web memory under concurrent pushes of large screenshots: the resident memory of every web process while N
runners push a 40 Mpx PNG each at once through the step-push API (POST /api/projects/<id>/traces/<id>/steps/).

    .venv/bin/python bench/push_memory.py [--pushes 8] [--rounds 3] [--web-workers 2] [--size 6000x6600]

It makes a fresh database (SQLite under a temporary folder), a lead with an API token and a project, and starts
the studio's web server (``studio.webserver.uvicorn_command``, ``--web-workers`` processes) on a loopback port.
Each round sends ``--pushes`` step pushes at once, each of its own trace, with a distinct screenshot of the size
given (a flat PNG with a few shapes: small on the wire, many pixels when decoded). RSS and PSS of the web processes
(the uvicorn parent and its children, from /proc) are sampled every 20 ms: idle before, peak during, and after.
Reported: per round the answers' statuses and times, and the memory table. A web request that decoded the image
would hold 3 bytes a pixel (120 MB for 6000×6600) per concurrent push.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import PY, REPO, SERVER_COMMAND, free_port  # noqa: E402

SETUP = r"""
import json
from studio.demo import user_create_with_role
from studio.permissions import Role
from studio.security import api_token_issue
from traces import services
lead = user_create_with_role(username="push-lead", password="push-pass-123456", role=Role.LEAD)
project = services.project_create(name="Pushes", members=[lead])
print(json.dumps({"project": project.pk, "token": api_token_issue(user=lead)}))
"""


def png(width: int, height: int, seed: int) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), (236, 239, 244))
    draw = ImageDraw.Draw(image)
    for k in range(12):
        x, y = (seed * 97 + k * 431) % (width - 400), (seed * 53 + k * 277) % (height - 300)
        draw.rectangle([x, y, x + 380, y + 260], fill=((seed * 40 + k * 20) % 255, 120, 200), outline=(20, 20, 20))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def process_tree(root: int) -> list[int]:
    children = subprocess.run(["pgrep", "-P", str(root)], capture_output=True, text=True).stdout.split()
    return [root] + [pid for child in children for pid in process_tree(int(child))]


def memory_mb(pids: list[int]) -> tuple[float, float]:
    """RSS and PSS of ``pids`` together, in MB (/proc/<pid>/smaps_rollup)."""
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


class Sampler(threading.Thread):
    def __init__(self, pids: list[int]):
        super().__init__(daemon=True)
        self.pids, self.peak, self.stop = pids, (0.0, 0.0), threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            rss, pss = memory_mb(self.pids)
            self.peak = (max(self.peak[0], rss), max(self.peak[1], pss))
            time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pushes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--size", default="6000x6600")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))

    workdir = Path(tempfile.mkdtemp(prefix="trace-studio-push-memory-"))
    env = {**os.environ, "STUDIO_DATA_DIR": str(workdir), "STUDIO_MODE": "dev", "STUDIO_DEBUG": "0"}
    env.update(STUDIO_LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    setup = subprocess.run(
        [PY, "manage.py", "shell", "-c", SETUP], cwd=REPO, env=env, check=True, capture_output=True, text=True
    )
    made = json.loads(setup.stdout.strip().splitlines()[-1])
    port = free_port()
    command = subprocess.run(
        [PY, "manage.py", "shell", "-c", SERVER_COMMAND.replace("PORT", str(port)).replace("WORKERS", str(args.web_workers))],
        cwd=REPO, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    server = subprocess.Popen(json.loads(command.stdout.strip().splitlines()[-1]), cwd=REPO, env=env)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Token {made['token']}"}
    try:
        for _ in range(200):
            try:
                requests.get(f"{base}/login/", timeout=2)
                break
            except requests.RequestException:
                time.sleep(0.3)
        time.sleep(2)
        pids = process_tree(server.pid)
        images = [png(width, height, seed) for seed in range(args.pushes * args.rounds)]
        idle = memory_mb(pids)
        print(
            f"{args.web_workers} web processes ({len(pids)} pids); {args.pushes} concurrent pushes of a "
            f"{width}x{height} PNG ({statistics.mean(len(i) for i in images) / 1024:.0f} kB each) per round",
            flush=True,
        )
        print(f"idle: RSS {idle[0]:.0f} MB, PSS {idle[1]:.0f} MB", flush=True)

        def push(n: int) -> tuple[int, float]:
            started = time.perf_counter()
            answer = requests.post(
                f"{base}/api/projects/{made['project']}/traces/big-{n}/steps/",
                data={"index": "1", "step": json.dumps({"thought": "t", "action": "click(start_box='(10,10)')"})},
                files={"screenshot": (f"big-{n}.png", images[n], "image/png")},
                headers=headers,
                timeout=120,
            )
            return answer.status_code, time.perf_counter() - started

        peaks = []
        for r in range(args.rounds):
            sampler = Sampler(pids)
            sampler.start()
            with ThreadPoolExecutor(args.pushes) as pool:
                answers = list(pool.map(push, range(r * args.pushes, (r + 1) * args.pushes)))
            time.sleep(0.5)
            sampler.stop.set()
            sampler.join()
            peaks.append(sampler.peak)
            statuses = sorted({status for status, _ in answers})
            print(
                f"round {r + 1}: statuses {statuses}, slowest answer {max(s for _, s in answers):.2f}s; "
                f"peak RSS {sampler.peak[0]:.0f} MB, PSS {sampler.peak[1]:.0f} MB",
                flush=True,
            )
        time.sleep(2)
        after = memory_mb(pids)
        print(f"after: RSS {after[0]:.0f} MB, PSS {after[1]:.0f} MB")
        print(
            f"growth at the peak over idle: RSS +{max(p[0] for p in peaks) - idle[0]:.0f} MB, "
            f"PSS +{max(p[1] for p in peaks) - idle[1]:.0f} MB "
            f"(decoded, {args.pushes} images would be {args.pushes * width * height * 3 / 2**20:.0f} MB)"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
