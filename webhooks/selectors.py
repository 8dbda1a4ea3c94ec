"""Reads for the webhooks page and API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet

from webhooks.models import Delivery, Webhook

if TYPE_CHECKING:
    from traces.models import Project
    from webhooks.models import Webhook


def webhooks_of(project: Project) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project=project)


def deliveries_of(project: Project, *, limit: int = 50) -> list[Delivery]:
    return list(Delivery.objects.filter(webhook__project=project).select_related("webhook")[:limit])


def deliveries_of_webhook(webhook: Webhook, *, limit: int = 50) -> list[Delivery]:
    return list(Delivery.objects.filter(webhook=webhook)[:limit])
