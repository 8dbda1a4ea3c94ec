"""Database helpers: retrying a write transaction that SQLite refused because another writer held the lock."""

from __future__ import annotations

import functools
import random
import time

from django.db import OperationalError, connection, transaction

LOCK_RETRIES = 8


def _is_lock_error(exc: OperationalError) -> bool:
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text


def atomic_with_retry(fn):
    """Run ``fn`` in one transaction; on SQLite's lock error roll back, wait and run it again.

    The busy timeout already waits for the lock; this is the last line so that `database is
    locked` never reaches a user even when a long writer outlasts the timeout.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if connection.in_atomic_block:
            return fn(*args, **kwargs)  # the outer transaction owns the retry
        for attempt in range(LOCK_RETRIES):
            try:
                with transaction.atomic():
                    return fn(*args, **kwargs)
            except OperationalError as exc:
                if connection.vendor != "sqlite" or not _is_lock_error(exc) or attempt == LOCK_RETRIES - 1:
                    raise
                time.sleep(min(2.0, 0.05 * 2**attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    return wrapper
