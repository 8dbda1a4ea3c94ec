"""Account pages and API: the throttled login, one's own settings, and an engineer's API token (create, revoke)."""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.contrib.auth import login as auth_login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext
from django.views import defaults
from django.views.decorators.http import require_http_methods
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import health, i18n, observability, oidc, security, services
from studio import metrics as studio_metrics
from studio.access import ActionPermission
from studio.auth_backend import PATH as AUTH_BACKEND
from studio.errors import NotFound, StudioError, error_body
from studio.jobs import job_models
from studio.logs import current_request_id
from studio.models import ShortcutMode
from studio.selectors import shortcut_mode_of


class ThrottledLoginView(auth_views.LoginView):
    """Django's login, refusing a username+address after LOGIN_MAX_FAILURES failures in LOGIN_WINDOW."""

    template_name = "login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), **sign_in_choices()}

    def _who(self) -> dict[str, Any]:
        return {
            "username": security.login_name(self.request.POST.get("username", "")),
            "ip": security.client_ip(self.request),
        }

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        wait = security.login_throttle_wait(**self._who())
        if wait:
            minutes = max(1, round(wait / 60))
            context = self.get_context_data(form=self.get_form())
            context["throttle_message"] = gettext(
                "Too many failed logins from your address. Try again in about %(minutes)s minute(s)."
            ) % {"minutes": minutes}
            response = render(request, self.template_name, context, status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        security.login_failure_record(**self._who())
        return super().form_invalid(form)

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        security.login_failures_clear(**self._who())
        return super().form_valid(form)


def sign_in_choices() -> dict:
    """What the login page offers: the provider's button, and whether passwords are for the break-glass admin only."""
    config = oidc.configured()
    return {
        "oidc_label": config.label if config else None,
        "passwords_break_glass_only": bool(config and not config.local_passwords),
    }


def _sign_in_refused(request: HttpRequest, message: str, status: int) -> HttpResponse:
    """The login page, saying why the single sign-on did not sign the person in."""
    context = {"form": AuthenticationForm(request), "next": "", "sso_message": message, **sign_in_choices()}
    return render(request, "login.html", context, status=status)


OIDC_NEXT = "oidc_next"


@require_http_methods(["GET"])
def oidc_start(request: HttpRequest) -> HttpResponseBase:
    """Off to the provider's sign-in; it comes back to ``oidc_callback``."""
    config = oidc.configured()
    if config is None:
        raise NotFound(gettext("Single sign-on is not configured here: log in with your password."))
    wanted = request.GET.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    request.session[OIDC_NEXT] = wanted if safe else ""
    try:
        return oidc.authorize_redirect(
            request, redirect_uri=request.build_absolute_uri(reverse("oidc-callback")), config=config
        )
    except oidc.ProviderUnavailable as exc:
        return _sign_in_refused(request, str(exc), status=503)


@require_http_methods(["GET"])
def oidc_callback(request: HttpRequest) -> HttpResponseBase:
    """The provider's answer: the ID token checked, the person made or found and their access set from their groups
    (studio.oidc), then signed in. Every failure is the login page with the reason, never a 500."""
    config = oidc.configured()
    if config is None:
        raise NotFound(gettext("Single sign-on is not configured here: log in with your password."))
    try:
        claims = oidc.claims_from_callback(request, config=config)
        user = oidc.oidc_sign_in_or_refuse(claims=claims, config=config)
    except oidc.ProviderUnavailable as exc:
        return _sign_in_refused(request, str(exc), status=503)
    except StudioError as exc:
        return _sign_in_refused(request, exc.detail, status=exc.status)
    wanted = request.session.pop(OIDC_NEXT, "")
    auth_login(request, user, backend=AUTH_BACKEND)
    return redirect(wanted or settings.LOGIN_REDIRECT_URL)


@require_http_methods(["GET", "POST"])
def account_settings(request: HttpRequest) -> HttpResponse:
    """Page: one's own settings: the language the studio speaks to them (or the browser's, studio.i18n) and how
    single-key shortcuts work (alone, with Alt, or off). A setting the form leaves out stays as it is."""
    user = cast(User, request.user)  # PageActionMiddleware lets only a signed-in user reach the page
    saved = False
    if request.method == "POST":
        language = request.POST.get("language")
        services.account_settings_update(user=user, shortcuts=request.POST.get("shortcuts"), language=language)
        if language is not None:
            i18n.session_language_keep(request, language.strip())
        saved = True
    return render(
        request,
        "account/settings.html",
        {
            "modes": ShortcutMode.choices,
            "current": shortcut_mode_of(user),
            "languages": settings.LANGUAGES,
            "chosen": i18n.account_language(user),
            "saved": saved,
        },
    )


def account_token(request: HttpRequest) -> HttpResponse:
    """Page: create (or replace) and revoke the API token. The key is shown once, right after creation."""
    user = cast(User, request.user)  # PageActionMiddleware lets only a signed-in user reach the page
    token, revoked = None, False
    if request.method == "POST":
        if request.POST.get("do") == "revoke":
            revoked = security.api_token_revoke(user=user)
        else:
            token = security.api_token_issue(user=user)
    return render(
        request,
        "account/token.html",
        {
            "token": token,
            "revoked": revoked,
            "has_token": security.api_token_exists(user=user),
        },
    )


TokenStatus = inline_serializer("TokenStatus", {"has_token": serializers.BooleanField()})
TokenIssued = inline_serializer("TokenIssued", {"token": serializers.CharField()})


class ApiToken(APIView):
    """The caller's API token: GET says whether one exists, POST makes a new one, DELETE revokes it."""

    permission_classes = [ActionPermission]
    permission_action = "token.manage"  # ActionPermission lets only a signed-in user through: request.user is a User

    @extend_schema(responses={200: TokenStatus})
    def get(self, request: Request) -> Response:
        return Response({"has_token": security.api_token_exists(user=cast(User, request.user))})

    @extend_schema(request=None, responses={201: TokenIssued})
    def post(self, request: Request) -> Response:
        return Response(
            {"token": security.api_token_issue(user=cast(User, request.user))}, status=status.HTTP_201_CREATED
        )

    @extend_schema(responses={204: None})
    def delete(self, request: Request) -> Response:
        security.api_token_revoke(user=cast(User, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)


def is_api_path(path: str) -> bool:
    return path.startswith("/api/") and not path.startswith("/api/docs/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A 404 under /api/ is JSON like every other API answer; pages keep Django's page."""
    if is_api_path(request.path):
        missing = NotFound(gettext("No API endpoint or object at %(path)s.") % {"path": request.path})
        return JsonResponse(error_body(missing), status=missing.status)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """An unexpected failure: JSON under /api/, a bare page otherwise (the traceback is logged, never shown). Both
    name the request's id, which the log line of the failure carries, so a person's report leads to it."""
    request_id = getattr(request, "request_id", None) or current_request_id() or "unknown"
    if is_api_path(request.path):
        return JsonResponse(
            {"detail": gettext("The server failed on this request; the error was logged."), "request_id": request_id},
            status=500,
        )
    # No template: the failure may be in the templates themselves.
    page = (
        "<!doctype html><title>Server error</title><h1>Server error (500)</h1>"
        "<p>The server failed on this request; the error was logged.</p>"
        f"<p>Request id: <code>{escape(request_id)}</code></p>"
    )
    return HttpResponseServerError(page)


# --- the operator's endpoints (studio.observability.OpsEndpointsMiddleware answers them first) --------------------


@require_http_methods(["GET", "HEAD"])
def healthz(request: HttpRequest) -> HttpResponse:
    """The process answers (liveness): nothing else is asked, so a database outage does not get it restarted."""
    return JsonResponse({"status": "ok"})


@require_http_methods(["GET", "HEAD"])
def readyz(request: HttpRequest) -> HttpResponse:
    """The database, the broker and the storage answer (readiness); 503 naming each that does not."""
    body = health.readiness_body(health.readiness())
    response = JsonResponse(body, status=200 if body["ready"] else 503)
    if not body["ready"]:
        response["Retry-After"] = "5"
    return response


@require_http_methods(["GET", "HEAD"])
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus' scrape, for the addresses ``STUDIO_METRICS_ALLOW`` lists; any other is told so (403)."""
    address = request.META.get("REMOTE_ADDR")
    if not observability.metrics_allowed(address):
        return HttpResponse(
            f"Metrics are not served to {address}: the studio's STUDIO_METRICS_ALLOW does not list this address.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    text = studio_metrics.metrics_text(job_models=job_models())
    return HttpResponse(text, content_type=studio_metrics.CONTENT_TYPE)
