"""`{% may user "action" [object] as name %}`: studio.access.can asked from a template (no second copy of a rule)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import template

from studio.access import can

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User
    from django.db.models import Model

register = template.Library()


@register.simple_tag
def may(user: User | AnonymousUser, action: str, obj: Model | None = None) -> bool:
    return can(user, action, obj)
