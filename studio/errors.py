"""Errors in words people can act on, never with SQL or server paths in them."""

from __future__ import annotations

from django.db import DatabaseError


def describe_error(exc: BaseException, *, limit: int = 500) -> str:
    """``exc`` for a job page or an API answer. Database errors carry the SQL and the values in their text:
    those are named by kind only (the worker log keeps the whole error)."""
    if isinstance(exc, DatabaseError):
        return f"{exc.__class__.__name__}: the database refused or lost the operation (details in the worker log)"
    text = f"{exc.__class__.__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 1] + "…"
