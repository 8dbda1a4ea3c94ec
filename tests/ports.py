"""Ports for the servers tests start (uvicorn, Redis, moto, Caddy)."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

_handed_out: set[int] = set()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port nothing listens on now, on every address, taken from below the kernel's ephemeral range.

    A port that binding port 0 gives comes from that range, and until the server binds it (seconds later, after
    the services before it start) any outgoing connection may take it as its local end: Caddy once failed so
    ("bind: address already in use"). Each test process draws from its own stretch (pytest-xdist's worker
    number), and never hands out one port twice."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    low = 10000 + 2000 * (index % 8)
    high = min(low + 2000, _ephemeral_low())
    rng = random.SystemRandom()
    for _ in range(1000):
        port = rng.randrange(low, high)
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("0.0.0.0", port))  # Caddy binds every address, the others loopback
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port between {low} and {high}")
