"""/healthz and /readyz: what the compose healthchecks and Caddy's upstream checks ask (studio/health.py)."""

from __future__ import annotations

import functools

import pytest
from django.test import Client, override_settings

from tests.ports import free_port


def test_healthz_answers_by_the_servers_own_address_over_plain_http(db):
    """The container's healthcheck asks http://127.0.0.1:8000/healthz: not a name the site serves, and no HTTPS."""
    with override_settings(ALLOWED_HOSTS=["studio.example.org"], SECURE_SSL_REDIRECT=True):
        client = Client()
        alive = client.get("/healthz", HTTP_HOST="127.0.0.1:8000")
        page = client.get("/login/", HTTP_HOST="127.0.0.1:8000")  # control: any other URL is refused there
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    assert alive["Content-Length"] == str(len(alive.content))
    assert page.status_code == 400


def test_readyz_names_each_dependency_it_reached(db):
    ready = Client().get("/readyz", HTTP_HOST="web:8000")
    assert ready.status_code == 200, ready.content
    body = ready.json()
    assert body["ready"] is True and set(body["checks"]) == {"database", "broker", "storage"}
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["storage"]["detail"] == "local"


def test_readyz_is_503_naming_what_is_unreachable(db, settings, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    settings.MEDIA_ROOT = blocker / "media"  # storage cannot be written
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):  # the embedded broker: a folder that cannot be made
        settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
            **settings.CELERY_BROKER_TRANSPORT_OPTIONS,
            "data_folder_in": str(blocker / "queue"),
        }
    else:  # Redis: a port where nothing listens
        from studio.celery import app

        # The app's own connection, to a dead address: its settings stay as they are for the tests after this one.
        refused = f"redis://127.0.0.1:{free_port()}/0"
        monkeypatch.setattr(app, "connection_for_write", functools.partial(app.connection_for_write, refused))
    answer = Client().get("/readyz")
    assert answer.status_code == 503 and answer["Retry-After"]
    body = answer.json()
    assert body["ready"] is False
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["storage"]["ok"] is False and body["checks"]["broker"]["ok"] is False
    assert body["detail"].startswith("Not ready: broker unreachable (")
    assert "storage unreachable (" in body["detail"]


@pytest.mark.parametrize("method", ["post", "delete"])
def test_a_write_to_the_health_endpoints_changes_nothing(db, method):
    answer = getattr(Client(), method)("/healthz")
    assert answer.status_code == 405
