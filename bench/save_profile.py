"""One draft save's CPU inside the web process: Django's WSGI handler (what studio.web_entry runs on a request
thread) called in-process with the request a browser's autosave sends, its CPU time per save and cProfile's split.

    .venv/bin/python bench/save_profile.py [--saves 2000] [--profile 500] [--top 40] [--database-url postgres://…/NAME]

bench/labelstudio.py measures the whole server (uvicorn's parsing, the event loop, the thread hand-over, the worker
and the supervisor); this measures only the handler's part, in one thread and with nothing else running in the
process, so a change to the save path can be compared in seconds rather than a server run. Users, a project and
its traces are made as bench/labelstudio.py makes them, in a fresh data folder (an empty PostgreSQL database with
``--database-url``, which it migrates; then PostgreSQL's own CPU per save is printed too, that of the backends
serving the bench database).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from http.cookies import SimpleCookie
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def environ_for(method: str, path: str, body: bytes, cookies: dict[str, str]) -> dict:
    """The WSGI environ a2wsgi builds for a browser's fetch() (studio.web_entry hands Django the same keys)."""
    return {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "50000",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_COOKIE": "; ".join(f"{k}={v}" for k, v in cookies.items()),
        "HTTP_X_CSRFTOKEN": cookies.get("csrftoken", ""),
        "HTTP_REFERER": "http://127.0.0.1:8000/",
        "HTTP_ACCEPT": "*/*",
        "HTTP_USER_AGENT": "bench",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


class Caller:
    def __init__(self, app):
        self.app = app
        self.cookies: dict[str, str] = {}

    def __call__(self, method: str, path: str, data=None) -> tuple[int, bytes]:
        body = json.dumps(data).encode() if data is not None else b""
        answer: dict = {}

        def start_response(status, headers, exc_info=None):
            answer["status"] = int(status.split(" ", 1)[0])
            for name, value in headers:
                if name.lower() == "set-cookie":
                    for key, morsel in SimpleCookie(value).items():
                        self.cookies[key] = morsel.value

        chunks = self.app(environ_for(method, path, body, self.cookies), start_response)
        try:
            content = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
        return answer["status"], content


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saves", type=int, default=2000, help="saves timed (CPU per save: median of batches of 100)")
    parser.add_argument("--profile", type=int, default=500, help="saves run under cProfile afterwards (0: none)")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--data", default="", help="a data folder already set up by an earlier run (kept)")
    parser.add_argument("--stats-out", default="", help="write the profile here too (pstats), to read its callers")
    args = parser.parse_args()

    from bench.labelstudio import Studio

    root = Path(args.data or tempfile.mkdtemp(prefix="bench-save-profile-"))
    studio = Studio(root, 1, args.database_url)
    marker = root / "project.json"
    if marker.exists():
        studio.project = json.loads(marker.read_text())["project"]
    else:
        studio.setup()
        marker.write_text(json.dumps({"project": studio.project}))
    os.environ.update(studio.env)
    for name in ("DATABASE_URL", "REDIS_URL"):
        if name not in studio.env:
            os.environ.pop(name, None)

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    from studio.asgi import django_wsgi_app

    client = Client()
    client.force_login(User.objects.get(username="bench0"))
    call = Caller(django_wsgi_app)
    status, _ = call("GET", "/login/")  # the login page sets the CSRF cookie, as a browser gets it
    assert "csrftoken" in call.cookies, status
    call.cookies["sessionid"] = client.cookies["sessionid"].value
    status, content = call("POST", f"/api/projects/{studio.project}/next-trace/", {})
    assert status == 200, content
    draft = json.loads(content)["annotation"]
    version = draft["version"]

    def save(k: int) -> None:
        nonlocal version
        status, content = call("PUT", f"/api/annotations/{draft['id']}/draft/", {"version": version, "note": f"s{k}"})
        assert status == 200, content
        version = json.loads(content)["version"]

    for k in range(100):  # warm: compiled reads, imports, caches
        save(k)
    from bench.labelstudio import DatabaseBackendCPU, database_name

    database = DatabaseBackendCPU(database_name(args.database_url)).start() if args.database_url else None
    batches, database_batches = [], []
    for b in range(max(1, args.saves // 100)):
        started = time.process_time()
        database_started = database.seconds() if database else 0.0
        for k in range(100):
            save(1000 + b * 100 + k)
        batches.append((time.process_time() - started) * 1000 / 100)
        if database:
            database_batches.append((database.seconds() - database_started) * 1000 / 100)
    print(
        f"handler CPU per save: median {statistics.median(batches):.3f} ms, min {min(batches):.3f} ms over "
        f"{len(batches)} batches of 100 ({os.getloadavg()[0]:.2f} load)",
        flush=True,
    )
    if database:
        # A backend's CPU is counted in clock ticks (10 ms): a batch's figure is coarse, the whole run's is not.
        total_ms = database.stop()["cpu_s"] * 1000 / (len(batches) * 100)
        print(
            f"PostgreSQL CPU per save (the bench database's backends): {total_ms:.3f} ms over the run, median of"
            f" batches {statistics.median(database_batches):.3f} ms",
            flush=True,
        )
    if args.profile:
        # The process's CPU clock, not the wall's: on a shared machine the split is that of this process's own work
        # (a database server's time and other processes' turns on the core are not in it).
        profile = cProfile.Profile(time.process_time)
        profile.enable()
        for k in range(args.profile):
            save(100_000 + k)
        profile.disable()
        if args.stats_out:
            profile.dump_stats(args.stats_out)
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).sort_stats("cumulative")
        # Calls are counted, not timed: a figure that does not move with the machine's load.
        print(f"Python function calls per save: {stats.total_calls / args.profile:.0f}", flush=True)
        stats.print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
