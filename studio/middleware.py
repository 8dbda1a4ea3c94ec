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
