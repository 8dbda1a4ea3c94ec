"""Login throttling, API tokens, and the page half of the permission table (PageActionMiddleware)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.utils.translation import gettext
from rest_framework import authentication
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.request import Request

from studio import metrics
from studio.access import AccessRefused, can, method_refused, methods_taken
from studio.db import atomic_with_retry
from studio.errors import SignedOut, error_body
from studio.inputs import text_problem
from studio.middleware import error_response, wants_json
from studio.models import LoginFailure
from studio.permissions import PAGE_PERMISSIONS, PUBLIC

# Failures allowed in LOGIN_WINDOW for one login name from one address, and for one address whatever the names
# (one client spraying many names, or variants the form would fold into one).
LOGIN_MAX_FAILURES = 5
LOGIN_MAX_FAILURES_PER_ADDRESS = 30
LOGIN_WINDOW = timedelta(minutes=15)


# --- login throttling ---------------------------------------------------------------------------


def client_ip(request: HttpRequest) -> str | None:
    """The client's address. The ASGI entry (studio.middleware.ClientAddressMiddleware) has already taken it
    from X-Forwarded-For when, and only when, the connection came from a proxy in STUDIO_TRUSTED_PROXIES."""
    return request.META.get("REMOTE_ADDR") or None


def login_name(raw: str) -> str:
    """The name the login form authenticates: Django's own UsernameField cleaning (strip, then NFKC), so
    " victim " and the full-width "ｖｉｃｔｉｍ" count against the same account as "victim"."""
    from django.contrib.auth.forms import AuthenticationForm

    name = AuthenticationForm().fields["username"].to_python(raw) or ""
    # The counter is a database row: a NUL (which PostgreSQL refuses) cannot name an account anyway.
    return name.replace("\x00", "\N{REPLACEMENT CHARACTER}")[:150]


def _wait_after(times: list[datetime], limit: int) -> int:
    if len(times) < limit:
        return 0
    # The oldest of the last N failures leaves the window first.
    return max(1, int((times[-1] + LOGIN_WINDOW - timezone.now()).total_seconds()) + 1)


def login_throttle_wait(*, username: str, ip: str | None) -> int:
    """Seconds until ``username`` (already ``login_name``-cleaned) may try again from ``ip`` (0: now)."""
    since = timezone.now() - LOGIN_WINDOW
    recent = LoginFailure.objects.filter(at__gte=since).order_by("-at")
    per_name = list(recent.filter(username=username, ip=ip).values_list("at", flat=True)[:LOGIN_MAX_FAILURES])
    # No index on ip alone: the table holds only the last window's failures (pruned on every insert).
    per_address = list(recent.filter(ip=ip).values_list("at", flat=True)[:LOGIN_MAX_FAILURES_PER_ADDRESS])
    return max(_wait_after(per_name, LOGIN_MAX_FAILURES), _wait_after(per_address, LOGIN_MAX_FAILURES_PER_ADDRESS))


@atomic_with_retry
def login_failure_record(*, username: str, ip: str | None) -> None:
    LoginFailure.objects.create(username=username[:150], ip=ip)
    metrics.login_failures.inc()
    LoginFailure.objects.filter(at__lt=timezone.now() - LOGIN_WINDOW).delete()


@atomic_with_retry
def login_failures_clear(*, username: str, ip: str | None) -> None:
    LoginFailure.objects.filter(username=username, ip=ip).delete()


# --- API tokens ---------------------------------------------------------------------------------


class CsrfRefused(PermissionDenied):
    """The session's CSRF check failed: its cookie is gone or belongs to another login, so the page must log in
    again (studio.api answers it with the kind ``signed_out``, and DRF's 403)."""


class SessionAuthentication(authentication.SessionAuthentication):
    """DRF's session login, its CSRF refusal raised as ``CsrfRefused`` (answered with the kind ``signed_out``).

    The user it answers is the signed-in user object itself, not Django's lazy stand-in for it
    (``request.user`` of AuthenticationMiddleware, read once here anyway): every attribute read through the stand-in
    is a proxy call, and an API request reads the user's id and roles dozens of times in the access checks."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:  # the user, and DRF's auth (None)
        found = super().authenticate(request)
        if found is None:
            return None
        user, auth = found
        if isinstance(user, SimpleLazyObject):
            user = user._wrapped  # evaluated already: ``is_active`` was read above
        return user, auth

    def enforce_csrf(self, request: Request) -> None:
        try:
            super().enforce_csrf(request)
        except PermissionDenied as exc:
            raise CsrfRefused(exc.detail) from None


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's ``Authorization: Token <key>``, with a key no key can be (one holding a NUL, which PostgreSQL refuses
    in any query, so the lookup was a 500) answered as an invalid token, the same on every database."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:  # the token's user and the token
        if text_problem(key):
            raise AuthenticationFailed("Invalid token.")
        return super().authenticate_credentials(key)


@atomic_with_retry
def api_token_issue(*, user: User) -> str:
    """A fresh token for ``user``; any earlier one stops working at once. The key is shown once."""
    from rest_framework.authtoken.models import Token

    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user).key


@atomic_with_retry
def api_token_revoke(*, user: User) -> bool:
    """Remove the user's token; True when there was one."""
    from rest_framework.authtoken.models import Token

    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)


def api_token_exists(*, user: User) -> bool:
    from rest_framework.authtoken.models import Token

    return Token.objects.filter(user=user).exists()


# --- pages: login and role from the table -------------------------------------------------------


class PageActionMiddleware:
    """Every page (function view) named in PAGE_PERMISSIONS needs a login and a role allowed its action.

    DRF views are left to ActionPermission (they may authenticate by token, which this layer cannot
    see), except for a method the view has no handler for: 405 with its ``Allow`` here, for every caller and every
    API view (the schema's too), by ``studio.access.method_refused``; Django's admin guards itself, except that a signed-in non-admin gets a 403 rather than its login page. A page missing from the table fails the access-matrix test.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponseBase],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        match = request.resolver_match
        if match is not None and "admin" in match.namespaces:
            # The admin sends a logged-in user it refuses to its login page, which we send back to where they
            # came from: a redirect loop. A signed-in non-admin gets the 403 page instead (the table's admin.site);
            # the admin's own checks still apply to those let through, and its logout ends anyone's session.
            if request.user.is_authenticated and match.url_name != "logout" and not can(request.user, "admin.site"):
                return error_response(request, AccessRefused("admin.site"))
            return None
        if match is not None and hasattr(view_func, "cls"):
            if method_refused(view_func.cls, str(request.method)):  # a request that reached a view has its method
                allow = ", ".join(methods_taken(view_func.cls))
                return JsonResponse(
                    {
                        "detail": gettext('Method "%(method)s" not allowed here; this address takes %(allow)s.')
                        % {"method": request.method, "allow": allow}
                    },
                    status=405,
                    headers={"Allow": allow},
                )
            return None
        if match is None:
            return None
        action = PAGE_PERMISSIONS.get(match.url_name or "")  # an unnamed route is no page of the table
        if action is None or action == PUBLIC:
            return None
        if not request.user.is_authenticated:
            if wants_json(request):
                refused = SignedOut(
                    gettext("Not logged in (or the session expired): log in again. Drafts are kept on the server.")
                )
                return JsonResponse(error_body(refused), status=refused.status)
            return redirect_to_login(request.get_full_path())
        if not can(request.user, action):
            return error_response(request, AccessRefused(action))
        return None
