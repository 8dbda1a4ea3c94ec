"""Counts in words, the one singular/plural rule of every page, summary and admin page: "1 trace", "5 traces"."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.db.models import Model


def in_words(count: int, singular: str, plural: str) -> str:
    """``count`` things, singular or plural: "1 job", "0 jobs"."""
    return f"{count} {singular if count == 1 else plural}"


def counted(count: int, model: type[Model]) -> str:
    """``count`` rows of ``model`` in words, by the model's own names: "1 trace", "4 steps"."""
    return in_words(count, str(model._meta.verbose_name), str(model._meta.verbose_name_plural))
