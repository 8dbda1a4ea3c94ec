"""A child process a test starts and waits for: it is ready when a line of its output says so, and what it printed is
kept (``log``) for the failure message of a start that never became ready."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path


class ReadyLineProcess:
    """Started by ``launch()``, which returns once a line of the child's output contains ``ready_text``, or stops the
    child and raises after ``timeout`` seconds with its last lines. ``stop_wait_s``: how long ``stop()`` lets it exit
    after SIGTERM before SIGKILL."""

    stop_wait_s: float = 10

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.log: list[str] = []

    def launch(
        self, argv: list[str], *, ready_text: str, what: str, timeout: float, cwd: Path, env: dict | None = None
    ) -> None:
        ready = threading.Event()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.proc = proc

        def pump():
            for line in proc.stdout:
                self.log.append(line)
                if ready_text in line:
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout):
            self.stop()
            raise RuntimeError(f"{what} did not start:\n" + "".join(self.log[-40:]))

    def kill(self) -> None:
        """SIGKILL, like a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(self.stop_wait_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
