"""The draft save's database work: a signed-in annotator's autosave costs a fixed, small number of queries, and the
one read that checks access and takes the row lock still refuses what it must."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, AuditEvent
from tests.fixtures_annotation import make_traces


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _claim(client, project) -> dict:
    response = client.post(f"/api/projects/{project.pk}/next-trace/")
    assert response.status_code == 200, response.content
    return response.json()["annotation"]


def _save(client, annotation_id: int, version: int, note: str):
    return client.put(
        f"/api/annotations/{annotation_id}/draft/",
        data=json.dumps({"version": version, "note": note, "verdict": "error", "tau": 2}),
        content_type="application/json",
    )


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")


@pytest.mark.django_db(transaction=True)
def test_draft_save_is_four_queries_with_one_read_for_access_and_lock(project, annotator, tmp_path):
    make_traces(project, tmp_path, count=1, steps=3)
    client = _signed_in(annotator)
    annotation = _claim(client, project)
    first = _save(client, annotation["id"], annotation["version"], "warm-up")
    assert first.status_code == 200, first.content
    with CaptureQueriesContext(connection) as queries:
        response = _save(client, annotation["id"], first.json()["version"], "counted")
    assert response.status_code == 200, response.content
    sql = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(TRANSACTION_CONTROL)]
    # The session with its user and their groups, the access check with the row lock, the UPDATE, the audit row.
    assert len(sql) == 4, "\n".join(sql)
    assert '"auth_user_groups"' in sql[0] and 'LEFT OUTER JOIN "auth_user"' in sql[0], sql[0]
    reads = [q for q in sql if q.startswith("SELECT") and '"annotation_annotation"' in q.split(" FROM ")[1]]
    assert len(reads) == 1, reads
    lock_read = reads[0]
    # The membership is a join, not a subquery of every project the user has; no ORDER BY for a one-row read.
    assert "(SELECT" not in lock_read and "ORDER BY" not in lock_read, lock_read
    assert '"traces_membership"' in lock_read
    assert AuditEvent.objects.filter(annotation_id=annotation["id"], kind="edit").count() == 2
    assert Annotation.objects.get(pk=annotation["id"]).note == "counted"


@pytest.mark.django_db(transaction=True)
def test_the_one_read_still_refuses_a_former_member_and_someone_elses_annotation(
    project, annotator, make_user, tmp_path
):
    from studio.permissions import Role
    from traces.models import Membership
    from traces.services import membership_add

    make_traces(project, tmp_path, count=2, steps=3)
    other = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=other)
    mine = _claim(_signed_in(annotator), project)
    theirs_client = _signed_in(other)
    _claim(theirs_client, project)
    someone_elses = _save(theirs_client, mine["id"], mine["version"], "not yours")
    assert someone_elses.status_code == 404, someone_elses.content
    assert someone_elses.json()["detail"] == "No such annotation among yours."
    Membership.objects.filter(project=project, user=annotator).delete()
    former_member = _save(_signed_in(annotator), mine["id"], mine["version"], "left the project")
    assert former_member.status_code == 404, former_member.content
    assert Annotation.objects.get(pk=mine["id"]).note == ""


@pytest.mark.django_db(transaction=True)
def test_a_request_thread_keeps_its_sqlite_connection_between_requests():
    """Django closes old connections at each request's start and end; the embedded SQLite connection is kept (no
    new connection and PRAGMAs per request), as long as it is younger than CONN_MAX_AGE and had no error."""
    from django.db import close_old_connections

    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL connections come from the pool (settings.DATABASES OPTIONS pool)")
    connection.ensure_connection()
    opened = connection.connection
    close_old_connections()  # what request_started / request_finished run
    assert connection.connection is opened
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"


@pytest.mark.django_db(transaction=True)
def test_the_compiled_access_read_answers_as_the_orm_for_ids_it_cannot_hold(project, annotator, tmp_path):
    """The access read compiled once binds its values: an id that is no number, or one past the column's range, is
    no object (404), as the ORM answers; the compiled read is used again afterwards and still finds the real one."""
    from annotation.access import access_annotation
    from studio.access import NotInScope

    make_traces(project, tmp_path, count=1, steps=3)
    client = _signed_in(annotator)
    annotation = _claim(client, project)
    assert access_annotation(annotator, annotation["id"], "annotation.work").pk == annotation["id"]
    for pk in ("abc", 2**70, -(2**70), None):
        with pytest.raises(NotInScope):
            access_annotation(annotator, pk, "annotation.work")
    found = access_annotation(annotator, str(annotation["id"]), "annotation.work")
    assert found.pk == annotation["id"]
    assert found.trace.project.pk == project.pk  # select_related objects made from the same row
    assert found.annotator_id == annotator.pk


@pytest.mark.django_db(transaction=True)
def test_a_session_signed_in_with_djangos_backend_stays_signed_in_and_logout_ends_it(project, annotator, tmp_path):
    """Sessions made before the studio's backend name Django's ModelBackend: they still sign their user in (the
    same backend, with the user's read compiled once). A logout still ends the session at the next request."""
    from django.contrib.auth import BACKEND_SESSION_KEY

    make_traces(project, tmp_path, count=1, steps=3)
    client = Client()
    client.force_login(annotator, backend="django.contrib.auth.backends.ModelBackend")
    session = client.session
    assert session[BACKEND_SESSION_KEY] == "studio.auth_backend.ModelBackend"  # read as the studio's
    annotation = _claim(client, project)
    saved = _save(client, annotation["id"], annotation["version"], "older session")
    assert saved.status_code == 200, saved.content
    client.post("/logout/")
    after = _save(client, annotation["id"], saved.json()["version"], "after logout")
    assert after.status_code in (401, 403), after.content
    assert Annotation.objects.get(pk=annotation["id"]).note == "older session"
