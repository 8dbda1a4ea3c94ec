"""The review room's part of the access table (studio.permissions): reviewing and the dashboards, and the pages of
annotation/review/urls.py."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import LEADS, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
        "annotation.review": Rule(LEADS, Scope.MEMBER, gettext_noop("review annotations")),
        "dashboard.view": Rule(LEADS, Scope.MEMBER, gettext_noop("see dashboards")),
    },
    pages={
        "review-queue": "annotation.review",
        "review-detail": "annotation.review",
        "review-decide": "annotation.review",
        "dashboard": "dashboard.view",
        "project-dashboard": "dashboard.view",
        "round-dashboard": "dashboard.view",
    },
)
