"""API conventions: every error is JSON with a ``detail`` that names the problem."""

from django.db import OperationalError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, OperationalError):
        # The database went away or stayed locked: the client keeps its draft and retries.
        return Response(
            {"detail": "The database is busy or unreachable; nothing was saved. Retry in a moment.", "retryable": True},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "2"},
        )
    return None
