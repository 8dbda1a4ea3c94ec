"""Writes: register an endpoint, record an event for every endpoint that wants it, deliver, re-send, cancel.

A delivery runs as a job of the engine (the ``delivery`` kind, webhooks/jobs.py; ``DeliveryJob``): the engine
claims each run (one at a time per delivery), beats, takes over a run whose worker stopped and ends the job; this
module says what one run does (``delivery_job_work``: a try, or a wait) and keeps the delivery's log."""

from __future__ import annotations

import datetime
import http.client
import json
import random
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from studio import metrics
from studio.db import atomic_with_retry
from studio.engine import job_enqueue
from studio.errors import Invalid
from studio.jobs import JobDeferred, JobFailed, job_cancel
from studio.models import JobStatus
from webhooks import network, signing
from webhooks.models import URL_MAX_CHARS, Delivery, DeliveryJob, DeliveryStatus, Webhook, WebhookEvent

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.models import Project


class WebhookRefused(Invalid):
    """A registration the studio will not accept; the message names the field and the rule."""


def _check_url(url: str) -> str:
    url = (url or "").strip()
    if len(url) > URL_MAX_CHARS:  # PostgreSQL refuses a longer one (SQLite stores it): a 500 from the page's form
        raise WebhookRefused(
            gettext("url: at most %(max)s characters, not %(count)s") % {"max": URL_MAX_CHARS, "count": len(url)}
        )
    parts = urlsplit(url)
    if not parts.netloc or parts.scheme not in ("https", "http"):
        raise WebhookRefused(gettext("url: %(url)s is not an http(s) address") % {"url": repr(url)})
    if parts.scheme == "http" and parts.hostname not in settings.WEBHOOKS_ALLOW_HTTP_HOSTS:
        raise WebhookRefused(
            gettext(
                "url: use https:// (deliveries carry bundle details; plain http is allowed only for the "
                "hosts in STUDIO_WEBHOOKS_ALLOW_HTTP_HOSTS)"
            )
        )
    if parts.username or parts.password:
        raise WebhookRefused(
            gettext("url: credentials in the address would be logged; put them in the receiver instead")
        )
    inside = network.registration_refusal(parts.hostname or "")
    if inside:
        raise WebhookRefused(gettext("url: %(problem)s") % {"problem": inside})
    return url


@atomic_with_retry
def webhook_create(*, project: Project, url: str, events: list[str], user: User) -> tuple[Webhook, str]:
    """Register an endpoint; returns it and its signing secret, which is shown this once."""
    unknown = sorted(set(events) - set(WebhookEvent.values))
    if unknown or not events:
        said = (
            gettext("events: choose among %(events)s (unknown: %(unknown)s)")
            if unknown
            else gettext("events: choose among %(events)s")
        )
        raise WebhookRefused(said % {"events": ", ".join(WebhookEvent.values), "unknown": ", ".join(unknown)})
    secret = secrets.token_hex(32)
    webhook = Webhook.objects.create(
        project=project, url=_check_url(url), events=sorted(set(events)), secret=secret, created_by=user
    )
    return webhook, secret


@atomic_with_retry
def webhook_delete(*, webhook: Webhook) -> None:
    webhook.delete()


def _enqueue(delivery: Delivery) -> None:
    """The delivery's job, queued once the delivery's row is committed (``studio.engine.job_enqueue``)."""
    job_enqueue(DeliveryJob.objects.create(delivery=delivery))


@atomic_with_retry
def event_emit(*, project: Project, event: str, payload: dict | Callable[[], dict]) -> list[Delivery]:
    """One delivery per active endpoint of ``project`` that wants ``event``, sent by a worker after commit: the
    request or job that caused the event never waits for a receiver. ``payload`` may be the function that makes it,
    called only when an endpoint wants the event: a job's payload names a path, and the first path a process reverses
    loads every view of the studio (a quarter of a second of a command-line export, for no one without endpoints)."""
    wanting = [webhook for webhook in Webhook.objects.filter(project=project, active=True) if event in webhook.events]
    if not wanting:
        return []
    body = {
        "event": event,
        "project": {"id": project.pk, "name": project.name},
        "created_at": timezone.now().isoformat(),
        **(payload() if callable(payload) else payload),
    }
    deliveries = []
    for webhook in wanting:
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


