"""A lost login is an error kind, ``signed_out``, on every answer that means one (studio.errors): the API's
authentication answers (no credentials, a bad token, a session whose CSRF check failed) and the pages' answer to a
JSON client without a login; the page's JavaScript reads the kind (static/js/api.js, tests/js/api.test.mjs). A
refusal of a signed-in user stays ``forbidden``."""

from __future__ import annotations

from rest_framework.test import APIClient

from tests.conftest import TEST_PASSWORD


def test_an_api_request_without_a_login_is_signed_out(db):
    answer = APIClient().get("/api/projects/")
    assert answer.status_code == 401 and answer.json()["kind"] == "signed_out", answer.json()


def test_a_bad_token_is_signed_out(db):
    answer = APIClient().get("/api/projects/", HTTP_AUTHORIZATION="Token not-a-token")
    assert answer.status_code == 401 and answer.json()["kind"] == "signed_out", answer.json()


def test_a_session_whose_csrf_check_fails_is_signed_out(project, lead):
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username=lead.username, password=TEST_PASSWORD)
    answer = client.post(f"/api/projects/{project.pk}/rounds/", {"name": "r1", "checkpoint": "m"}, format="json")
    assert answer.status_code == 403
    assert answer.json()["kind"] == "signed_out" and answer.json()["detail"].startswith("CSRF Failed"), answer.json()


def test_a_page_asked_for_json_without_a_login_is_signed_out(project, client):
    answer = client.get(f"/projects/{project.pk}/dashboard/", HTTP_ACCEPT="application/json")
    assert answer.status_code == 401 and answer.json()["kind"] == "signed_out", answer.content


def test_a_signed_in_user_refused_by_role_is_forbidden_not_signed_out(project, annotator, api_client):
    answer = api_client(annotator).post(f"/api/projects/{project.pk}/rounds/", {"name": "r1", "checkpoint": "m"})
    assert answer.status_code == 403 and answer.json()["kind"] == "forbidden", answer.json()
