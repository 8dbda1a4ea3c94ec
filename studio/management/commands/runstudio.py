"""Serve the whole studio on one machine: the ASGI web server, a Celery worker for the jobs and one for webhooks.

This command works out the children's commands (it needs the settings) and then replaces itself, same pid, with
their supervisor, ``studio/supervisor.py``: a plain script of the standard library that restarts whichever child
dies with a growing pause and says so in the log, and stops them all on Ctrl-C or TERM. A Django process watching
for the life of the stack held about 75 MB; the script holds a few. A dead worker's job is taken over by the new
worker's watchdog (studio.jobs).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from studio.celery import WORKER_STEPS_OFF
from studio.webserver import uvicorn_command

SUPERVISOR = Path(__file__).resolve().parents[2] / "supervisor.py"


def worker_command(queues: str, node: str, *, pool: str = "prefork", concurrency: int = 2) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "studio",
        "worker",
        "-Q",
        queues,
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "--prefetch-multiplier",
        "1",
        "-n",
        f"{node}@%h",
        "--loglevel",
        "INFO",
        *WORKER_STEPS_OFF,
    ]


class Command(BaseCommand):
    help = "Run uvicorn (ASGI: HTTP and WebSockets) and the Celery workers together, restarting any that dies."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--queues", default="default,gpu", help="queues the embedded jobs worker consumes")

    def handle(self, host, port, queues, **options):
        children = [
            ("web server", uvicorn_command(host, port, log_level="info")),
            ("worker", worker_command(queues, "jobs")),
            # Deliveries wait on receivers the studio does not run: a worker of their own (docs/deploy.md, "Queues").
            ("webhooks worker", worker_command("webhooks", "webhooks", pool="threads", concurrency=4)),
        ]
        banner = (
            f"Trace Studio on http://{host}:{port}/ (worker queues: {queues}; webhooks worker: webhooks); "
            "Ctrl-C stops all."
        )
        sys.stdout.flush()
        sys.stderr.flush()
        plan = json.dumps({"children": children, "banner": banner})
        # -P: the script's folder (studio/, whose module names could shadow the standard library's) stays off the path.
        os.execv(sys.executable, [sys.executable, "-P", str(SUPERVISOR), plan])
