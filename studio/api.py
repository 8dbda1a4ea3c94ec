"""API conventions: every error is JSON with a ``detail`` that names the problem."""

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import Paginator
from django.db import OperationalError
from django.utils.translation import gettext
from rest_framework import status
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from studio.errors import Conflict, ErrorKind, StudioError, TooLarge, error_body
from studio.inputs import input_problem, page_number
from studio.jobs import JobQueueUnavailable, job_cancel
from studio.models import JobBase
from studio.security import CsrfRefused


def job_cancel_response(job: JobBase) -> Response:
    """Cancel ``job`` and say truthfully what happened: 200 when it was cancelled or will stop, a Conflict (409)
    when it had already ended (nothing changed); both carry the job's state."""
    changed, said = job_cancel(job)
    job.refresh_from_db()
    state = {"id": job.pk, "status": job.status, "cancel_requested": job.cancel_requested}
    if not changed:
        raise Conflict(said, **state)
    return Response({**state, "detail": said})


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        exc = TooLarge(
            gettext("The request body is too large (the limit is %(limit)s bytes).")
            % {"limit": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}
        )
    # Application errors first: their kind names the status (studio.errors.STATUS_BY_KIND), in one place.
    if isinstance(exc, StudioError):
        return Response(error_body(exc), status=exc.status)
    # Imported here: loading rest_framework.views reads DEFAULT_PARSER_CLASSES, which names this module's
    # SafeJSONParser, so importing it at the top breaks whenever this module is the first of the two imported.
    from rest_framework.views import exception_handler as drf_exception_handler

    response = drf_exception_handler(exc, context)
    if response is not None:
        if isinstance(exc, (NotAuthenticated, AuthenticationFailed, CsrfRefused)) and isinstance(response.data, dict):
            response.data["kind"] = ErrorKind.SIGNED_OUT.value  # the page offers a new login by this kind
        return response
    if isinstance(exc, JobQueueUnavailable):
        # The job row says "failed: could not be queued"; the client may simply try again.
        return Response(
            {"detail": gettext("%(problem)s. Try again in a moment.") % {"problem": exc}, "retryable": True},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "5"},
        )
    if isinstance(exc, OperationalError):
        # The database went away or stayed locked: the client keeps its draft and retries.
        return Response(
            {
                "detail": gettext("The database is busy or unreachable; nothing was saved. Retry in a moment."),
                "retryable": True,
            },
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "2"},
        )
    return None


class PageNumbers(PageNumberPagination):
    """DRF's page-number pagination (every list's, ``REST_FRAMEWORK``) with the studio's page rule: a page number
    that is no whole number, below 1 or past any offset a database holds is a 400 naming ``page``
    (``studio.inputs.page_number``); a page past the last one is still DRF's 404 "Invalid page."."""

    def get_page_number(self, request: Request, paginator: Paginator) -> int | str:
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw in self.last_page_strings:
            return raw
        return page_number(raw, page_size=paginator.per_page, name=self.page_query_param)


class SafeJSONParser(JSONParser):
    """DRF's JSON parser (strict: NaN and Infinity refused), with JSON nested past Python's recursion limit a 400
    rather than a server error, and every string checked against the input rules (studio.inputs)."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
        problem = input_problem(data, name="")
        if problem:
            raise ParseError(f"Refused: {problem}.")
        return data


# Answers any endpoint can give (see docs/reliability.md); documented once here instead of on every view.
COMMON_ERRORS = {
    "400": "The request is malformed; detail (or the field names) say what is wrong.",
    "401": "Not logged in, or the session expired (drafts stay on the server).",
    "403": "Your role or project membership does not allow this, or the CSRF token is missing.",
    "404": "No such object among the ones you may see.",
    "409": "The object changed meanwhile (stale version) or is not in a state that allows this.",
    "413": "The request body or upload is larger than the limit.",
    "503": "The database, Redis or the file storage (S3) is busy or unreachable. Retry (see Retry-After).",
}


def add_common_error_responses(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every operation documents the error answers it can really give."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault(
        "Error",
        {
            "type": "object",
            "properties": {
                "detail": {"type": "string"},
                # studio.errors.ErrorKind: of an application error, and signed_out on an authentication answer (absent
                # on other framework answers such as 503)
                "kind": {"type": "string", "enum": [kind.value for kind in ErrorKind]},
                "retryable": {"type": "boolean"},
                # The request's id, as its X-Request-ID header says (studio.observability): for a person to quote.
                "request_id": {"type": "string"},
            },
            "additionalProperties": True,
        },
    )
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            for code, text in COMMON_ERRORS.items():
                responses.setdefault(code, {"description": text, "content": error})
    return result
