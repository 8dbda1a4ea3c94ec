"""Serve the whole studio on one machine: the ASGI web server and a real Celery worker process."""

import os
import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


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
        processes = [
            subprocess.Popen(
                [python, "-m", "celery", "-A", "studio", "worker", "-Q", queues, "--concurrency", "2",
                 "--prefetch-multiplier", "1", "--loglevel", "INFO"],
                env=os.environ.copy(),
            ),
            subprocess.Popen(
                [python, "-m", "uvicorn", "studio.asgi:application", "--host", host, "--port", str(port)],
                env=os.environ.copy(),
            ),
        ]
        self.stdout.write(f"Trace Studio on http://{host}:{port}/ (worker queues: {queues}); Ctrl-C stops both.")
        try:
            while all(p.poll() is None for p in processes):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            for p in processes:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in processes:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
