import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils.translation import gettext, gettext_lazy

from studio import metrics
from studio.errors import ErrorKind, StudioError, error_body, unreachable_dependency

log = logging.getLogger(__name__)

# An ASGI application and its parts; a scope and a message are dicts whose keys depend on their type (http,
# websocket, lifespan), so their values are Any.
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
GetResponse = Callable[[HttpRequest], HttpResponseBase]


def wants_json(request: HttpRequest) -> bool:
    """Whether ``request`` is answered in JSON (the API, or a page's script asking for JSON) rather than a page."""
    return request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")


# The heading of the refusal page, per kind (the text under it is the error's own message).
PAGE_TITLE_BY_KIND = {
    ErrorKind.INVALID: gettext_lazy("Not done"),
    ErrorKind.FORBIDDEN: gettext_lazy("Not allowed"),
    ErrorKind.NOT_FOUND: gettext_lazy("Not found"),
    ErrorKind.CONFLICT: gettext_lazy("Changed meanwhile"),
    ErrorKind.TOO_LARGE: gettext_lazy("Too large"),
}


def error_response(request: HttpRequest, exc: StudioError) -> HttpResponse:
    """The answer of a page (or a plain JSON view) to an application error: the kind's status with its message,
    as JSON (studio.errors.error_body, as the API answers) for JSON clients, else the refusal page."""
    if wants_json(request):
        return JsonResponse(error_body(exc), status=exc.status)
    context = {"detail": exc.detail, "kind": exc.kind.value, "title": PAGE_TITLE_BY_KIND[exc.kind]}
    return render(request, "error.html", context, status=exc.status)


def refused_page(request: HttpRequest, exc: StudioError, template: str, context: dict) -> HttpResponse:
    """A page that stays where the person was (their form, the object they looked at) and says why it was refused:
    ``template`` with the error's message as a notice, answered with the kind's status."""
    messages.error(request, exc.detail)
    return render(request, template, context, status=exc.status)


class StudioErrorMiddleware:
    """Every page view that lets a studio.errors kind escape answers with the kind's status and its message (the
    API's views are answered by studio.api.exception_handler, with the same table and body)."""

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, StudioError):
            return error_response(request, exception)
        return None


class ContentSecurityPolicyMiddleware:
    """Scripts only from our own origin: no inline script, no CDN, so an imported thought can never run."""

    policy = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        "connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
    )

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        from studio.storage import browser_storage_origin

        # Screenshots on S3 are a presigned redirect: the browser loads them from the storage's origin.
        extra = " ".join(filter(None, [getattr(settings, "STUDIO_CSP_IMG_SOURCES", ""), browser_storage_origin()]))
        self.header = (
            self.policy.replace("img-src 'self'", f"img-src 'self' {extra}".rstrip()) if extra else self.policy
        )

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        # Swagger UI and the admin bring their own inline bootstrapping; they are operator pages.
        if not request.path.startswith(("/api/docs", "/admin/")):
            response.setdefault("Content-Security-Policy", self.header)
        return response


class ServerTimingMiddleware:
    """ASGI: adds ``Server-Timing: app;dur=<ms>``, the time from the request reaching the application to its
    response headers, waiting for a thread included. Browsers' developer tools show it next to the network
    time, and the benchmarks split a round trip into the server's share and the rest."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()

        async def send_with_timing(message: Message) -> None:
            if message["type"] == "http.response.start":
                elapsed_ms = (time.perf_counter() - started) * 1000
                headers = [*message.get("headers", []), (b"server-timing", f"app;dur={elapsed_ms:.1f}".encode())]
                message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, send_with_timing)


class DependencyOutageMiddleware:
    """A request that meets a Redis or S3 outage answers 503 with ``Retry-After``: JSON with ``retryable`` for
    the API (as a database outage does), a short page for pages. Before, each was an HTML 500
    that clients could not tell from a bug, and that told them not to retry."""

    RETRY_AFTER_S = 5

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        service = unreachable_dependency(exception)
        if service is None:
            return None
        log.warning("%s unreachable during %s %s: %r", service, request.method, request.path, exception)
        metrics.storage_errors.labels("redis" if service == "Redis" else "s3").inc()
        detail = gettext("%(service)s is not answering; try again in a moment.") % {"service": gettext(service)}
        if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
            response: HttpResponse = JsonResponse({"detail": detail, "retryable": True}, status=503)
        else:
            response = render(request, "503.html", {"detail": detail}, status=503)
        response["Retry-After"] = str(self.RETRY_AFTER_S)
        return response


FORWARDED_HEADERS = (b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host", b"forwarded")


class ClientAddressMiddleware:
    """ASGI: the client's address is the connection's peer, unless that peer is a trusted reverse proxy
    (``settings.TRUSTED_PROXIES``): then it is the right-most X-Forwarded-For entry that is not itself a trusted
    proxy (entries further left are whatever the client wrote). From any other peer the forwarded headers are
    removed, so neither the login throttle's address nor Django's ``SECURE_PROXY_SSL_HEADER`` can be set by a
    client. uvicorn must run with ``--no-proxy-headers`` so that this is the only place deciding it."""

    def __init__(self, app: ASGIApp, trusted: list[str] | None = None) -> None:
        self.app = app
        self.trusted = [
            ipaddress.ip_network(p, strict=False) for p in (settings.TRUSTED_PROXIES if trusted is None else trusted)
        ]

    def is_trusted(self, address: str | None) -> bool:
        try:
            ip = ipaddress.ip_address((address or "").strip())
        except ValueError:
            return False
        return any(ip in network for network in self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        peer = (scope.get("client") or (None, 0))[0]
        headers = scope.get("headers", [])
        if self.is_trusted(peer):
            forwarded = [
                part.strip()
                for name, value in headers
                if name == b"x-forwarded-for"
                for part in value.decode("latin-1").split(",")
                if part.strip()
            ]
            client = next(
                (a for a in reversed(forwarded) if not self.is_trusted(a)), forwarded[0] if forwarded else peer
            )
            try:
                client = str(ipaddress.ip_address(client or ""))
            except ValueError:  # a proxy that forwards garbage: keep the proxy's own address
                client = peer
            scope = {**scope, "client": (client, 0)}
        elif any(name in FORWARDED_HEADERS for name, _ in headers):
            scope = {**scope, "headers": [(n, v) for n, v in headers if n not in FORWARDED_HEADERS]}
        return await self.app(scope, receive, send)


class InputRulesMiddleware:
    """Form and query fields obey the input rules (studio.inputs) before any view sees them: a NUL or a lone
    surrogate in a login name, a search or a lead's note is a 400 naming the field on every database, never a 500
    from PostgreSQL. JSON bodies are checked by the API's parser; imported traces by the import service."""

    FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        problem = self._problem(request)
        if problem is None:
            return self.get_response(request)
        message = gettext("Refused: %(problem)s.") % {"problem": problem}
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": message}, status=400)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")

    def _problem(self, request: HttpRequest) -> str | None:
        from studio.inputs import input_problem

        fields = [request.GET]
        if request.method == "POST" and request.content_type in self.FORM_TYPES:
            fields.append(request.POST)
        for data in fields:
            for name, values in data.lists():
                for value in (name, *values):
                    problem = input_problem(value, name=gettext("a field name") if value is name else name)
                    if problem:
                        return problem
        problem = input_problem(request.path, name="path")
        return problem
