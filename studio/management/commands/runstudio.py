"""Serve the whole studio on one machine: the ASGI web server and one Celery worker for the jobs and the webhooks.

This command works out the children's commands (it needs the settings) and then replaces itself, same pid, with
their supervisor, ``studio/supervisor.py``: a plain script of the standard library that restarts whichever child
dies with a growing pause and says so in the log, and stops them all on Ctrl-C or TERM. A Django process watching
for the life of the stack held about 75 MB; the script holds a few. A dead worker's job is taken over by the new
worker's watchdog (studio.jobs).

The embedded worker is one process with a pool of threads (no forked children: each Django process is ~90 MB of
its own) consuming the job queues and ``webhooks`` together. Deliveries wait on receivers the studio does not run,
so they may hold at most ``EMBEDDED_DELIVERY_SLOTS`` of its threads (``webhooks.services.PROCESS_SLOTS``); the other
``EMBEDDED_JOB_THREADS`` are always free for the jobs. The full stack (compose) keeps a worker per queue.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.management.base import BaseCommand

from studio.celery import WORKER_STEPS_OFF
from studio.metrics import metrics_files_clear
from studio.webserver import uvicorn_command

if TYPE_CHECKING:
    from django.core.management.base import CommandParser

SUPERVISOR = Path(__file__).resolve().parents[2] / "supervisor.py"
# Threads of the embedded worker that deliveries can never take: two jobs run at once, as two processes did.
EMBEDDED_JOB_THREADS = 2
# Deliveries in flight in the embedded worker unless STUDIO_WEBHOOKS_DELIVERIES_PER_PROCESS says otherwise.
EMBEDDED_DELIVERY_SLOTS = 4


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


def embedded_delivery_slots() -> int:
    return settings.WEBHOOKS_DELIVERIES_PER_PROCESS or EMBEDDED_DELIVERY_SLOTS


def embedded_worker_environment() -> dict[str, str]:
    """What the embedded worker's environment carries: its cap on deliveries in flight, and no system checks at its
    start. Celery runs Django's checks in every worker it starts, and the URL check imports the whole URL conf (every
    view, API and serializer module, drf-spectacular's schema views: ~23 MB the worker never uses); runstudio is a
    management command, so the same checks ran before it started the worker."""
    return {"STUDIO_WEBHOOKS_DELIVERIES_PER_PROCESS": str(embedded_delivery_slots()), "CELERY_SKIP_CHECKS": "1"}


def embedded_worker_command(job_queues: str) -> list[str]:
    """One worker for the job queues and ``webhooks``: threads, as many as the jobs' and the deliveries' slots, so
    with every delivery slot taken the jobs still have theirs (run it with ``embedded_worker_environment()``)."""
    threads = EMBEDDED_JOB_THREADS + embedded_delivery_slots()
    return worker_command(f"{job_queues},webhooks", "jobs", pool="threads", concurrency=threads)


def embedded_children(host: str, port: str, job_queues: str) -> list[tuple[str, list[str]]]:
    """The supervised processes of the embedded stack: the web server and the worker."""
    return [
        ("web server", uvicorn_command(host, port, log_level="info")),
        ("worker", embedded_worker_command(job_queues)),
    ]


class Command(BaseCommand):
    help = "Run uvicorn (ASGI: HTTP and WebSockets) and a Celery worker together, restarting either if it dies."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--queues", default="default,gpu", help="job queues the worker consumes (and webhooks)")

    def handle(self, host: str, port: str, queues: str, **options: Any) -> None:
        children = embedded_children(host, port, queues)
        metrics_files_clear()  # the counters of an earlier run's processes, which are gone
        os.environ.update(embedded_worker_environment())  # the supervisor passes its environment on
        banner = (
            f"Trace Studio on http://{host}:{port}/ (worker queues: {queues},webhooks, at most "
            f"{embedded_delivery_slots()} deliveries at once); Ctrl-C stops all."
        )
        sys.stdout.flush()
        sys.stderr.flush()
        plan = json.dumps({"children": children, "banner": banner})
        # -P: the script's folder (studio/, whose module names could shadow the standard library's) stays off the path.
        os.execv(sys.executable, [sys.executable, "-P", str(SUPERVISOR), plan])