@dataclass(frozen=True)
class AttemptOutcome:
    """What a delivery's job does next: done (``delivered`` or given up), or run again in ``retry_in_s`` seconds,
    ``waiting`` saying why (shown on the queued job)."""

    delivered: bool = False
    retry_in_s: float | None = None
    waiting: str = ""


def _slot_expired_before() -> datetime.datetime:
    # A slot is held at most one attempt's deadline; one held longer belonged to a worker that was killed mid-attempt.
    return timezone.now() - datetime.timedelta(seconds=settings.WEBHOOKS_DEADLINE_S + 5)


@atomic_with_retry
def delivery_slot_take(*, delivery_id: int) -> Delivery | str:
    """Take one of the delivery's endpoint's ``WEBHOOKS_ENDPOINT_CONCURRENCY`` slots for an attempt. Returns the
    delivery (slot held, its endpoint read with it) or why it may not be sent now: ``"done"`` (delivered or given
    up), ``"paused"`` (the endpoint's breaker is open), ``"busy"`` (its slots are taken)."""
    webhook_id = Delivery.objects.filter(pk=delivery_id).values_list("webhook_id", flat=True).first()
    if webhook_id is None:
        return "done"  # the endpoint was removed with its log
    # The endpoint's row is the lock the slots are counted under: two workers cannot both take the last slot.
    webhook = Webhook.objects.select_for_update().filter(pk=webhook_id).first()
    delivery = Delivery.objects.filter(pk=delivery_id).first()
    if webhook is None or delivery is None or delivery.status != DeliveryStatus.PENDING:
        return "done"
    if webhook.paused_until and webhook.paused_until > timezone.now():
        return "paused"
    if delivery.sending_since and delivery.sending_since >= _slot_expired_before():
        return "busy"  # a second message for it (a resend of the pending ones) while its attempt runs
    busy = (
        Delivery.objects.filter(webhook=webhook, sending_since__gte=_slot_expired_before())
        .exclude(pk=delivery.pk)
        .count()
    )
    if busy >= settings.WEBHOOKS_ENDPOINT_CONCURRENCY:
        return "busy"
    delivery.sending_since = timezone.now()
    delivery.save(update_fields=["sending_since"])
    delivery.webhook = webhook
    return delivery


@atomic_with_retry
def _attempt_record(*, delivery: Delivery, status: int | None, error: str) -> bool:
    """Record an attempt, give its slot back and move the endpoint's breaker; True when the endpoint is paused by it."""
    delivered = not error
    metrics.webhook_deliveries.labels("delivered" if delivered else "failed").inc()
    Delivery.objects.filter(pk=delivery.pk).update(
        attempts=F("attempts") + 1,
        response_status=status,
        last_error=error[:500],
        status=DeliveryStatus.DELIVERED if delivered else DeliveryStatus.PENDING,
        delivered_at=timezone.now() if delivered else None,
        sending_since=None,
    )
    webhook = Webhook.objects.select_for_update().get(pk=delivery.webhook_id)
    if delivered:
        webhook.failures_in_a_row, webhook.paused_until, webhook.pause_reason = 0, None, ""
        webhook.save(update_fields=["failures_in_a_row", "paused_until", "pause_reason"])
        return False
    webhook.failures_in_a_row += 1
    paused = webhook.failures_in_a_row >= settings.WEBHOOKS_BREAKER_FAILURES
    if paused:
        webhook.paused_until = timezone.now() + datetime.timedelta(seconds=settings.WEBHOOKS_PAUSE_S)
        webhook.pause_reason = f"{webhook.failures_in_a_row} deliveries failed in a row, the last: {error}"[:500]
    webhook.save(update_fields=["failures_in_a_row", "paused_until", "pause_reason"])
    return paused


def _seconds_until(moment: datetime.datetime | None) -> float:
    return max(1.0, (moment - timezone.now()).total_seconds()) if moment else 1.0


