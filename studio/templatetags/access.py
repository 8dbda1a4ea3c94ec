"""`{% may user "action" [project] as name %}`: the permission table, asked from a template (no second copy of a rule)."""

from django import template

from studio.permissions import has_permission

register = template.Library()


@register.simple_tag
def may(user, action: str, project=None) -> bool:
    return has_permission(user, action, project)
