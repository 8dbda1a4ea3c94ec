"""On PostgreSQL with the production pool, a signed-in annotator's draft save is a fixed number of round trips and
transactions, counted where psycopg sends them: the session read (the signed-in user and their groups in it), then
the save's one transaction (BEGIN, the locked read, the UPDATE, the audit INSERT, COMMIT). The pool lends a sound connection
without a query (studio.postgresql); one PostgreSQL dropped while it sat in the pool is found out by the check's round
trip and replaced, so the save still answers 200. A role taken away or a logout counts at the next request."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client
from psycopg._connection_base import BaseConnection
from psycopg._cursor_base import BaseCursor
from psycopg.client_cursor import ClientCursorMixin

from annotation.models import Annotation
from tests.database_template import server_connect, server_url
from tests.fixtures_annotation import make_traces

# As a server's requests run: each request's connection goes back to the pool, each save commits its own transaction.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


class Sent:
    """Every statement psycopg sends to PostgreSQL in this process, with whether it ran as its own transaction
    (autocommit), and every command the connection sends itself (BEGIN, COMMIT, ROLLBACK). Preparing a statement
    (a Parse, once per statement and connection after ``prepare_threshold`` runs there) is left out: which pooled
    connection a request gets decides it, not the request."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, bool]] = []

    def round_trips(self) -> list[str]:
        return [sql for sql, _ in self.statements]

    def transactions(self) -> int:
        """PostgreSQL's commits: a statement run in autocommit, or a COMMIT."""
        return sum(1 for sql, autocommit in self.statements if autocommit or sql == "COMMIT")


@pytest.fixture
def sent(monkeypatch) -> Iterator[Sent]:
    if connection.vendor != "postgresql":
        pytest.skip("round trips to PostgreSQL (this run uses SQLite)")
    assert connection.settings_dict["OPTIONS"].get("pool"), "the production settings pool PostgreSQL connections"
    record = Sent()
    execute_send = BaseCursor._execute_send  # the server-side binding cursor's (studio.db.statement_cursor)
    client_execute_send = ClientCursorMixin._execute_send  # the client-side binding one's (Django's default)
    send_query_prepared = BaseCursor._send_query_prepared
    exec_command = BaseConnection._exec_command

    def text(query) -> str:
        raw = query.query if hasattr(query, "query") else query
        return (raw.decode() if isinstance(raw, bytes) else str(raw)).strip()

    def on_execute_send(self, query, *args, **kwargs):
        record.statements.append((text(query), self._conn.autocommit))
        return execute_send(self, query, *args, **kwargs)

    def on_client_execute_send(self, query, *args, **kwargs):
        record.statements.append((text(query), self._conn.autocommit))
        return client_execute_send(self, query, *args, **kwargs)

    def on_send_query_prepared(self, name, query, *args, **kwargs):
        record.statements.append((text(query), self._conn.autocommit))
        return send_query_prepared(self, name, query, *args, **kwargs)

    def on_exec_command(self, command, *args, **kwargs):
        record.statements.append((text(command), False))
        return exec_command(self, command, *args, **kwargs)

    monkeypatch.setattr(BaseCursor, "_execute_send", on_execute_send)
    monkeypatch.setattr(ClientCursorMixin, "_execute_send", on_client_execute_send)
    monkeypatch.setattr(BaseCursor, "_send_query_prepared", on_send_query_prepared)
    monkeypatch.setattr(BaseConnection, "_exec_command", on_exec_command)
    connection.close_pool()  # a pool of this test's own: connections earlier tests' threads hold are not its subject
    yield record
    connection.close()


def _saver(project, annotator, tmp_path):
    make_traces(project, tmp_path, count=1, steps=2)
    client = Client()
    client.force_login(annotator)
    claimed = client.post(f"/api/projects/{project.pk}/next-trace/")
    assert claimed.status_code == 200, claimed.content
    annotation = claimed.json()["annotation"]
    state = {"version": annotation["version"]}

    def save(note: str):
        response = client.put(
            f"/api/annotations/{annotation['id']}/draft/",
            data=json.dumps({"version": state["version"], "note": note}),
            content_type="application/json",
        )
        if response.status_code == 200:
            state["version"] = response.json()["version"]
        return response

    return client, annotation["id"], save


SAVE = [
    "SELECT",  # the session, its user and their group names in the same row
    "BEGIN",
    "SELECT",  # the access check with the row lock
    "UPDATE",
    "INSERT",  # the audit row
    "COMMIT",
]


