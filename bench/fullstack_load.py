"""The load benchmark through the production stack's proxy: the stack of the full-stack
tests (tests/stack.py: Caddy with TLS in front of uvicorn in production mode, Celery over Redis, S3 on a loopback
moto server, PostgreSQL; static files collected as the Dockerfile does), seeded with annotators and traces, and
``bench/load.py --url`` run against it as against any deployment: 50 autosaving annotators, first alone, then beside
32 slow clients.

    .venv/bin/python bench/fullstack_load.py --minutes 2 --slow-clients 32 --web-workers 4 [--out report.json]

Needs caddy, redis-server and a PostgreSQL server (DATABASE_URL, or 127.0.0.1:5432) as the full-stack tests do; the
stack's database, Redis and S3 are its own and are removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

import django  # noqa: E402

django.setup()

from tests.conftest import dockerfile_collectstatic_env  # noqa: E402
from tests.stack import Stack, postgres_server_url  # noqa: E402

SEED = r"""
import json, tempfile
from pathlib import Path
from studio.demo import user_create_with_role
from studio.permissions import Role
from tests.factories import native_trace_folder
from traces import services
from traces.models import Project
users = [user_create_with_role(username=f"load{i}", password=PASSWORD, role=Role.ANNOTATOR) for i in range(USERS)]
project = Project.objects.get(pk=PROJECT)
for user in users:
    services.membership_add(project=project, user=user)
root = Path(tempfile.mkdtemp(prefix="fullstack-load-traces-"))
for t in range(TRACES):
    native_trace_folder(root / f"t{t}", external_id=f"load-{t}", steps=4, size=(400, 300))
job = services.import_job_create(project=project, user=None, upload_name=str(root), original_name="load",
                                 fmt="native", server_path=True, enqueue=False)
job = services.import_job_run(job_id=job.pk)
assert job.status == "succeeded", job.message
print(json.dumps({"traces": job.traces_imported}))
"""


def collect_static(root: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", **dockerfile_collectstatic_env(), "STUDIO_STATIC_ROOT": str(root)}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=REPO, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=2)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--slow-clients", type=int, default=32)
    parser.add_argument("--web-workers", type=int, default=4, help="uvicorn processes (compose's default is 4)")
    parser.add_argument("--traces", type=int, default=600)
    parser.add_argument("--out", default="")
    args = parser.parse_args()

    # A TERM (timeout, Ctrl-C in a pipeline) still stops every service the stack started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    server = postgres_server_url()
    if server is None:
        sys.exit("needs a PostgreSQL server (DATABASE_URL or 127.0.0.1:5432)")
    workdir = Path(tempfile.mkdtemp(prefix="fullstack-load-"))
    static_root = workdir / "static"
    collect_static(static_root)
    stack = Stack(workdir, static_root, server, web_workers=args.web_workers)
    # The tests' short thread pool and S3 timeouts are for their outage cases; the benchmark runs compose's defaults.
    for name in ("STUDIO_WEB_THREADS", "STUDIO_S3_READ_TIMEOUT_S", "STUDIO_S3_MAX_ATTEMPTS"):
        stack.env.pop(name, None)
    password = secrets.token_urlsafe(12)
    try:
        stack.start()
        seed = (
            SEED.replace("PASSWORD", repr(password))
            .replace("USERS", str(args.annotators))
            .replace("PROJECT", str(stack.project_id))
            .replace("TRACES", str(args.traces))
        )
        seeding = stack.manage("shell", "-c", seed)
        out, _ = seeding.communicate(timeout=1800)
        if seeding.returncode != 0:
            sys.exit(f"seeding the stack failed:\n{out[-3000:]}")
        print("seeded:", out.strip().splitlines()[-1], file=sys.stderr)
        command = [
            sys.executable,
            str(REPO / "bench" / "load.py"),
            "--url",
            stack.base,
            "--insecure",
            "--project",
            str(stack.project_id),
            "--username-pattern",
            "load{i}",
            "--password",
            password,
            "--annotators",
            str(args.annotators),
            "--slow-clients",
            str(args.slow_clients),
            "--minutes",
            str(args.minutes),
        ]
        if args.out:
            command += ["--out", args.out]
        subprocess.run(command, check=True)
        for service in stack.services:
            print(f"{service.name}: {'alive' if service.alive() else 'EXITED'}", file=sys.stderr)
        print(json.dumps({"web_workers": args.web_workers, "log_dir": str(workdir)}), file=sys.stderr)
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
