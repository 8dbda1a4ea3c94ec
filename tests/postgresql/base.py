"""The studio's PostgreSQL backend (studio.postgresql) with one change, for the test processes only (tests/settings.py): the flush that
empties the database after each transactional test (a live server's, a worker's, a browser's test) deletes the rows
instead of truncating the tables.

``TRUNCATE`` gives each of the studio's ~60 tables and their indexes new files and syncs them: 0.6–2.9 s of a
two-core machine per flush, most of the integration tier's time. ``DELETE`` of the few rows a test leaves takes
10–40 ms. The statements run in the flush's one transaction (``execute_sql_flush``), and Django declares PostgreSQL's
foreign keys ``DEFERRABLE INITIALLY DEFERRED``, so the order of the tables does not matter: the keys are checked at
the commit, when every table that refers to another is empty. The content types and permissions are kept (below). A flush that restarts the sequences (``reset_sequences=True``) keeps Django's
``TRUNCATE … RESTART IDENTITY``. Everything else — queries, locks, the pool and its check, the studio's own
triggers — is the production backend's, unchanged."""

from __future__ import annotations

import time
from typing import Any

import psycopg
from django.db import OperationalError
from django.db.backends.postgresql import operations

from studio.postgresql import base

# What the migrations and their post_migrate handlers made and no test changes: kept, so the post_migrate run that follows
# every flush finds each content type and permission in place instead of inserting all of them again.
KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})

# A flush PostgreSQL ended as one side of a deadlock runs again, up to this many times in all.
FLUSH_ATTEMPTS = 5


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(
        self, style: Any, tables: Any, *, reset_sequences: bool = False, allow_cascade: bool = False
    ) -> list[str]:
        if reset_sequences or not tables:
            return super().sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [
            f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
            for table in tables
            if table not in KEPT_TABLES
        ]

    def execute_sql_flush(self, sql_list: Any, *, attempts: int = FLUSH_ATTEMPTS) -> None:
        """Django's, run again when PostgreSQL ended it as one side of a deadlock. A request that reaches the live
        server after its test (a closing page's lease-release beacon, late on a loaded machine) may lock a row the
        flush deletes while waiting for one the flush has deleted: one of the two transactions is ended, and when it
        is the flush's, the rows stay for the next test. The flush's transaction was rolled back whole; it starts
        again once the request's is over."""
        for attempt in range(1, attempts + 1):
            try:
                super().execute_sql_flush(sql_list)
                return
            except OperationalError as exc:
                if attempt == attempts or not isinstance(exc.__cause__, psycopg.errors.DeadlockDetected):
                    raise
                time.sleep(0.1 * attempt)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
