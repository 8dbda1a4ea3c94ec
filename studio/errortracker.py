"""Unexpected errors to an error tracker (Sentry or a service that speaks its protocol), only when
``STUDIO_SENTRY_DSN`` is set (docs/deploy.md, "Errors").

Each event names the request (``request_id``: the id the person's error page and the log line show) or the job, and
the signed-in user by id only; before it leaves the process every value whose key names a password, a token, a
secret, a session, a CSRF token, a cookie or an authorization is replaced (``scrub``), wherever it sits: the
request's body, headers, cookies and query, the variables of the traceback's frames, and the values bound into the
SQL of the breadcrumbs (a session key, a password hash).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from studio.logs import current_request, log_context

if TYPE_CHECKING:
    from django.http import HttpRequest

FILTERED = "[Filtered]"
# db.params: the values of the SQL a request ran before it failed (the tracker's breadcrumbs), which hold session keys
# and password hashes.
SENSITIVE_KEY = re.compile(r"pass|pwd|token|secret|session|csrf|cookie|auth|api[-_]?key|dsn|signature|db\.params", re.I)
# An Authorization-like value under an innocent key ("Token 3f9…", "Bearer …"), and a sensitive name=value pair
# inside a text (a Cookie header, a query string, a URL).
SENSITIVE_VALUE = re.compile(r"^(Token|Bearer|Basic)\s+\S+", re.I)
SENSITIVE_PAIR = re.compile(r"([\w.-]*(?:pass|pwd|token|secret|session|csrf|auth|key)[\w.-]*=)[^&;\s]*", re.I)


def scrub(value: Any, *, key: str = "") -> Any:
    """``value`` with every sensitive entry replaced by ``[Filtered]`` (recursively: dicts, lists, key-value
    pairs as Sentry writes headers and cookies)."""
    if key and SENSITIVE_KEY.search(key):
        return FILTERED
    if isinstance(value, dict):
        return {k: scrub(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if len(value) == 2 and isinstance(value[0], str) and not isinstance(value[1], dict | list):
            return [value[0], scrub(value[1], key=value[0])]  # a [name, value] pair
        return [scrub(item) for item in value]
    if isinstance(value, str):
        if SENSITIVE_VALUE.match(value):
            return FILTERED
        return SENSITIVE_PAIR.sub(lambda m: m.group(1) + FILTERED, value)
    return value


def before_send(event: Any, hint: dict[str, Any]) -> Any:
    """Name the request or job and the user, describe the request, then scrub the event. A 5xx that Django logs
    without a traceback is an answer the studio chose (a 503 while a dependency is down, /readyz): not sent."""
    record = hint.get("log_record")
    if record is not None and record.name == "django.request" and not record.exc_info:
        return None
    context = log_context()
    request = current_request()
    if request is not None and "request" not in event:
        event["request"] = _request_description(request)
    tags = event.setdefault("tags", {})
    for name in ("request_id", "job_id", "job_kind"):
        if context.get(name) is not None:
            tags[name] = str(context[name])
    user_id = context.get("user_id") or _request_user_id()
    if user_id is not None:
        event["user"] = {"id": str(user_id)}  # the id only: no name, address or e-mail
    else:
        event.pop("user", None)
    return scrub(event)


def _request_description(request: HttpRequest) -> dict:
    """What the tracker shows of the failed request (scrubbed with the rest of the event)."""
    described = {
        "method": request.method,
        "url": request.path,
        "query_string": request.META.get("QUERY_STRING", ""),
        "headers": dict(request.headers),
        "cookies": dict(request.COOKIES),
    }
    if request.method == "POST" and request.content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        described["data"] = request.POST.dict()
    return described


def _request_user_id() -> int | None:
    """The signed-in user of the request that failed (its session read now if the request had not read it)."""
    request = current_request()
    user = getattr(request, "user", None) if request is not None else None
    try:
        return user.pk if user is not None and user.is_authenticated else None
    except Exception:  # noqa: BLE001 - the report goes out without a user rather than not at all
        return None


def errortracker_init(*, dsn: str, environment: str, release: str) -> None:
    """Errors reach the tracker through the logs: Django logs every 500 (``django.request``, with its traceback) and a
    job's crash is logged with its own, and sentry-sdk's logging integration sends each such record. Its Django
    integration stays off: it wraps the WSGI handler's answer in an iterable of its own, so ``studio.web_entry`` could
    no longer tell an answer in memory (sent whole from the loop) or a file (streamed from the loop) from a stream,
    and a bundle download would hold a web thread; ``before_send`` describes the request instead."""
    import logging

    import sentry_sdk
    from sentry_sdk.integrations.django import DjangoIntegration
    from sentry_sdk.integrations.logging import LoggingIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        release=release,
        before_send=before_send,
        disabled_integrations=[DjangoIntegration()],
        # An ERROR record is an event; INFO and up are the event's breadcrumbs; no log line is sent otherwise.
        integrations=[LoggingIntegration(level=None, event_level=logging.ERROR, breadcrumb_level=logging.INFO)],
        traces_sample_rate=0,  # errors only: no performance traces leave the process
        trace_propagation_targets=[],  # no tracing headers on outgoing requests (a lead's webhook endpoint)
        send_client_reports=False,
    )


def dsn_problem(dsn: str) -> str | None:
    """Why ``dsn`` is not a DSN (None when it is one)."""
    from sentry_sdk.utils import BadDsn, Dsn

    try:
        Dsn(dsn)
    except BadDsn as exc:
        return str(exc) or "not a DSN"
    return None
