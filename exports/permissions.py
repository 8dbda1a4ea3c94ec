"""The exports app's part of the access table (studio.permissions), and the pages of exports/urls.py."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import EXPORTING, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={
        "export.view": Rule(EXPORTING, Scope.MEMBER, gettext_noop("see exports")),
        "export.create": Rule(EXPORTING, Scope.MEMBER, gettext_noop("export")),
    },
    pages={
        "export-home": "export.view",
        "export-job": "export.view",
        "export-job-cancel": "export.create",
        "export-diff": "export.view",
    },
)
