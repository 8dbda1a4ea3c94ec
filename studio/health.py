"""Whether this process can serve: ``/healthz`` (it answers at all) and ``/readyz`` (the database, the broker and the
storage it needs answer too). The compose healthchecks and Caddy's upstream checks ask them; each check is bounded
so that a hung dependency makes the answer a 503 naming it, never a hung check."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from django.conf import settings

# A dependency that takes longer than this to answer is reported as not ready.
CHECK_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    ms: float


def _database() -> str:
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return connection.vendor
    finally:
        connection.close()  # the check's own thread: its connection goes back now, not at a request's end


def _broker() -> str:
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        # The embedded broker is a folder: ready when this process can write messages into it.
        import os
        from pathlib import Path

        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(f"the broker's folder {folder} is not writable")
        return "filesystem"
    from studio.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_S)
        conn.default_channel.client.ping()  # a connection kombu made is not yet an answer
    return "redis"


def _storage() -> str:
    from django.core.files.storage import default_storage

    if settings.STUDIO_STORAGE == "s3":
        s3: Any = default_storage
        s3.bucket.meta.client.head_bucket(Bucket=s3.bucket_name)
        return "s3"
    location = settings.MEDIA_ROOT
    location.mkdir(parents=True, exist_ok=True)
    probe = location / ".ready-probe"
    probe.write_bytes(b"")
    probe.unlink()
    return "local"


CHECKS: dict[str, Callable[[], str]] = {"database": _database, "broker": _broker, "storage": _storage}


# The checks run on threads of their own, at once, so one that hangs (a Redis that accepts and never answers) is
# reported after CHECK_TIMEOUT_S instead of holding the request; a hung one keeps its thread until it returns.
_POOL = ThreadPoolExecutor(max_workers=2 * len(CHECKS), thread_name_prefix="readiness")


def _timed(check: Callable[[], str]) -> tuple[str, float]:
    started = time.perf_counter()
    detail = check()
    return detail, round((time.perf_counter() - started) * 1000, 1)


def readiness() -> list[Check]:
    """Each dependency's check, in a fixed order."""
    from studio.errors import describe_error

    started = time.perf_counter()
    futures = {name: _POOL.submit(_timed, check) for name, check in CHECKS.items()}
    checks = []
    for name, future in futures.items():
        left = max(0.0, CHECK_TIMEOUT_S - (time.perf_counter() - started))
        try:
            detail, ms = future.result(timeout=left)
            checks.append(Check(name, True, detail, ms))
        except FutureTimeout:
            checks.append(Check(name, False, f"no answer within {CHECK_TIMEOUT_S:g} s", CHECK_TIMEOUT_S * 1000))
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; the answer names it
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            checks.append(Check(name, False, describe_error(exc), elapsed))
    return checks


def readiness_body(checks: list[Check]) -> dict:
    """The JSON ``/readyz`` answers: ``ready``, each check (``ok``, what answered or why not, its time), and a
    ``detail`` naming what is not reachable."""
    failing = [c for c in checks if not c.ok]
    body: dict = {
        "ready": not failing,
        "checks": {c.name: {"ok": c.ok, "detail": c.detail, "ms": c.ms} for c in checks},
    }
    if failing:
        body["detail"] = "Not ready: " + "; ".join(f"{c.name} unreachable ({c.detail})" for c in failing) + "."
    return body
