"""tests/postgresql: the flush between transactional tests empties the studio's tables with DELETE, keeps the content
types and permissions, and still leaves nothing of one test for the next."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection

from tests.factories import make_trace
from tests.postgresql.base import KEPT_TABLES

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
