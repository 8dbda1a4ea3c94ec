"""The request's language (docs/architecture.md, "Languages"): the account's choice, else the browser's.

The choice lives in ``AccountSettings.language`` and is copied into the session when the person signs in (and when they
change it), so a request learns it from the session it reads anyway: choosing a language costs no query per
request (the autosave's count, tests/annotation/test_save_path_queries.py). A request without the choice (signed
out, an API token, "the browser's") gets Django's negotiation: the language cookie, else Accept-Language.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import DatabaseError
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.locale import LocaleMiddleware
from django.utils import translation
from django.utils.translation.trans_real import get_supported_language_variant, parse_accept_lang_header
from django.views.i18n import JavaScriptCatalog

if TYPE_CHECKING:  # at run time the models are imported where used (account_language)
    from studio.models import JobBase

# The session's copy of the account's language ("" or absent: the browser's).
SESSION_LANGUAGE_KEY = "studio_language"


def language_supported(code: str) -> bool:
    return code in {language for language, _ in settings.LANGUAGES}


def account_language(user: User | int) -> str:
    """The account's chosen language, "" for the browser's."""
    from studio.models import AccountSettings

    chosen = AccountSettings.objects.filter(user=user).values_list("language", flat=True).first() or ""
    return chosen if language_supported(chosen) else ""


def recipient_language(user: User | int | None) -> str:
    """The language a text for ``user`` (a user or their id) is written in outside a request (a job's summary and
    errors): the account's choice, else the site's default (no browser is there to ask)."""
    return (account_language(user) if user is not None else "") or settings.LANGUAGE_CODE


def job_language(job: JobBase) -> str:
    """The language of a job's summary, errors and messages: its requester's (``recipient_language``)."""
    return recipient_language(getattr(job, "created_by_id", None))


def socket_language(scope: dict[str, Any]) -> str:
    """A WebSocket's language, as a page request's is chosen: the session's copy of the account's choice, else the
    browser's Accept-Language of the handshake, else the default. Reads the session: call it outside the event loop."""
    session = scope.get("session")
    try:
        chosen = session.get(SESSION_LANGUAGE_KEY, "") if session is not None else ""
    except DatabaseError:
        chosen = ""
    if language_supported(chosen):
        return chosen
    return header_language(scope)


def header_language(scope: dict[str, Any]) -> str:
    """The language an ASGI request's Accept-Language asks for among the studio's, else the default: what answers
    made before Django reads a session (studio.web_entry's refusals of a body) and a socket without a choice speak."""
    headers = dict(scope.get("headers") or [])
    for code, _quality in parse_accept_lang_header(headers.get(b"accept-language", b"").decode("latin-1")):
        if code == "*":
            break
        try:
            return get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


def session_language_keep(request: HttpRequest, language: str) -> None:
    """Makes ``language`` ("" for the browser's) the session's, for this request and the next ones."""
    if language:
        request.session[SESSION_LANGUAGE_KEY] = language
    else:
        request.session.pop(SESSION_LANGUAGE_KEY, None)
    request_language_activate(request)


def request_language_activate(request: HttpRequest) -> None:
    session = getattr(request, "session", None)
    try:
        chosen = session.get(SESSION_LANGUAGE_KEY, "") if session is not None else ""
    except DatabaseError:
        # The session's read meets a database outage before any view: the request goes on in the browser's
        # language, and the view that needs the database answers the outage as every view does (a retryable 503).
        chosen = ""
    language = chosen if language_supported(chosen) else translation.get_language_from_request(request)
    translation.activate(language)
    request.LANGUAGE_CODE = translation.get_language()


def on_sign_in(sender: Any, request: HttpRequest | None, user: User, **kwargs: Any) -> None:
    """``user_logged_in``: the session takes the account's language (a password or a single sign-on login)."""
    if request is not None and hasattr(request, "session"):
        session_language_keep(request, account_language(user))


class AccountLocaleMiddleware(LocaleMiddleware):
    """Django's LocaleMiddleware (Content-Language, Vary), choosing the account's language first."""

    def process_request(self, request: HttpRequest) -> None:
        request_language_activate(request)

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        # The language is the thread's: left active, it would word whatever this thread runs next outside a
        # request (a job run in the web process, a test's service call) in the last visitor's language.
        response = super().process_response(request, response)
        translation.deactivate()
        return response


class ScriptCatalog(JavaScriptCatalog):
    """Django's JavaScript catalog of the project's own scripts' messages: ``locale/<language>/djangojs.po``
    (Django's view reads only apps' folders for a domain other than ``django``)."""

    def get_paths(self, packages: list[str]) -> list[str]:
        return [str(path) for path in settings.LOCALE_PATHS]
