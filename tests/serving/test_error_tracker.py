"""Errors to an error tracker (studio/errortracker.py): with a DSN, an unexpected error in a page reaches a local
envelope receiver (a tiny HTTP server here, speaking the tracker's side of the protocol), naming the request's id
and the user's id, with passwords, tokens and session cookies scrubbed; without one, nothing is set up."""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import sentry_sdk
from django.test import Client
from django.urls import include
from django.urls import path as url_path

from studio.errortracker import FILTERED, scrub
from tests.ports import free_port
from tests.serving.test_settings_and_pages import run_manage


class EnvelopeReceiver(BaseHTTPRequestHandler):
    """Sentry's envelope endpoint (``POST /api/<project>/envelope/``): keeps each envelope's text."""

    received: list[str] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).received.append(body.decode())
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def tracker():
    """The studio's error tracking pointed at a receiver on loopback (what STUDIO_SENTRY_DSN does at start)."""
    from studio.errortracker import errortracker_init

    EnvelopeReceiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), EnvelopeReceiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    errortracker_init(dsn=f"http://publickey@127.0.0.1:{server.server_port}/42", environment="test", release="0")
    try:
        yield EnvelopeReceiver.received
    finally:
        sentry_sdk.get_client().close(timeout=2)
        sentry_sdk.init()  # no DSN: the rest of the process reports nothing
        server.shutdown()
        server.server_close()


def failing_page(request):
    raise RuntimeError("a bug the tracker should hear of")


urlpatterns = [url_path("failing/", failing_page), url_path("", include("studio.urls"))]
handler500 = "studio.views.server_error"


def _events(envelopes: list[str]) -> list[dict]:
    events = []
    for envelope in envelopes:
        lines = envelope.split("\n")
        for header, payload in zip(lines[1::2], lines[2::2], strict=False):
            if json.loads(header).get("type") == "event":
                events.append(json.loads(payload))
    return events


@pytest.mark.django_db
@pytest.mark.urls(__name__)
def test_an_unexpected_error_reaches_the_tracker_named_and_scrubbed(tracker, lead):
    client = Client(raise_request_exception=False)
    client.force_login(lead)
    session_key = client.cookies["sessionid"].value
    client.cookies["csrftoken"] = "csrf-cookie-value-0123456789abcdef"
    answer = client.post(
        "/failing/?token=query-token-value",
        {"username": "leader", "password": "hunter2-correct-horse", "note": "harmless words"},
        HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef",
        HTTP_X_REQUEST_ID="proxy-request-0001",
    )
    assert answer.status_code == 500 and "proxy-request-0001" in answer.content.decode()
    sentry_sdk.flush(timeout=10)
    events = _events(tracker)
    assert len(events) == 1, tracker
    event = events[0]
    assert event["exception"]["values"][-1]["value"] == "a bug the tracker should hear of"
    assert event["tags"]["request_id"] == "proxy-request-0001"
    assert event["user"] == {"id": str(lead.pk)}
    sent = "\n".join(tracker)
    for secret in (
        "hunter2-correct-horse",
        session_key,
        "csrf-cookie-value-0123456789abcdef",
        "0123456789abcdef0123456789abcdef",
        "query-token-value",
    ):
        assert secret not in sent, secret
    assert "harmless words" in sent  # control: the body was sent, scrubbed field by field


@pytest.mark.django_db
def test_a_503_the_studio_chose_to_answer_is_not_an_error_to_report(tracker, settings, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    settings.MEDIA_ROOT = blocker / "media"
    assert Client().get("/readyz").status_code == 503  # Django logs it at ERROR, without a traceback
    sentry_sdk.flush(timeout=10)
    assert _events(tracker) == []


def test_with_the_tracker_on_an_answer_in_memory_still_goes_out_whole_from_the_loop(tracker, db):
    """sentry-sdk's Django integration wraps the WSGI handler's answer, which hid a page's in-memory body (and a
    file) from studio.web_entry: every answer went out message by message from the view's thread."""
    from studio.asgi import application
    from tests.serving.test_web_entry import call, http_scope

    messages: list[dict] = []
    start = call(application, http_scope("/login/", []), messages.append)
    assert start["status"] == 200
    assert [m["more_body"] for m in messages] == [False]


def test_scrub_replaces_what_names_a_secret_and_keeps_the_rest():
    event = {
        "request": {
            "data": {"password": "p", "note": "kept"},
            "headers": [["Authorization", "Token abc"], ["Accept", "text/html"], ["X-Thing", "Bearer xyz"]],
            "cookies": {"sessionid": "s", "theme": "dark"},
            "env": {"HTTP_COOKIE": "theme=dark; sessionid=s; csrftoken=c"},
            "query_string": "page=2&api_token=t&q=a",
        },
        "extra": {"api_key": "k", "count": 3},
        "breadcrumbs": {"values": [{"category": "query", "message": "SELECT …", "data": {"db.params": ["s"]}}]},
    }
    assert scrub(event) == {
        "request": {
            "data": {"password": FILTERED, "note": "kept"},
            "headers": [["Authorization", FILTERED], ["Accept", "text/html"], ["X-Thing", FILTERED]],
            "cookies": FILTERED,  # the whole of them: the key names cookies
            "env": {"HTTP_COOKIE": FILTERED},
            "query_string": f"page=2&api_token={FILTERED}&q=a",
        },
        "extra": {"api_key": FILTERED, "count": 3},
        "breadcrumbs": {"values": [{"category": "query", "message": "SELECT …", "data": {"db.params": FILTERED}}]},
    }


def test_without_a_dsn_nothing_is_reported(settings):
    assert settings.SENTRY_DSN is None
    assert sentry_sdk.get_client().transport is None


def test_a_dsn_that_is_no_dsn_stops_the_start_saying_so(tmp_path):
    result = run_manage(
        "check", env_extra={"STUDIO_DATA_DIR": str(tmp_path), "STUDIO_SENTRY_DSN": "https://x.example/1"}
    )
    assert result.returncode != 0
    assert "STUDIO_SENTRY_DSN is not a DSN (Missing public key)" in result.stderr, result.stderr[-2000:]
