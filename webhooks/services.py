"""Writes: register an endpoint, record an event for every endpoint that wants it, deliver, re-send."""

from __future__ import annotations

import json
import secrets
import time
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from studio.db import atomic_with_retry
from studio.errors import Invalid
from webhooks import network, signing
from webhooks.models import URL_MAX_CHARS, Delivery, DeliveryStatus, Webhook, WebhookEvent


class WebhookRefused(Invalid):
    """A registration the studio will not accept; the message names the field and the rule."""


def _check_url(url: str) -> str:
    url = (url or "").strip()
    if len(url) > URL_MAX_CHARS:  # PostgreSQL refuses a longer one (SQLite stores it): a 500 from the page's form
        raise WebhookRefused(f"url: at most {URL_MAX_CHARS} characters, not {len(url)}")
    parts = urlsplit(url)
    if not parts.netloc or parts.scheme not in ("https", "http"):
        raise WebhookRefused(f"url: {url!r} is not an http(s) address")
    if parts.scheme == "http" and parts.hostname not in settings.WEBHOOKS_ALLOW_HTTP_HOSTS:
        raise WebhookRefused(
            "url: use https:// (deliveries carry bundle details; plain http is allowed only for the "
            "hosts in STUDIO_WEBHOOKS_ALLOW_HTTP_HOSTS)"
        )
    if parts.username or parts.password:
        raise WebhookRefused("url: credentials in the address would be logged; put them in the receiver instead")
    inside = network.registration_refusal(parts.hostname or "")
    if inside:
        raise WebhookRefused(f"url: {inside}")
    return url


@atomic_with_retry
def webhook_create(*, project, url: str, events: list[str], user) -> tuple[Webhook, str]:
    """Register an endpoint; returns it and its signing secret, which is shown this once."""
    unknown = sorted(set(events) - set(WebhookEvent.values))
    if unknown or not events:
        raise WebhookRefused(
            f"events: choose among {', '.join(WebhookEvent.values)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    secret = secrets.token_hex(32)
    webhook = Webhook.objects.create(
        project=project, url=_check_url(url), events=sorted(set(events)), secret=secret, created_by=user
    )
    return webhook, secret


@atomic_with_retry
def webhook_delete(*, webhook: Webhook) -> None:
    webhook.delete()


def _enqueue(delivery: Delivery) -> None:
    from webhooks.tasks import deliver_webhook

    transaction.on_commit(lambda: deliver_webhook.delay(delivery.pk))


@atomic_with_retry
def event_emit(*, project, event: str, payload: dict) -> list[Delivery]:
    """One delivery per active endpoint of ``project`` that wants ``event``, sent by a worker after commit: the
    request or job that caused the event never waits for a receiver."""
    body = {
        "event": event,
        "project": {"id": project.pk, "name": project.name},
        "created_at": timezone.now().isoformat(),
        **payload,
    }
    deliveries = []
    for webhook in Webhook.objects.filter(project=project, active=True):
        if event in webhook.events:
            delivery = Delivery.objects.create(webhook=webhook, event=event, payload=body)
            _enqueue(delivery)
            deliveries.append(delivery)
    return deliveries


@atomic_with_retry
def delivery_resend(*, delivery: Delivery) -> Delivery:
    """Send a delivery's payload again, as a new logged delivery."""
    again = Delivery.objects.create(
        webhook=delivery.webhook, event=delivery.event, payload=delivery.payload, resent_from=delivery
    )
    _enqueue(again)
    return again


def delivery_attempt(*, delivery_id: int) -> bool:
    """POST the delivery, signed; True when the receiver took it (2xx). Every attempt is recorded."""
    delivery = Delivery.objects.select_related("webhook").get(pk=delivery_id)
    if delivery.status == DeliveryStatus.DELIVERED:
        return True
    body = json.dumps(delivery.payload, sort_keys=True, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "TraceStudio-Webhooks/1",
        signing.SIGNATURE_HEADER: signing.signature(delivery.webhook.secret, int(time.time()), body),
        signing.EVENT_HEADER: delivery.event,
        signing.DELIVERY_HEADER: str(delivery.pk),
    }
    status, error = None, ""
    try:
        answer = network.post(delivery.webhook.url, body, headers)
        status = answer.status
        if not 200 <= status < 300:
            error = f"HTTP {status}: {answer.text}"
    except network.DeliveryRefused as exc:
        error = f"refused: {exc}"
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        error = f"{exc.__class__.__name__}: {str(exc)[:300]}"
    delivered = not error
    Delivery.objects.filter(pk=delivery.pk).update(
        attempts=delivery.attempts + 1,
        response_status=status,
        last_error=error,
        status=DeliveryStatus.DELIVERED if delivered else DeliveryStatus.PENDING,
        delivered_at=timezone.now() if delivered else None,
    )
    return delivered


def delivery_give_up(*, delivery_id: int) -> None:
    Delivery.objects.filter(pk=delivery_id).exclude(status=DeliveryStatus.DELIVERED).update(
        status=DeliveryStatus.FAILED
    )
