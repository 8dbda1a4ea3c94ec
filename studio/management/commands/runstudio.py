"""Serve the whole studio on one machine: the ASGI web server, a Celery worker for the jobs and one for webhooks.

runstudio is their supervisor: whichever child dies (a crash, the out-of-memory killer, a kill by hand) is started
again with a growing pause (1, 2, 4 … 60 s; back to 1 s once that child has lived a minute) while the others keep
running, and the log says which child exited, how, and when it comes back. A dead worker's job is taken over by the
new worker's watchdog (studio.jobs). Stopping runstudio (Ctrl-C or TERM) stops them all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from django.core.management.base import BaseCommand

from studio.celery import WORKER_STEPS_OFF
from studio.webserver import uvicorn_command

HEALTHY_AFTER_S = 60
MAX_PAUSE_S = 60


def _stop_on_terminate(signum, frame):
    raise KeyboardInterrupt


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


@dataclass
class Child:
    """One supervised process: what it is called in the log, how it is started, and its restart pause."""

    name: str
    command: list[str]
    process: subprocess.Popen | None = None
    started: float = 0.0
    pause: float = 1.0
    restart_at: float | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, env=os.environ.copy())
        self.started, self.restart_at = time.monotonic(), None

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None


class Command(BaseCommand):
    help = "Run uvicorn (ASGI: HTTP and WebSockets) and the Celery workers together, restarting any that dies."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--queues", default="default,gpu", help="queues the embedded jobs worker consumes")

    def handle(self, host, port, queues, **options):
        # A TERM (a process manager, `timeout`) stops every child as Ctrl-C does, instead of orphaning them.
        signal.signal(signal.SIGTERM, _stop_on_terminate)
        children = [
            Child("web server", uvicorn_command(host, port, log_level="info")),
            Child("worker", worker_command(queues, "jobs")),
            # Deliveries wait on receivers the studio does not run: a worker of their own (docs/deploy.md, "Queues").
            Child("webhooks worker", worker_command("webhooks", "webhooks", pool="threads", concurrency=4)),
        ]
        for child in children:
            child.start()
        self.stdout.write(
            f"Trace Studio on http://{host}:{port}/ (worker queues: {queues}; webhooks worker: webhooks); "
            "Ctrl-C stops all.\n" + "".join(f"{c.name} started (pid {c.process.pid})\n" for c in children if c.process)
        )
        self.stdout.flush()
        try:
            while True:
                time.sleep(0.5)
                for child in children:
                    self._supervise(child)
        except KeyboardInterrupt:
            pass
        finally:
            running = [c.process for c in children if c.process is not None]
            for process in running:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in running:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()

    def _supervise(self, child: Child) -> None:
        if child.exited():
            assert child.process is not None
            lived = time.monotonic() - child.started
            child.pause = 1.0 if lived >= HEALTHY_AFTER_S else min(child.pause * 2, MAX_PAUSE_S)
            self.stderr.write(
                f"the {child.name} (pid {child.process.pid}) exited (code {child.process.returncode}) after "
                f"{lived:.0f} s; starting a new one in {child.pause:.0f} s"
            )
            self.stderr.flush()
            child.process, child.restart_at = None, time.monotonic() + child.pause
        if child.process is None and child.restart_at is not None and time.monotonic() >= child.restart_at:
            child.start()
            assert child.process is not None
            self.stdout.write(f"{child.name} started again (pid {child.process.pid})")
            self.stdout.flush()
