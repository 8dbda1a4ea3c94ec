"""The session engine (settings.SESSION_ENGINE): Django's database sessions, read with a query compiled once.

Every signed-in request reads its session row; building that ``objects.get`` costs the ORM several times what the
database spends answering it. The row is still read from the database on every request, so a logout, a password
change or an expired session ends it at once, as before; only the SQL is made once (studio.db.OneRowRead). The
expiry is compared here rather than in the SQL (the same rule: a session whose expiry has passed is no session).
"""

from __future__ import annotations

import functools
import logging

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends import db
from django.core.exceptions import SuspiciousOperation
from django.utils import timezone

from studio import auth_backend
from studio.db import OneRowRead


def _session_by_key(slots):
    return db.SessionStore.get_model_class().objects.filter(session_key=slots["session_key"])[:1]


@functools.cache
def _session_read() -> OneRowRead:
    model = db.SessionStore.get_model_class()
    return OneRowRead(_session_by_key, {"session_key": model._meta.get_field("session_key")})


class SessionStore(db.SessionStore):
    def load(self):
        data = super().load()
        if data.get(BACKEND_SESSION_KEY) == auth_backend.DJANGO_PATH:  # signed in before the studio's backend
            data[BACKEND_SESSION_KEY] = auth_backend.PATH
        return data

    def _get_session_from_db(self):
        try:
            session = _session_read().first(session_key=self.session_key) if self.session_key else None
        except SuspiciousOperation as exc:
            logging.getLogger(f"django.security.{exc.__class__.__name__}").warning(str(exc))
            session = None
        if session is None or session.expire_date <= timezone.now():
            self._session_key = None
            return None
        return session