class _ProcessSlots:
    """At most ``WEBHOOKS_DELIVERIES_PER_PROCESS`` deliveries in flight in this process (0: no bound but the pool's).
    The worker that also runs jobs (runstudio's) has more threads than this, so a slow receiver never takes the
    threads the jobs run on; read from the settings at each take, so a test's override applies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0

    def take(self) -> bool:
        with self._lock:
            bound = settings.WEBHOOKS_DELIVERIES_PER_PROCESS
            if bound and self.in_flight >= bound:
                return False
            self.in_flight += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.in_flight -= 1


PROCESS_SLOTS = _ProcessSlots()


def _busy_retry_s() -> float:
    return settings.WEBHOOKS_BUSY_RETRY_S * (1 + random.random())


def delivery_attempt(*, delivery_id: int) -> AttemptOutcome:
    """POST the delivery, signed, if this process and its endpoint have a free slot and the endpoint is not paused.
    Every attempt is recorded; a delivery waiting for a slot or a pause costs no attempt. Gives up after
    ``WEBHOOKS_MAX_ATTEMPTS`` attempts, otherwise waits base × 3^(attempts - 1)."""
    if not PROCESS_SLOTS.take():
        return AttemptOutcome(retry_in_s=_busy_retry_s(), waiting="Waits for a delivery slot of its worker.")
    try:
        return _attempt_in_process_slot(delivery_id=delivery_id)
    finally:
        PROCESS_SLOTS.give_back()


def _attempt_in_process_slot(*, delivery_id: int) -> AttemptOutcome:
    taken = delivery_slot_take(delivery_id=delivery_id)
    if taken == "done":
        return AttemptOutcome(
            delivered=Delivery.objects.filter(pk=delivery_id, status=DeliveryStatus.DELIVERED).exists()
        )
    if taken == "busy":
        return AttemptOutcome(retry_in_s=_busy_retry_s(), waiting="Waits: its endpoint has every slot in use.")
    if taken == "paused":
        paused_until = Webhook.objects.filter(deliveries=delivery_id).values_list("paused_until", flat=True).first()
        return AttemptOutcome(
            retry_in_s=_seconds_until(paused_until) + random.random(),
            waiting=f"Waits: its endpoint is paused until {paused_until:%Y-%m-%d %H:%M:%S} UTC."
            if paused_until
            else "Waits: its endpoint is paused.",
        )
    assert isinstance(taken, Delivery)
    delivery = taken
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
    except network.DeliveryTimedOut as exc:
        error = f"timed out: {exc}"
    except (http.client.HTTPException, OSError) as exc:
        error = f"{exc.__class__.__name__}: {str(exc)[:300]}"
    paused = _attempt_record(delivery=delivery, status=status, error=error)
    if not error:
        return AttemptOutcome(delivered=True)
    attempts = delivery.attempts + 1
    if attempts >= settings.WEBHOOKS_MAX_ATTEMPTS:
        delivery_give_up(delivery_id=delivery.pk)
        return AttemptOutcome()
    wait = settings.WEBHOOKS_RETRY_BASE_S * 3 ** (attempts - 1)
    if paused:
        wait = max(wait, settings.WEBHOOKS_PAUSE_S)
    return AttemptOutcome(
        retry_in_s=wait,
        waiting=gettext("Try %(attempt)s failed (%(error)s); the next in %(wait)s s.")
        % {"attempt": attempts, "error": error[:200], "wait": f"{wait:g}"},
    )


# --- the delivery's job (studio.engine: the ``delivery`` kind) --------------------------------------------------


def delivery_job_work(job: DeliveryJob) -> str:
    """One run of a delivery's job: a try, or a wait (a slot, a pause, the backoff after a failed try) after which
    the engine runs the job again (``JobDeferred``: no worker thread sleeps through it). Returns the summary once
    delivered; ``JobFailed`` once it gives up after ``WEBHOOKS_MAX_ATTEMPTS`` tries."""
    delivery_lost_try_record(delivery_id=job.pk)
    outcome = delivery_attempt(delivery_id=job.pk)
    if outcome.retry_in_s is not None:
        raise JobDeferred(outcome.retry_in_s, outcome.waiting)
    delivery = Delivery.objects.filter(pk=job.pk).first()
    if delivery is None:
        raise JobFailed(gettext("Not delivered: its endpoint was removed."))
    if delivery.status == DeliveryStatus.DELIVERED:
        return gettext("Delivered on try %(attempt)s (HTTP %(status)s).") % {
            "attempt": delivery.attempts,
            "status": delivery.response_status,
        }
    raise JobFailed(
        gettext("Not delivered: %(count)s tries failed, the last: %(error)s")
        % {"count": delivery.attempts, "error": delivery.last_error}
    )


@atomic_with_retry
def delivery_lost_try_record(*, delivery_id: int) -> bool:
    """Count the try of a run whose worker stopped during it (the receiver may have had it: deliveries are at least
    once, and its ``X-Trace-Studio-Delivery`` id says it is the same delivery). The engine runs a delivery's job one
    run at a time, so an endpoint slot the delivery still holds when a run starts is a stopped run's; it is given
    back. Not counted against the endpoint's breaker: the worker stopped, not the receiver. True when one was found."""
    lost = (
        Delivery.objects.select_for_update()
        .filter(pk=delivery_id, status=DeliveryStatus.PENDING, sending_since__isnull=False)
        .first()
    )
    if lost is None:
        return False
    lost.attempts += 1
    lost.last_error = "its worker stopped during the try"
    lost.sending_since = None
    if lost.attempts >= settings.WEBHOOKS_MAX_ATTEMPTS:
        lost.status = DeliveryStatus.FAILED
    lost.save(update_fields=["attempts", "last_error", "sending_since", "status"])
    return True


