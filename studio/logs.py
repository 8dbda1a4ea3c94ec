"""The studio's log lines: one JSON object a line in production (``STUDIO_LOG_FORMAT=json``), the plain lines of the
embedded default otherwise, and the context every line of a request or a job carries.

A request gets an id (``X-Request-ID``: the proxy's when it sent a well-formed one, else a new one), which its
response carries, its error pages and JSON errors show, and every line logged while it runs names; a worker's lines
name the job (and the shard) its task runs. The context lives in context variables, set by
``studio.observability.RequestObservationMiddleware`` for a request and by the engine's tasks for a job, so the code
that logs passes nothing along.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pythonjsonlogger.json import JsonFormatter

if TYPE_CHECKING:
    from django.http import HttpRequest

LOG_FORMATS = ("json", "plain")

# What a line carries besides its message, when set: the request's id and user, the job's id, kind and shard.
_CONTEXT: contextvars.ContextVar[dict | None] = contextvars.ContextVar("studio_log_context", default=None)

# An id a client or proxy sent is kept only when it is short and plain, so it cannot forge log lines or headers.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{8,64}")


def request_id_for(sent: str | None) -> str:
    """The id of a request: the one the proxy sent (``X-Request-ID``) when it is well formed, else a new one."""
    if sent and REQUEST_ID_PATTERN.fullmatch(sent):
        return sent
    return uuid.uuid4().hex


def log_context() -> dict:
    """The context of the request or job running here ({} when none)."""
    return _CONTEXT.get() or {}


def current_request_id() -> str | None:
    return log_context().get("request_id")


@contextmanager
def log_context_set(**fields: Any) -> Iterator[dict]:
    """Every line logged inside the block (in this thread) carries ``fields`` as well as its outer context's."""
    context = {**log_context(), **{k: v for k, v in fields.items() if v is not None}}
    token = _CONTEXT.set(context)
    try:
        yield context
    finally:
        _CONTEXT.reset(token)


# The request running here, for an error report to name its user (studio.errortracker); not written in log lines.
_REQUEST: contextvars.ContextVar[Any] = contextvars.ContextVar("studio_request", default=None)


def current_request() -> Any:
    return _REQUEST.get()


def request_context_begin(request: HttpRequest | None = None, **fields: Any) -> dict:
    """A request's context, from its start in this thread until the next request's begins or ``request_context_end``
    (at Django's ``request_finished``): Django logs a 4xx/5xx answer after the middleware returned it, and that line
    names the request too."""
    context = {k: v for k, v in fields.items() if v is not None}
    _CONTEXT.set(context)
    _REQUEST.set(request)
    return context


def request_context_end(**kwargs: Any) -> None:
    _CONTEXT.set(None)
    _REQUEST.set(None)


class ContextFilter(logging.Filter):
    """Adds the request's or job's context to each record (as attributes the JSON formatter writes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in log_context().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class StudioJsonFormatter(JsonFormatter):
    """One JSON object a line: ``time``, ``level``, ``logger``, ``message``, the context and any ``extra`` fields
    (a traceback as ``exc_info``, one string)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", False)
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s", *args, **kwargs)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging's name
        from datetime import UTC, datetime

        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


def logging_config(*, log_format: str, level: str) -> dict:
    """Django's LOGGING for ``log_format``: ``json`` (a line per request and per job event, one object each) or
    ``plain`` (the embedded default's readable lines; the per-request lines stay off, as before)."""
    formatter = (
        {"()": "studio.logs.StudioJsonFormatter"}
        if log_format == "json"
        else {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "studio.logs.ContextFilter"}},
        "formatters": {"studio": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "studio", "filters": ["context"]}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # One line per request (studio.observability); the plain lines never had them.
            "studio.requests": {"level": "INFO" if log_format == "json" else "WARNING"},
            # studio.observability writes the request line itself, with the route, the user and the id.
            "django.server": {"level": "WARNING"},
        },
    }
