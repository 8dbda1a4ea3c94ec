"""Errors in words people can act on, never with SQL or server paths in them."""

from __future__ import annotations

import enum
from typing import Any

from django.db import DatabaseError

from studio.catalog import gettext_noop


def describe_error(exc: BaseException, *, limit: int = 500) -> str:
    """``exc`` for a job page or an API answer. Database errors carry the SQL and the values in their text:
    those are named by kind only (the worker log keeps the whole error); a service that is down or hung (Redis,
    S3) is named in the words a request meeting it gets (``studio.middleware.DependencyOutageMiddleware``)."""
    from django.utils.translation import gettext

    if isinstance(exc, DatabaseError):
        return gettext("%(error)s: the database refused or lost the operation (details in the worker log)") % {
            "error": exc.__class__.__name__
        }
    service = unreachable_dependency(exc)
    if service is not None:
        return gettext("%(service)s is not answering (%(error)s; details in the worker log).") % {
            "service": gettext(service),
            "error": exc.__class__.__name__,
        }
    text = f"{exc.__class__.__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unreachable_dependency(exc: BaseException) -> str | None:
    """The name of the service ``exc`` says is down or hung (Redis, S3), or None for any other error.

    The database has its own answer (``studio.api.exception_handler``: 503 + ``retryable``); these are the
    other services a request may touch."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    if isinstance(exc, (RedisConnectionError, RedisTimeoutError)):
        return "Redis"
    if isinstance(exc, (BotoConnectionError, HTTPClientError)):
        return gettext_noop("The file storage (S3)")
    if isinstance(exc, ClientError) and exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
        return gettext_noop("The file storage (S3)")
    return None


class ErrorKind(enum.Enum):
    """What went wrong, in the terms every surface (API, page, socket) answers in."""

    INVALID = "invalid"
    CONFLICT = "conflict"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    TOO_LARGE = "too_large"
    # No session or token, an expired one, or the session's CSRF cookie gone with it: the person must log in again
    # (pages read this kind, never the words, to offer that).
    SIGNED_OUT = "signed_out"


# The one place a kind becomes an HTTP status; services raise kinds and never name a status.
STATUS_BY_KIND: dict[ErrorKind, int] = {
    ErrorKind.INVALID: 400,
    ErrorKind.FORBIDDEN: 403,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.CONFLICT: 409,
    ErrorKind.TOO_LARGE: 413,
    ErrorKind.SIGNED_OUT: 401,
}


class StudioError(Exception):
    """An application error: ``detail`` is the message shown to people, worded in the language of whoever asked
    (``gettext`` where it is raised; the request's, the socket's or the job's owner's language is the active one
    then) while ``kind`` stays the same machine-read code in every language; ``extra`` are further body fields
    (e.g. ``current_version`` on a conflict) that clients read. Services and selectors raise these and never an
    HTTP status: the API (studio.api.exception_handler), the pages (studio.middleware.StudioErrorMiddleware) and
    the sockets (``error_frame``) turn the kind into their answer."""

    kind: ErrorKind = ErrorKind.INVALID

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    @property
    def status(self) -> int:
        return STATUS_BY_KIND[self.kind]


class Invalid(StudioError):
    """The request asks for something the rules refuse."""

    kind = ErrorKind.INVALID


class Conflict(StudioError):
    """The request was made against a state that has since changed (a stale version)."""

    kind = ErrorKind.CONFLICT


class NotFound(StudioError):
    """No such object, or none the user may reach (one answer for both)."""

    kind = ErrorKind.NOT_FOUND


class Forbidden(StudioError):
    """The object is within reach but the user may not do this to it."""

    kind = ErrorKind.FORBIDDEN


class TooLarge(StudioError):
    """An upload over the configured size limit."""

    kind = ErrorKind.TOO_LARGE


class SignedOut(StudioError):
    """The request carries no valid login. The API's authentication answers carry this kind too (studio.api), with
    DRF's status: 401, or 403 for a session whose CSRF check failed."""

    kind = ErrorKind.SIGNED_OUT


def error_body(exc: StudioError) -> dict[str, Any]:
    """The JSON body every surface sends for ``exc``: the extra fields, then ``detail`` and ``kind``."""
    # str(): a detail may be a lazy translation, worded here in the language of the request or socket answered.
    return {**exc.extra, "detail": str(exc.detail), "kind": exc.kind.value}


def error_frame(exc: StudioError) -> dict[str, Any]:
    """The WebSocket frame for ``exc``: the API's body with ``type: "error"``."""
    return {"type": "error", **error_body(exc)}
