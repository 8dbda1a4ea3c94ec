"""The session engine (settings.SESSION_ENGINE): Django's database sessions, read with a query compiled once, the
signed-in user's row (and their group names) in the same read.

Every signed-in request reads its session row; building that ``objects.get`` costs the ORM several times what the
database spends answering it. The row is still read from the database on every request, so a logout, a password
change or an expired session ends it at once, as before; only the SQL is made once (studio.db.OneRowRead). The
expiry is compared here rather than in the SQL (the same rule: a session whose expiry has passed is no session).
The row's signed data is checked (an HMAC) and unpacked once per distinct text (``_verified_payload``): a session's
data stays the same text from one request to the next, and the same text always verifies to the same bytes.

The session's row names its user in a column (``StudioSession.user``, written whenever the session is saved), so the
read joins the user's row with their group names (``permissions.group_names_column``): the user read along is handed
to Django's ``get_user`` by ``AuthenticationMiddleware`` below (through ``auth_backend.user_read_along``), whose checks
(the session's password hash, an inactive user) run on it as on a user read apart. A read of the user apart stays for
whatever has no such session (a session whose data names another user, Channels' consumers).
"""

from __future__ import annotations

import functools
import logging
import zlib
from typing import Any

from django.contrib import auth
from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth import middleware as auth_middleware
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.sessions.backends import db
from django.core import signing
from django.core.exceptions import SuspiciousOperation
from django.db import connections, router
from django.db.models import QuerySet, TextField
from django.db.models.expressions import RawSQL
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from studio import auth_backend
from studio.db import OneRowRead
from studio.models import StudioSession
from studio.permissions import GROUP_NAMES_READ, group_names_column

# Where the session's read puts its user's group names, until they are moved onto the user.
_USER_GROUP_NAMES = "studio_user_group_names"


def _session_by_key(slots: dict[str, Any]) -> QuerySet[StudioSession]:
    sessions = StudioSession.objects.filter(session_key=slots["session_key"]).select_related("user")
    column = group_names_column(get_user_model(), connections[router.db_for_read(StudioSession)].vendor)
    if column is not None:
        sessions = sessions.annotate(**{_USER_GROUP_NAMES: RawSQL(column, (), output_field=TextField())})
    return sessions[:1]


@functools.cache
def _session_read() -> OneRowRead:
    return OneRowRead(_session_by_key, {"session_key": StudioSession._meta.get_field("session_key")})


@functools.lru_cache(maxsize=4096)
def _verified_payload(session_data: str, salt: str) -> bytes:
    """What ``signing.loads`` hands its serializer for ``session_data``: the signature checked (BadSignature else),
    the text unpacked. Only answers are kept (a refusal raises every time); the key is the whole signed text."""
    packed = signing.TimestampSigner(salt=salt).unsign(session_data).encode()
    if packed[:1] == b".":
        return zlib.decompress(signing.b64_decode(packed[1:]))
    return signing.b64_decode(packed)


def _signed_in_user_id(data: dict[str, Any]) -> int | None:
    """The user a session's data signs in, as the column keeps it (None for a session of no one)."""
    try:
        return int(data[SESSION_KEY])
    except (KeyError, TypeError, ValueError):
        return None


class SessionStore(db.SessionStore):
    user_read_along: User | None = None  # the user the session's row names, read with it (None: not read)

    @classmethod
    def get_model_class(cls) -> type[StudioSession]:
        return StudioSession

    def create_model_instance(self, data: dict[str, Any]) -> StudioSession:
        return StudioSession(
            session_key=self._get_or_create_session_key(),  # type: ignore[attr-defined]  # as Django's (no stub)
            session_data=self.encode(data),
            expire_date=self.get_expiry_date(),
            user_id=_signed_in_user_id(data),
        )

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

    def _get_session_from_db(self) -> StudioSession | None:
        try:
            session = _session_read().first(session_key=self.session_key) if self.session_key else None
        except SuspiciousOperation as exc:
            logging.getLogger(f"django.security.{exc.__class__.__name__}").warning(str(exc))
            session = None
        self.user_read_along = None
        if session is None or session.expire_date <= timezone.now():
            self._session_key = None
            return None
        group_names = session.__dict__.pop(_USER_GROUP_NAMES, None)
        if session.user_id is not None:
            self.user_read_along = session.user
            if group_names is not None:
                self.user_read_along.__dict__[GROUP_NAMES_READ] = group_names
        return session


def _signed_in_user(request: HttpRequest) -> User | AnonymousUser:
    """Django's ``get_user`` for the request, given the user its session's read brought along, if any."""
    cached: User | AnonymousUser | None = getattr(request, "_cached_user", None)
    if cached is None:
        store = request.session
        store.get(SESSION_KEY)  # loads the session (and the user along) if nothing has yet
        with auth_backend.user_read_along(getattr(store, "user_read_along", None)):
            cached = auth.get_user(request)
        request._cached_user = cached  # type: ignore[attr-defined]  # where Django's middleware keeps it
    return cached


class AuthenticationMiddleware(auth_middleware.AuthenticationMiddleware):
    """Django's, with ``request.user`` taken from the user the session's read brought along (see the module)."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _signed_in_user(request))  # type: ignore[assignment]  # as Django's
