"""A request's session read brings its signed-in user along (studio.sessions: the session's row names its user, the
read joins the user's row and their groups), and Django's checks still decide who the request is: the session's data
names the user, the column only saves a read; an inactive user, a changed password, a deleted user and a logout end
the session at the next request. Sessions opened before the studio kept its own (Django's table) are carried over by
the migration."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
from django.contrib.sessions.models import Session as DjangoSession
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from studio.models import StudioSession

pytestmark = pytest.mark.usefixtures("role_groups")


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _whoami(client: Client) -> str | None:
    response = client.get("/projects/")
    if response.status_code != 200:
        return None
    return response.context["request"].user.username if response.context else None


def _user_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if 'FROM "auth_user" WHERE' in q["sql"] and "studiosession" not in q["sql"]]


def test_the_session_row_names_its_user_and_the_request_reads_no_user_apart(annotator):
    client = _signed_in(annotator)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert StudioSession.objects.get(session_key=key).user_id == annotator.pk
    with CaptureQueriesContext(connection) as queries:
        assert _whoami(client) == annotator.username
    sessions = [q["sql"] for q in queries if "studio_studiosession" in q["sql"]]
    assert len(sessions) == 1 and "auth_user" in sessions[0], sessions
    assert _user_reads(queries.captured_queries) == []


def test_the_column_never_decides_who_the_request_is(annotator, lead):
    """Control: a row whose column names another user than its data is read as the data's user, by a read apart."""
    client = _signed_in(annotator)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    StudioSession.objects.filter(session_key=key).update(user_id=lead.pk)
    with CaptureQueriesContext(connection) as queries:
        assert _whoami(client) == annotator.username
    assert len(_user_reads(queries.captured_queries)) == 1


@pytest.mark.parametrize("change", ["inactive", "password", "deleted", "logout"])
def test_the_session_ends_at_the_next_request(annotator, change):
    client = _signed_in(annotator)
    assert _whoami(client) == annotator.username
    if change == "inactive":
        type(annotator).objects.filter(pk=annotator.pk).update(is_active=False)
    elif change == "password":
        annotator.set_password("a-new-password-8812")
        annotator.save()
    elif change == "deleted":
        annotator.delete()
        assert not StudioSession.objects.filter(user_id=annotator.pk).exists()
    else:
        client.post("/logout/")
    assert _whoami(client) is None


def test_a_session_of_no_one_is_read_without_a_user(client):
    response = client.get("/login/")
    assert response.status_code == 200
    session = client.session
    session["studio_probe"] = "kept"
    session.save()
    row = StudioSession.objects.get(session_key=session.session_key)
    assert row.user_id is None
    assert client.get("/login/").status_code == 200


def test_sessions_open_before_the_studio_kept_its_own_are_carried_over(annotator, lead):
    """The migration's copy: an unexpired signed-in session of Django's table signs its person in afterwards; an
    expired one and one of a user since deleted are not carried as anyone's."""
    migration = importlib.import_module("studio.migrations.0009_sessions_name_their_user")
    store = DjangoSessionStore()
    store[SESSION_KEY] = str(annotator.pk)
    store["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    store["_auth_user_hash"] = annotator.get_session_auth_hash()
    store.create()
    gone = DjangoSessionStore()
    gone[SESSION_KEY] = "987654"
    gone.create()
    expired = DjangoSessionStore()
    expired[SESSION_KEY] = str(lead.pk)
    expired.set_expiry(-10)
    expired.create()
    assert DjangoSession.objects.count() == 3

    migration.sessions_carried_over(apps, SimpleNamespace(connection=connection))

    carried = {s.session_key: s.user_id for s in StudioSession.objects.all()}
    assert carried == {store.session_key: annotator.pk, gone.session_key: None}
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = store.session_key
    assert _whoami(client) == annotator.username
