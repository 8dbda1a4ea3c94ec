"""Isolation for parallel test runs (``pytest -n N``, pytest-xdist): each test process gets its own data folder
(SQLite file, filesystem broker, media, job work files) and its own Redis database (broker, channel layer, cache).

Loaded with ``-p tests.parallel`` (pyproject's addopts) so that it runs before pytest-django imports the settings:
the settings read these variables once, at import. A run without xdist is left exactly as it is. pytest-django
itself gives each process its own test database (``test_<name>_gw0`` …)."""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAST_FREE_REDIS_DATABASE = 13


def isolate(worker: str, environ: dict) -> None:
    """Point ``environ`` at the resources of the xdist worker ``worker`` (``gw0``, ``gw1`` …)."""
    index = int(worker.removeprefix("gw"))
    data_dir = Path(environ.get("STUDIO_DATA_DIR") or REPO / "var")
    environ["STUDIO_DATA_DIR"] = str(data_dir / f"xdist-{worker}")
    redis_url = environ.get("REDIS_URL")
    if redis_url:
        match = re.fullmatch(r"(redis://[^/]+)(?:/(\d+))?", redis_url)
        if match is None:
            raise RuntimeError(f"REDIS_URL {redis_url!r}: parallel tests need the form redis://host:port/db")
        database = int(match.group(2) or 0) + index
        if database > LAST_FREE_REDIS_DATABASE:
            raise RuntimeError(
                f"test process {worker} would use Redis database {database}: a Redis server has 16 and the tests "
                f"keep 14 and 15 (tests/serving/test_web_entry.py); run fewer processes or start from a lower REDIS_URL db"
            )
        environ["REDIS_URL"] = f"{match.group(1)}/{database}"


_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    isolate(_worker, os.environ)