def _kinds(trips: list[str]) -> list[str]:
    return [sql.split(" ", 1)[0] for sql in trips]


def _counted(sent: Sent, save, note: str):
    connection.close()  # the test's own use of the connection goes back to the pool, as a request's does
    sent.statements.clear()
    response = save(note)
    return response, sent.round_trips(), sent.transactions()


def test_a_draft_save_is_six_round_trips_and_two_transactions(sent, project, annotator, tmp_path):
    _, annotation_id, save = _saver(project, annotator, tmp_path)
    for k in range(8):  # past prepare_threshold: compiled reads, prepared statements, a warm pool
        assert save(f"warm {k}").status_code == 200
    response, trips, transactions = _counted(sent, save, "counted")
    assert response.status_code == 200, response.content
    assert _kinds(trips) == SAVE, trips
    assert 'FROM "studio_studiosession" LEFT OUTER JOIN "auth_user"' in trips[0] and '"auth_user_groups"' in trips[0]
    assert trips[2].endswith('FOR UPDATE OF "annotation_annotation"')
    assert transactions == 2, trips
    assert Annotation.objects.get(pk=annotation_id).note == "counted"


def test_a_connection_postgresql_dropped_in_the_pool_is_checked_by_a_round_trip_and_replaced(
    sent, project, annotator, tmp_path
):
    """The control: the counter sees the pool's round-trip check where the socket says the connection may be dead
    (an empty query, its own transaction), and the save goes through on a new connection."""
    _, annotation_id, save = _saver(project, annotator, tmp_path)
    assert save("before").status_code == 200
    connection.close()
    name = connection.settings_dict["NAME"]
    subprocess.run(
        [
            "psql",
            server_url(connection.settings_dict, "postgres"),
            "-qAtc",
            f"select pg_terminate_backend(pid, 5000) from pg_stat_activity where datname = '{name}' "
            "and pid <> pg_backend_pid()",
        ],
        check=True,
        capture_output=True,
    )
    response, trips, transactions = _counted(sent, save, "after the drop")
    assert response.status_code == 200, response.content
    assert trips[0] == "", trips  # the check's empty query, on the dropped connection
    assert _kinds(trips[-len(SAVE) :]) == SAVE, trips
    assert transactions >= 4, trips
    assert Annotation.objects.get(pk=annotation_id).note == "after the drop"
    response, trips, transactions = _counted(sent, save, "on the new connection")
    assert response.status_code == 200 and "" not in trips and transactions == 2, trips


def test_a_role_taken_away_or_a_logout_counts_at_the_next_save(project, annotator, tmp_path):
    """The roles come with the user's row on every request: nothing keeps them between requests."""
    from django.contrib.auth.models import Group

    from studio.permissions import Role

    client, annotation_id, save = _saver(project, annotator, tmp_path)
    assert save("an annotator").status_code == 200
    annotating = Group.objects.get(name=Role.ANNOTATOR.value)
    annotator.groups.remove(annotating)
    refused = save("no role")
    assert refused.status_code == 403, refused.content
    annotator.groups.add(annotating)
    assert save("the role again").status_code == 200
    client.post("/logout/")
    assert save("signed out").status_code in (401, 403)
    assert Annotation.objects.get(pk=annotation_id).note == "the role again"


def test_a_quiet_idle_connection_is_lent_without_a_query_one_with_input_gets_the_round_trip(sent):
    """``studio.postgresql.base.connection_check`` on its own: no query for an idle connection with nothing to read;
    psycopg's round-trip check once something waits on the socket (here a notification), which a sound connection
    passes."""
    import time

    from studio.postgresql.base import connection_check, socket_has_input

    settings = connection.settings_dict
    with server_connect(settings, autocommit=True) as conn, server_connect(settings, autocommit=True) as other:
        conn.execute("LISTEN studio_pool_check")
        sent.statements.clear()
        connection_check(conn)
        assert sent.round_trips() == []
        other.execute("NOTIFY studio_pool_check")
        deadline = time.monotonic() + 5
        while not socket_has_input(conn.pgconn.socket) and time.monotonic() < deadline:
            time.sleep(0.01)
        sent.statements.clear()
        connection_check(conn)
        assert sent.round_trips() == [""]
        assert not socket_has_input(conn.pgconn.socket)  # the round trip read what waited
