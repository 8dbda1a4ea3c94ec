"""What every request leaves behind for an operator: its id, its log line and its metrics; and the operator's own
endpoints (``/healthz``, ``/readyz``, ``/metrics``), answered before the rest of the middleware.

``RequestObservationMiddleware`` is the first middleware: it gives the request its id (``studio.logs``), sets it as
the context of every line logged meanwhile, answers it as ``X-Request-ID`` (and as ``request_id`` in a JSON error's
body; pages show it from ``request.request_id``), then logs one line (``studio.requests``: method, path, route,
status, duration, user) and counts the request in ``studio.metrics``. Neither queries the database.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import resolve

from studio import metrics
from studio.logs import request_context_begin, request_id_for

request_log = logging.getLogger("studio.requests")

# The operator's endpoints: not counted or logged per request (a healthcheck every few seconds would drown the
# lines that matter), and answered before the host, HTTPS and session middleware (below).
OPS_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def _user_id(request: HttpRequest) -> int | None:
    """The signed-in user's id, if the request already loaded its user (never a query of its own)."""
    user = request.__dict__.get("user")
    if user is None:
        return None
    wrapped = getattr(user, "_wrapped", user)  # Django's lazy user: only when something evaluated it
    return getattr(wrapped, "pk", None) if getattr(wrapped, "is_authenticated", False) else None


def _route(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    return ("/" + match.route) if match is not None else "(no route)"


def _with_request_id(response: HttpResponseBase, request_id: str) -> None:
    """A JSON error's body names the request (``request_id``), whichever surface made it (the API's handler, the
    pages' error middleware, the 404 and 500 views, a framework's own refusal)."""
    # A streaming answer (StreamingHttpResponse, FileResponse) is no HttpResponse: its body is not at hand.
    if response.status_code < 400 or not isinstance(response, HttpResponse):
        return
    if not response.get("Content-Type", "").startswith("application/json"):
        return
    try:
        body = json.loads(response.content)
    except ValueError:
        return
    if isinstance(body, dict) and "request_id" not in body:
        body["request_id"] = request_id
        response.content = json.dumps(body).encode()
        if response.has_header("Content-Length"):  # CommonMiddleware counted the body before it grew
            response["Content-Length"] = str(len(response.content))


class RequestObservationMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = request_id_for(request.META.get("HTTP_X_REQUEST_ID"))
        request.request_id = request_id  # type: ignore[attr-defined]  # the pages and error views show it
        context = request_context_begin(request, request_id=request_id)
        if request.path in OPS_PATHS:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            return response
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        user_id = _user_id(request)
        route = _route(request)
        if user_id is not None:
            context["user_id"] = user_id
        response["X-Request-ID"] = request_id
        _with_request_id(response, request_id)
        metrics.observe_request(route=route, method=str(request.method), status=response.status_code, seconds=seconds)
        request_log.info(
            "%s %s %s",
            request.method,
            request.path,
            response.status_code,
            extra={
                "event": "request",
                "method": request.method,
                "path": request.path,
                "route": route,
                "status": response.status_code,
                "duration_ms": round(seconds * 1000, 2),
                "client": request.META.get("REMOTE_ADDR"),
            },
        )
        return response


class OpsEndpointsMiddleware:
    """``/healthz``, ``/readyz`` and ``/metrics`` go straight to their views. The container's healthcheck, Caddy's
    upstream checks and Prometheus ask by the server's own address (``127.0.0.1:8000``, ``web:8000``), not a name in
    ``STUDIO_ALLOWED_HOSTS``, over plain HTTP inside the network, and need no session: the host check, the HTTPS
    redirect and the session middleware would refuse or slow them. Only reads: any other method takes the usual way
    (CSRF, then the view's 405). The URL conf still names them (``reverse``, the
    access matrix), and ``/metrics`` decides by the client's address (``metrics_allowed``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path not in OPS_PATHS or request.method not in ("GET", "HEAD"):
            return self.get_response(request)  # a write goes the whole way, and is refused like any other
        match = resolve(request.path)
        request.resolver_match = match
        response = match.func(request, *match.args, **match.kwargs)
        if not response.streaming:  # as CommonMiddleware would: the answer goes out whole, not chunked
            response["Content-Length"] = str(len(response.content))
        return response


def metrics_allowed(address: str | None) -> bool:
    """Whether the client at ``address`` (the request's, as ``ClientAddressMiddleware`` decided it) may scrape."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in ipaddress.ip_network(entry, strict=False) for entry in settings.METRICS_ALLOW)
