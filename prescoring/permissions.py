"""The prescoring app's part of the access table (studio.permissions). It has no pages: its API views name these
actions (prescoring/api_urls.py)."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import ALL, LEADS, SEES_BLIND, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
        "prescore.run": Rule(LEADS, Scope.MEMBER, gettext_noop("run pre-scoring")),
        # In a blind project annotators see no model suggestions (nor a suspicion order); leads and engineers do.
        "prescore.view": Rule(
            ALL, Scope.NOT_BLIND, gettext_noop("see model pre-scoring in this project"), unless=SEES_BLIND
        ),
    },
)
