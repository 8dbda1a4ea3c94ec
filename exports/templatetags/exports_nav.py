from django import template

from studio.permissions import has_permission

register = template.Library()


@register.simple_tag
def may_view_exports(user) -> bool:
    return has_permission(user, "export.view")
