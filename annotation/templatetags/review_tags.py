from django import template

from studio.permissions import has_permission

register = template.Library()


@register.simple_tag
def may_review(user) -> bool:
    return has_permission(user, "annotation.review")


@register.simple_tag
def may_view_dashboards(user) -> bool:
    return has_permission(user, "dashboard.view")
