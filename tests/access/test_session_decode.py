"""The session engine keeps each signed session text's checked payload (studio.sessions._verified_payload): what it
answers is still Django's decode, a tampered text is still refused, and each decode is a fresh dict."""

from __future__ import annotations

import pytest
from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore

from studio.sessions import SessionStore


@pytest.mark.django_db
def test_decode_answers_as_djangos_and_refuses_a_tampered_text():
    data = {"_auth_user_id": "7", "nested": {"list": [1, 2]}, "text": "x" * 600}  # long enough to be compressed
    signed = SessionStore().encode(data)
    assert signed.startswith(".")  # the compressed form went through the unpacking too
    for _ in range(2):  # the first decode checks and keeps the payload, the second reads it kept
        decoded = SessionStore().decode(signed)
        assert decoded == DjangoSessionStore().decode(signed) == data
        decoded["nested"]["list"].append(3)  # a request changing its session changes nobody else's copy
    tampered = signed[:-3] + ("AAA" if not signed.endswith("AAA") else "BBB")
    assert SessionStore().decode(tampered) == {} == DjangoSessionStore().decode(tampered)

    class AnotherStore(SessionStore):  # Django salts a session with its store's class name
        pass

    assert AnotherStore().decode(signed) == {}  # the salt is part of what was checked
