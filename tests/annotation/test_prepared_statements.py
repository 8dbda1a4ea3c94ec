"""On PostgreSQL the draft save's fixed-shape statements (the session read with its user and their groups, the locked
read, the UPDATE, the audit INSERT: studio.db.statement_cursor) are prepared on their connection after
``prepare_threshold`` runs there, are still seen by Django's query log, and keep working when the prepared statements
are gone: a ``DEALLOCATE ALL``, a rolled-back save, a schema change made from another connection, a backend PostgreSQL
terminated."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation
from tests.database_template import server_connect
from tests.fixtures_annotation import make_traces

# A fragment of each statement a draft save runs, as PostgreSQL keeps it prepared (values as $1, $2, …).
SAVE_STATEMENTS = {
    "session": 'FROM "studio_studiosession" LEFT OUTER JOIN "auth_user"',
    "groups": 'FROM "auth_group" g JOIN',  # in the session's read
    "locked read": "FOR UPDATE",
    "update": 'UPDATE "annotation_annotation" SET',
    "audit": 'INSERT INTO "annotation_auditevent"',
}


@pytest.fixture
def threshold():
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's (this run uses SQLite)")
    value = connection.settings_dict["OPTIONS"].get("prepare_threshold")
    assert value, "the settings prepare the compiled statements on PostgreSQL"
    return value


def _saver(project, annotator, tmp_path):
    make_traces(project, tmp_path, count=1, steps=2)
    client = Client()
    client.force_login(annotator)
    claimed = client.post(f"/api/projects/{project.pk}/next-trace/")
    assert claimed.status_code == 200, claimed.content
    annotation_id = claimed.json()["annotation"]["id"]

    def save(note: str, version: int | None = None):
        if version is None:
            version = Annotation.objects.get(pk=annotation_id).version
        return client.put(
            f"/api/annotations/{annotation_id}/draft/",
            data={"version": version, "note": note},
            content_type="application/json",
        )

    return annotation_id, save


def _prepared() -> dict[str, bool]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        statements = [statement for (statement,) in cursor.fetchall()]
    return {name: any(fragment in s for s in statements) for name, fragment in SAVE_STATEMENTS.items()}


def _saves_prepare_again(save, threshold: int, label: str) -> None:
    for k in range(threshold + 1):
        response = save(f"{label} {k}")
        assert response.status_code == 200, response.content
    assert _prepared() == dict.fromkeys(SAVE_STATEMENTS, True)


def test_the_saves_statements_are_prepared_and_still_logged(threshold, project, annotator, tmp_path):
    annotation_id, save = _saver(project, annotator, tmp_path)
    assert save("first").status_code == 200
    assert _prepared() == dict.fromkeys(SAVE_STATEMENTS, False)  # one run: nothing prepared yet
    for k in range(threshold):
        assert save(f"again {k}").status_code == 200
    assert _prepared() == dict.fromkeys(SAVE_STATEMENTS, True)
    with CaptureQueriesContext(connection) as logged:
        response = save("logged")
    assert response.status_code == 200, response.content
    sql = [q["sql"] for q in logged.captured_queries]
    # The prepared statements pass through Django's cursor wrapper: logged, with their values.
    assert any(s.startswith('UPDATE "annotation_annotation"') and "'logged'" in s for s in sql), sql
    assert any("FOR UPDATE" in s and f'"annotation_annotation"."id" = {annotation_id}' in s for s in sql), sql
    assert any(s.startswith('INSERT INTO "annotation_auditevent"') for s in sql), sql
    assert Annotation.objects.get(pk=annotation_id).note == "logged"


def test_saves_go_on_after_deallocate_all_and_a_rolled_back_save(threshold, project, annotator, tmp_path):
    annotation_id, save = _saver(project, annotator, tmp_path)
    _saves_prepare_again(save, threshold, "before")
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    assert _prepared() == dict.fromkeys(SAVE_STATEMENTS, False)
    _saves_prepare_again(save, threshold, "after deallocate")
    stale = save("stale", version=1)  # a version conflict: the save's transaction is rolled back
    assert stale.status_code == 409, stale.content
    _saves_prepare_again(save, threshold, "after rollback")
    assert Annotation.objects.get(pk=annotation_id).note == f"after rollback {threshold}"


def _admin():
    return server_connect(connection.settings_dict, autocommit=True)


@pytest.mark.django_db(transaction=True)
def test_saves_go_on_after_a_schema_change_and_a_terminated_backend(threshold, project, annotator, tmp_path):
    annotation_id, save = _saver(project, annotator, tmp_path)
    _saves_prepare_again(save, threshold, "before")
    with _admin() as admin:  # a migration run by another process while the statements are prepared here
        admin.execute('ALTER TABLE "annotation_auditevent" ADD COLUMN "added_by_a_migration" integer')
        admin.execute('ALTER TABLE "annotation_annotation" ADD COLUMN "added_by_a_migration" integer')
    try:
        response = save("after the schema change")
        assert response.status_code == 200, response.content
    finally:
        with _admin() as admin:
            admin.execute('ALTER TABLE "annotation_auditevent" DROP COLUMN "added_by_a_migration"')
            admin.execute('ALTER TABLE "annotation_annotation" DROP COLUMN "added_by_a_migration"')
    assert save("after the column went").status_code == 200
    version = Annotation.objects.get(pk=annotation_id).version
    pid = connection.connection.info.backend_pid
    with _admin() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    dropped = save("on the dropped connection", version)
    assert dropped.status_code == 503 and dropped.json()["retryable"] is True, dropped.content
    connection.close()  # what the next request's health check does in the server
    _saves_prepare_again(save, threshold, "on a new connection")
    assert connection.connection.info.backend_pid != pid
    assert Annotation.objects.get(pk=annotation_id).note == f"on a new connection {threshold}"