def delivery_tries_exhausted(job: DeliveryJob) -> bool:
    """The watchdog's question for a delivery's job whose worker stopped: give up instead of running it again? Only
    when the delivery is still pending with every try spent; a delivered or given-up delivery's job is run once more,
    to end it as its delivery did. (The engine's default, its runs, would count the waits between tries.)"""
    row = Delivery.objects.filter(pk=job.pk).values("status", "attempts").first()
    return (
        row is not None
        and row["status"] == DeliveryStatus.PENDING
        and row["attempts"] >= settings.WEBHOOKS_MAX_ATTEMPTS
    )


def delivery_job_ended(*, job: DeliveryJob) -> None:
    """A delivery's job ended without its work saying so (cancelled, failed by the watchdog, not queued): its pending
    delivery ends failed, with the job's words, so the log never shows a delivery pending for ever."""
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        Delivery.objects.filter(pk=job.pk, status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.FAILED, last_error=job.message[:500], sending_since=None
        )


def delivery_cancel(*, delivery: Delivery) -> tuple[bool, str]:
    """Stop a pending delivery: a waiting one ends now; a try under way ends (the receiver may still get it), and
    no other follows. Returns (changed, what happened, in words)."""
    job = DeliveryJob.objects.filter(pk=delivery.pk).first()
    if job is not None:
        return job_cancel(job)
    # A delivery without a job: its row was made outside event_emit and delivery_resend.
    changed = Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING).update(
        status=DeliveryStatus.FAILED, last_error="Cancelled on request."
    )
    return bool(changed), "Cancelled." if changed else f"Nothing to cancel: the delivery is {delivery.status}."


@atomic_with_retry
def webhook_resume(*, webhook: Webhook) -> Webhook:
    """The lead's "Try again now": the pause ends, and the endpoint's waiting deliveries are sent now (their jobs
    are due now; one whose try is under way goes on)."""
    Webhook.objects.filter(pk=webhook.pk).update(paused_until=None, failures_in_a_row=0, pause_reason="")
    webhook.refresh_from_db()
    for delivery in Delivery.objects.filter(webhook=webhook, status=DeliveryStatus.PENDING).select_related("job"):
        job = getattr(delivery, "job", None)
        if job is None:
            _enqueue(delivery)
        elif job.status == JobStatus.QUEUED:
            DeliveryJob.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(heartbeat_at=timezone.now())
            job_enqueue(job)
    return webhook


def delivery_give_up(*, delivery_id: int) -> None:
    Delivery.objects.filter(pk=delivery_id).exclude(status=DeliveryStatus.DELIVERED).update(
        status=DeliveryStatus.FAILED
    )
