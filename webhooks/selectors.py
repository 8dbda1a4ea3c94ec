"""Reads for the webhooks page and API."""

from __future__ import annotations

from django.db.models import QuerySet

from webhooks.models import Delivery, Webhook


def webhooks_of(project) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project=project)


def deliveries_of(project, *, limit: int = 50) -> list[Delivery]:
    return list(Delivery.objects.filter(webhook__project=project).select_related("webhook")[:limit])


def deliveries_of_webhook(webhook, *, limit: int = 50) -> list[Delivery]:
    return list(Delivery.objects.filter(webhook=webhook)[:limit])
