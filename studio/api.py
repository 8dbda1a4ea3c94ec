"""API conventions: every error is JSON with a ``detail`` that names the problem."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, RequestDataTooBig):
        return Response(
            {"detail": f"The request body is too large (the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes)."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, OperationalError):
        # The database went away or stayed locked: the client keeps its draft and retries.
        return Response(
            {"detail": "The database is busy or unreachable; nothing was saved. Retry in a moment.", "retryable": True},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "2"},
        )
    return None


class SafeJSONParser(JSONParser):
    """DRF's JSON parser, but JSON nested past Python's recursion limit is a 400, not a server error."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document is nested too deeply.") from None
