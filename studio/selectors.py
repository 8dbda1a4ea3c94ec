"""Reads of the shared core: a person's own settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from studio.models import AccountSettings, ShortcutMode

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


def shortcut_mode_of(user: User | AnonymousUser) -> str:
    """How ``user`` takes single-key shortcuts (a ShortcutMode value); the default for a user with no settings."""
    if not getattr(user, "is_authenticated", False) or user.pk is None:
        return ShortcutMode.SINGLE.value
    found = AccountSettings.objects.filter(user_id=user.pk).values_list("shortcuts", flat=True).first()
    return found or ShortcutMode.SINGLE.value
