"""tests/postgresql: the flush between transactional tests empties the studio's tables with DELETE, keeps the content
types and permissions, and still leaves nothing of one test for the next."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection

from tests.database_template import server_connect
from tests.factories import make_trace
from tests.postgresql.base import FLUSH_ATTEMPTS, KEPT_TABLES

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the DELETE flush is PostgreSQL's backend")


def rows_by_table() -> dict[str, int]:
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with connection.cursor() as cursor:
        counts = {}
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def test_the_flush_empties_every_table_linked_by_keys_and_keeps_the_content_types(transactional_db, project):
    make_trace(project, external_id="left-by-a-test")
    before = rows_by_table()
    filled = {table for table, count in before.items() if count and table not in KEPT_TABLES}
    assert {"traces_trace", "auth_user", "auth_group"} <= filled and len(filled) >= 6, filled
    kinds, permissions = ContentType.objects.count(), Permission.objects.count()

    call_command("flush", verbosity=0, interactive=False)

    left = {table: count for table, count in rows_by_table().items() if count and table not in KEPT_TABLES}
    assert left == {}
    assert (ContentType.objects.count(), Permission.objects.count()) == (kinds, permissions) != (0, 0)


def test_a_flush_that_restarts_the_sequences_is_djangos_truncate():
    tables = ["traces_trace", "auth_user"]
    assert connection.ops.sql_flush(no_style(), tables) == ['DELETE FROM "traces_trace";', 'DELETE FROM "auth_user";']
    assert connection.ops.sql_flush(no_style(), tables, reset_sequences=True) == [
        'TRUNCATE "traces_trace", "auth_user" RESTART IDENTITY;'
    ]


def _deadlocked_flush(attempts: int) -> BaseException | None:
    """A flush of two tables meets a transaction of another connection that holds a row of the second and then
    updates a row of the first, which the flush has deleted: PostgreSQL's deadlock. The flush starts waiting first,
    so its deadlock check runs first and ends it; the other transaction then commits. The flush's error, or None."""
    import threading

    import psycopg

    from studio.models import BackupOutcome, LoginFailure

    LoginFailure.objects.create(username="left", ip="127.0.0.1")
    BackupOutcome.objects.create(pk=BackupOutcome.ROW)
    q = connection.ops.quote_name
    first, second = q(LoginFailure._meta.db_table), q(BackupOutcome._meta.db_table)
    other = server_connect(connection.settings_dict)
    watcher = server_connect(connection.settings_dict, autocommit=True)
    other.execute(f"UPDATE {second} SET last_failure_message = 'a request' WHERE id = {BackupOutcome.ROW}")
    outcome: list[BaseException | None] = []

    def flush() -> None:
        try:
            connection.ops.execute_sql_flush([f"DELETE FROM {first};", f"DELETE FROM {second};"], attempts=attempts)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=flush)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while (
            time.monotonic() < deadline
        ):  # until the flush has deleted the first table's row and waits for the second's
            waiting = (
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if watcher.execute(waiting).fetchone()[0]:
                break
            time.sleep(0.02)
        try:
            other.execute(f"UPDATE {first} SET ip = '127.0.0.2'")
        except psycopg.errors.DeadlockDetected:
            other.rollback()
        else:
            other.commit()
    finally:
        thread.join(30)
        other.close()
        watcher.close()
    return outcome[0]


def test_a_flush_ended_by_a_deadlock_runs_again(transactional_db):
    from studio.models import BackupOutcome, LoginFailure

    assert _deadlocked_flush(attempts=FLUSH_ATTEMPTS) is None
    assert (LoginFailure.objects.count(), BackupOutcome.objects.count()) == (0, 0)


def test_the_control_a_flush_not_run_again_is_ended_by_the_deadlock(transactional_db):
    from django.db import OperationalError

    from studio.models import LoginFailure

    error = _deadlocked_flush(attempts=1)
    assert isinstance(error, OperationalError) and "deadlock" in str(error), error
    assert LoginFailure.objects.count() == 1  # the rolled-back flush left the row, as the next test would find it
