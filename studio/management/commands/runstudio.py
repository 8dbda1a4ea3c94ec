"""Serve the whole studio on one machine: the ASGI web server and a real Celery worker process.

A worker that dies (a crash, the out-of-memory killer) is started again with a growing pause (1, 2, 4 … 60 s;
back to 1 s once a worker has lived a minute) while the web server keeps serving; its job is taken over by the
new worker's watchdog (studio.jobs). Stopping runstudio (Ctrl-C or TERM) stops both.
"""

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand

from studio.webserver import uvicorn_command

HEALTHY_AFTER_S = 60
MAX_PAUSE_S = 60


def _stop_on_terminate(signum, frame):
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Run uvicorn (ASGI: HTTP and WebSockets) and a Celery worker together until interrupted."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")
        parser.add_argument("--queues", default="default,gpu", help="queues the embedded worker consumes")

    def handle(self, host, port, queues, **options):
        # A TERM (a process manager, `timeout`) stops both children as Ctrl-C does, instead of orphaning them.
        signal.signal(signal.SIGTERM, _stop_on_terminate)
        python = sys.executable
        worker_command = [
            python,
            "-m",
            "celery",
            "-A",
            "studio",
            "worker",
            "-Q",
            queues,
            "--concurrency",
            "2",
            "--prefetch-multiplier",
            "1",
            "--loglevel",
            "INFO",
        ]
        web = subprocess.Popen(uvicorn_command(host, port, log_level="info"), env=os.environ.copy())
        worker = subprocess.Popen(worker_command, env=os.environ.copy())
        started, pause, restart_at = time.monotonic(), 1.0, None
        self.stdout.write(f"Trace Studio on http://{host}:{port}/ (worker queues: {queues}); Ctrl-C stops both.")
        try:
            while web.poll() is None:
                time.sleep(0.5)
                if worker is not None and worker.poll() is not None:
                    lived = time.monotonic() - started
                    pause = 1.0 if lived >= HEALTHY_AFTER_S else min(pause * 2, MAX_PAUSE_S)
                    self.stderr.write(
                        f"the worker exited (code {worker.returncode}) after {lived:.0f} s; "
                        f"starting a new one in {pause:.0f} s"
                    )
                    worker, restart_at = None, time.monotonic() + pause
                if worker is None and restart_at is not None and time.monotonic() >= restart_at:
                    worker, started, restart_at = (
                        subprocess.Popen(worker_command, env=os.environ.copy()),
                        time.monotonic(),
                        None,
                    )
                    self.stdout.write(f"worker started again (pid {worker.pid})")
        except KeyboardInterrupt:
            pass
        finally:
            children = [p for p in (worker, web) if p is not None]
            for p in children:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in children:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
