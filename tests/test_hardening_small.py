"""Issue 37, item 7: the lower-harm findings, each with the test that failed before its fix."""

from __future__ import annotations

import pytest
from django.test import Client

from studio.security import api_token_issue, api_token_revoke


@pytest.mark.django_db
def test_a_bad_or_revoked_token_is_401_with_a_challenge(project, engineer):
    url = "/api/projects/"
    key = api_token_issue(user=engineer)
    assert Client(HTTP_AUTHORIZATION=f"Token {key}").get(url).status_code == 200
    api_token_revoke(user=engineer)
    for header in (f"Token {key}", "Token nope", "Token " + "a" * 40, None):
        client = Client(HTTP_AUTHORIZATION=header) if header else Client()
        response = client.get(url)
        assert response.status_code == 401, (header, response.status_code)
        assert response["WWW-Authenticate"] == "Token"
        assert response.json()["detail"] in ("Invalid token.", "Authentication credentials were not provided.")
    session = Client()
    session.force_login(engineer)
    assert session.get(url).status_code == 200  # a browser's session still reaches the API
