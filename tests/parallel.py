"""Isolation for parallel test runs (``pytest -n N``, pytest-xdist): each test process gets its own data folder
(SQLite file, filesystem broker, media, job work files) and its own Redis database (broker, channel layer, cache).

Loaded with ``-p tests.parallel`` (pyproject's addopts) so that it runs before pytest-django imports the settings:
the settings read these variables once, at import. A run without xdist is left exactly as it is. pytest-django
itself gives each process its own test database (``test_<name>_gw0`` …). A parallel run also hands out its heaviest
files first (``HEAVIEST_FIRST``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

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


# --- the order files are handed out in ---------------------------------------------------------------------------

# Files whose tests keep one process busy a minute or more on 2 cores, heaviest first (measured with --durations).
# pytest-xdist hands out whole files (--dist loadfile) in the order of its queue, by default the files with the most
# tests first: a heavy file of one or two tests then started last and ran alone while the other process sat idle.
# These start first; the rest follow by their number of tests, as xdist would order them.
HEAVIEST_FIRST = (
    "tests/serving/test_deploy_docs.py",
    "tests/exports/test_training_steps.py",
    "tests/rounds/test_evaluation.py",
    "tests/serving/test_docs_commands.py",
    "tests/prescoring/test_prescore_worker.py",
    "tests/jobs/test_faults.py",
    "tests/insights/test_insights_embeddings.py",
    "tests/exports/test_export_shards.py",
    "tests/rounds/test_weekly_round.py",
    "tests/annotation/test_alternatives.py",
    "tests/jobs/test_sharded_jobs.py",
    "tests/webhooks/test_webhook_isolation.py",
    "tests/serving/test_static_production.py",
    "tests/annotation/test_alternatives_e2e.py",
    "tests/architecture/test_tiers.py",
    "tests/jobs/test_broker_restart.py",
    "tests/jobs/test_jobs.py",
    "tests/serving/test_outages.py",
    "tests/serving/test_fullstack.py",
)


def file_order(nodeids: list[str]) -> dict[str, tuple[int, int]]:
    """Each file's place in the queue: those of ``HEAVIEST_FIRST`` in its order, then the others by their number of
    tests, most first."""
    counts: dict[str, int] = {}
    for nodeid in nodeids:
        path = nodeid.split("::", 1)[0]
        counts[path] = counts.get(path, 0) + 1
    rank = {path: place for place, path in enumerate(HEAVIEST_FIRST)}
    return {path: (rank.get(path, len(rank)), -count) for path, count in counts.items()}


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False  # xdist keeps the collection's file order (file_order below)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not _worker:
        return
    order = file_order([item.nodeid for item in items])
    items.sort(key=lambda item: order[item.nodeid.split("::", 1)[0]])  # stable: a file's tests keep their order
