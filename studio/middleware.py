import time

from django.conf import settings


class ContentSecurityPolicyMiddleware:
    """Scripts only from our own origin: no inline script, no CDN, so an imported thought can never run."""

    policy = (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        "connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
    )

    def __init__(self, get_response):
        self.get_response = get_response
        extra = getattr(settings, "STUDIO_CSP_IMG_SOURCES", "")
        self.header = self.policy.replace("img-src 'self'", f"img-src 'self' {extra}".rstrip()) if extra else self.policy

    def __call__(self, request):
        response = self.get_response(request)
        # Swagger UI and the admin bring their own inline bootstrapping; they are operator pages.
        if not request.path.startswith(("/api/docs", "/admin/")):
            response.setdefault("Content-Security-Policy", self.header)
        return response


class ServerTimingMiddleware:
    """ASGI: adds ``Server-Timing: app;dur=<ms>``, the time from the request reaching the application to its
    response headers, waiting for a thread included. Browsers' developer tools show it next to the network
    time, and the benchmarks split a round trip into the server's share and the rest."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()

        async def send_with_timing(message):
            if message["type"] == "http.response.start":
                elapsed_ms = (time.perf_counter() - started) * 1000
                headers = [*message.get("headers", []), (b"server-timing", f"app;dur={elapsed_ms:.1f}".encode())]
                message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, send_with_timing)
