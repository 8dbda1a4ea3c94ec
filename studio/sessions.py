"""The session engine (settings.SESSION_ENGINE): Django's database sessions, read with a query compiled once.

Every signed-in request reads its session row; building that ``objects.get`` costs the ORM several times what the
database spends answering it. The row is still read from the database on every request, so a logout, a password
change or an expired session ends it at once, as before; only the SQL is made once (studio.db.OneRowRead). The
expiry is compared here rather than in the SQL (the same rule: a session whose expiry has passed is no session).
The row's signed data is checked (an HMAC) and unpacked once per distinct text (``_verified_payload``): a session's
data stays the same text from one request to the next, and the same text always verifies to the same bytes.
"""

from __future__ import annotations

import functools
import logging
import zlib
from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends import db
from django.contrib.sessions.base_session import AbstractBaseSession
from django.core import signing
from django.core.exceptions import SuspiciousOperation
from django.db.models import QuerySet
from django.utils import timezone

from studio import auth_backend
from studio.db import OneRowRead


def _session_by_key(slots: dict[str, Any]) -> QuerySet[AbstractBaseSession]:
    return db.SessionStore.get_model_class().objects.filter(session_key=slots["session_key"])[:1]


@functools.cache
def _session_read() -> OneRowRead:
    model = db.SessionStore.get_model_class()
    return OneRowRead(_session_by_key, {"session_key": model._meta.get_field("session_key")})


@functools.lru_cache(maxsize=4096)
def _verified_payload(session_data: str, salt: str) -> bytes:
    """What ``signing.loads`` hands its serializer for ``session_data``: the signature checked (BadSignature else),
    the text unpacked. Only answers are kept (a refusal raises every time); the key is the whole signed text."""
    packed = signing.TimestampSigner(salt=salt).unsign(session_data).encode()
    if packed[:1] == b".":
        return zlib.decompress(signing.b64_decode(packed[1:]))
    return signing.b64_decode(packed)


class SessionStore(db.SessionStore):
    def decode(self, session_data: bytes | str) -> dict[str, Any]:
        """Django's decode (``signing.loads`` with the session's salt and serializer, the same refusals), with the
        signature's check and the unpacking kept per signed text; the serializer makes fresh objects each time."""
        try:
            return self.serializer().loads(_verified_payload(session_data, self.key_salt))
        except signing.BadSignature:
            logging.getLogger("django.security.SuspiciousSession").warning("Session data corrupted")
        except Exception:  # noqa: BLE001 - as Django: undecodable data is an empty session
            pass
        return {}

    def load(self) -> dict[str, Any]:
        data = super().load()
        if data.get(BACKEND_SESSION_KEY) == auth_backend.DJANGO_PATH:  # signed in before the studio's backend
            data[BACKEND_SESSION_KEY] = auth_backend.PATH
        return data

    def _get_session_from_db(self) -> AbstractBaseSession | None:
        try:
            session = _session_read().first(session_key=self.session_key) if self.session_key else None
        except SuspiciousOperation as exc:
            logging.getLogger(f"django.security.{exc.__class__.__name__}").warning(str(exc))
            session = None
        if session is None or session.expire_date <= timezone.now():
            self._session_key = None
            return None
        return session
