"""Who reaches which webhook and delivery: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.access import access, scoped
from webhooks.models import Delivery, Webhook


def access_webhook(who, pk, action: str | None = None, *, lock: bool = False) -> Webhook:
    return access(who, Webhook.objects.select_related("project"), pk, action, lock=lock)


def access_delivery(who, pk, action: str | None = None, *, lock: bool = False) -> Delivery:
    return access(who, Delivery.objects.select_related("webhook__project"), pk, action, lock=lock)


def webhooks_for(user, action: str = "webhook.manage") -> QuerySet[Webhook]:
    return scoped(user, Webhook.objects.select_related("project"), action)
