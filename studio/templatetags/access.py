"""`{% may user "action" [object] as name %}`: studio.access.can asked from a template (no second copy of a rule)."""

from django import template

from studio.access import can

register = template.Library()


@register.simple_tag
def may(user, action: str, obj=None) -> bool:
    return can(user, action, obj)
