"""The webhooks app's part of the access table (studio.permissions), and the pages of webhooks/urls.py."""

from __future__ import annotations

from studio.catalog import gettext_noop
from studio.permissions import LEADS, AppAccess, Rule, Scope

ACCESS = AppAccess(
    rules={"webhook.manage": Rule(LEADS, Scope.MEMBER, gettext_noop("manage webhooks"))},
    pages={
        "project-webhooks": "webhook.manage",
        "webhook-delete": "webhook.manage",
        "webhook-resume": "webhook.manage",
        "webhook-delivery-resend": "webhook.manage",
        "webhook-delivery-cancel": "webhook.manage",
    },
)
