"""The embedded stack's supervisor (``manage.py runstudio``): it starts each child, restarts whichever dies with a
growing pause (1, 2, 4 … 60 s; back to 1 s once that child has lived a minute) while the others keep running, says
in the log which child exited, how, and when it comes back, and stops them all on Ctrl-C or TERM.

It runs as a plain script (``python studio/supervisor.py CHILDREN_JSON``), importing the standard library only: the
process that watches the others for the life of the stack holds a few megabytes, not a Django process's ~75 MB.
``runstudio`` works out the children's commands with the settings and then replaces itself with this script
(same pid), so whoever started runstudio keeps signalling the supervisor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

HEALTHY_AFTER_S = 60
MAX_PAUSE_S = 60


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


def say(text: str, stream: TextIO = sys.stdout) -> None:
    stream.write(text + "\n")
    stream.flush()


def supervise_once(child: Child) -> None:
    if child.exited():
        assert child.process is not None
        lived = time.monotonic() - child.started
        child.pause = 1.0 if lived >= HEALTHY_AFTER_S else min(child.pause * 2, MAX_PAUSE_S)
        say(
            f"the {child.name} (pid {child.process.pid}) exited (code {child.process.returncode}) after "
            f"{lived:.0f} s; starting a new one in {child.pause:.0f} s",
            sys.stderr,
        )
        child.process, child.restart_at = None, time.monotonic() + child.pause
    if child.process is None and child.restart_at is not None and time.monotonic() >= child.restart_at:
        child.start()
        assert child.process is not None
        say(f"{child.name} started again (pid {child.process.pid})")


def _stop_on_terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(children: list[Child], banner: str) -> None:
    # A TERM (a process manager, `timeout`) stops every child as Ctrl-C does, instead of orphaning them.
    signal.signal(signal.SIGTERM, _stop_on_terminate)
    try:
        for child in children:
            child.start()
        say(banner + "\n" + "\n".join(f"{c.name} started (pid {c.process.pid})" for c in children if c.process))
        while True:
            time.sleep(0.5)
            for child in children:
                supervise_once(child)
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


def main(argv: list[str]) -> None:
    plan = json.loads(argv[1])
    run([Child(name, command) for name, command in plan["children"]], plan["banner"])


if __name__ == "__main__":
    main(sys.argv)
