"""Reads of the shared core: a person's own settings."""

from __future__ import annotations

from studio.models import AccountSettings, ShortcutMode


def shortcut_mode_of(user) -> str:
    """How ``user`` takes single-key shortcuts (a ShortcutMode value); the default for a user with no settings."""
    if not getattr(user, "is_authenticated", False):
        return ShortcutMode.SINGLE.value
    found = AccountSettings.objects.filter(user=user).values_list("shortcuts", flat=True).first()
    return found or ShortcutMode.SINGLE.value
