"""Who may do what: one table of actions × roles used by the API, the pages and the WebSocket consumers.

Roles are Django groups (annotator, lead, engineer) plus superusers as admin. Project-scoped actions
also need a membership in the project: a user sees only the projects they belong to (admins see all).
"""

from __future__ import annotations

from enum import StrEnum

from rest_framework.permissions import BasePermission


class Role(StrEnum):
    ANNOTATOR = "annotator"
    LEAD = "lead"
    ENGINEER = "engineer"
    ADMIN = "admin"


GROUP_ROLES = (Role.ANNOTATOR, Role.LEAD, Role.ENGINEER)

ALL = frozenset(Role)
LEADS = frozenset({Role.LEAD, Role.ADMIN})
ANNOTATING = frozenset({Role.ANNOTATOR, Role.LEAD, Role.ADMIN})
EXPORTING = frozenset({Role.ENGINEER, Role.LEAD, Role.ADMIN})

# action -> roles allowed. Every view, page and consumer names one of these.
PERMISSIONS: dict[str, frozenset[Role]] = {
    "project.view": ALL,
    # Creating a project and changing its settings and members (leads: in their projects).
    "project.manage": LEADS,
    "trace.view": ALL,
    "trace.import": LEADS,
    # Mending what an import could not find (a trace's blank instruction).
    "trace.edit": LEADS,
    "job.view": ALL,
    "annotation.work": ANNOTATING,
    "annotation.review": LEADS,
    "lease.manage": LEADS,
    "webhook.manage": LEADS,
    "trace.delete": LEADS,
    # the holder closes their own lease (page closed); leads any lease of their projects (annotation.selectors)
    "lease.release": ANNOTATING,
    "dashboard.view": LEADS,
    "presence.view": ANNOTATING,
    "export.view": EXPORTING,
    "export.create": EXPORTING,
    "prescore.run": LEADS,
    "prescore.view": ALL,
    # In a blind project annotators see no model suggestions; these roles still do.
    "prescore.view_blind": frozenset({Role.LEAD, Role.ENGINEER, Role.ADMIN}),
    # Reading the API's own description and the account pages.
    "api.docs": ALL,
    # Engineers fetch bundles with a token; it is theirs to create and revoke.
    "token.manage": EXPORTING,
    # Django's admin (it checks is_staff itself; the table says who it is for).
    "admin.site": frozenset({Role.ADMIN}),
}

# Reachable without logging in (the login page itself, the redirect home, logout).
PUBLIC = "public"

# Pages (function views) by URL name -> action. DRF views declare ``permission_action`` on the class
# instead; a URL with neither fails tests/test_access_matrix.py. The login and role part of the action
# is enforced for every page here by PageActionMiddleware; project membership stays in the view.
PAGE_PERMISSIONS: dict[str, str] = {
    "home": PUBLIC,
    "login": PUBLIC,
    "logout": PUBLIC,
    "admin-login": PUBLIC,
    "api-schema": "api.docs",
    "api-docs": "api.docs",
    "account-token": "token.manage",
    "api-token": "token.manage",
    # traces
    "project-list": "project.view",
    "project-create": "project.manage",
    "project-settings": "project.manage",
    "trace-list": "trace.view",
    "import-upload": "trace.import",
    "import-job": "job.view",
    "import-job-cancel": "trace.import",
    "trace-detail": "trace.view",
    "trace-delete": "trace.delete",
    "trace-instruction": "trace.edit",
    "screenshot-file": "trace.view",
    # annotation
    "annotation-queue": "project.view",  # annotators see their queue, leads the open leases
    "annotation-next-trace": "annotation.work",
    "annotation-lease-release": "lease.manage",
    "annotation-workspace": "annotation.work",
    "review-queue": "annotation.review",
    "review-detail": "annotation.review",
    "review-decide": "annotation.review",
    "dashboard": "dashboard.view",
    "project-dashboard": "dashboard.view",
    # exports
    "export-home": "export.view",
    "export-job": "export.view",
    "export-job-cancel": "export.create",
    "project-webhooks": "webhook.manage",
    "webhook-delete": "webhook.manage",
    "webhook-delivery-resend": "webhook.manage",
}

# WebSocket routes -> action (the consumer also checks membership per project).
SOCKET_PERMISSIONS: dict[str, str] = {
    "ws/live/": "presence.view",
}


def user_roles(user) -> frozenset[Role]:
    if not user or not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, "_studio_roles", None)
    if cached is not None:
        return cached
    names = set(user.groups.values_list("name", flat=True))
    roles = {role for role in GROUP_ROLES if role.value in names}
    if user.is_superuser:
        roles.add(Role.ADMIN)
    user._studio_roles = frozenset(roles)
    return user._studio_roles


def is_member(user, project) -> bool:
    if Role.ADMIN in user_roles(user):
        return True
    return project.memberships.filter(user_id=user.pk).exists()


def has_permission(user, action: str, project=None) -> bool:
    """True when one of the user's roles allows ``action`` (and, for a project, they belong to it)."""
    allowed = PERMISSIONS[action]  # KeyError on purpose: an unknown action is a programming error
    if not (user_roles(user) & allowed):
        return False
    return project is None or is_member(user, project)


class ActionPermission(BasePermission):
    """DRF permission: the view names ``permission_action`` (or a dict per HTTP method)."""

    message = "Your role does not allow this."

    def _action(self, request, view) -> str:
        action = view.permission_action
        if isinstance(action, dict):
            return action.get(request.method, action.get("*"))
        return action

    def has_permission(self, request, view) -> bool:
        return has_permission(request.user, self._action(request, view))

    def has_object_permission(self, request, view, obj) -> bool:
        project = getattr(view, "get_permission_project", lambda o: getattr(o, "project", None))(obj)
        return has_permission(request.user, self._action(request, view), project)
