"""Endpoints a project's leads registered, every delivery made to them (the log the page shows), and each delivery's
job (the engine's row: claim, heartbeat, waits between tries, cancel, end)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from studio.engine import KindJob
from studio.models import JobBase


class WebhookEvent(models.TextChoices):
    BUNDLE_READY = "bundle.ready", _("Bundle ready (an export succeeded)")
    IMPORT_FAILED = "import.failed", _("Import failed")
    PRESCORING_DONE = "prescoring.done", _("Pre-scoring done")
    EVALUATION_DONE = "evaluation.done", _("Checkpoint evaluation done")
    ROUND_ANNOTATED = "round.annotated", _("Round fully annotated (every trace has an accepted answer)")


# The longest endpoint address kept; the registration service refuses a longer one by name.
URL_MAX_CHARS = 500


class Webhook(models.Model):
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=URL_MAX_CHARS)
    events = models.JSONField(default=list, help_text="WebhookEvent values this endpoint receives.")
    # Kept to sign each delivery (HMAC-SHA256); shown to the lead once, when the endpoint is registered.
    secret = models.CharField(max_length=64, editable=False)
    active = models.BooleanField(default=True)
    # The circuit breaker (services.delivery_attempt): failed attempts in a row, and while ``paused_until`` is in the
    # future no delivery contacts the endpoint; the lead sees why on the webhooks page.
    failures_in_a_row = models.PositiveIntegerField(default=0)
    paused_until = models.DateTimeField(null=True, blank=True)
    pause_reason = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.project} → {self.url}"

    @property
    def is_paused(self) -> bool:
        return self.paused_until is not None and self.paused_until > timezone.now()


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class Delivery(models.Model):
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # Set while an attempt holds one of its endpoint's delivery slots (services.delivery_slot_take); a slot older
    # than the attempt's deadline belonged to a killed worker and is free again.
    sending_since = models.DateTimeField(null=True, blank=True)
    resent_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.event} #{self.pk}: {self.status}"


class DeliveryJob(KindJob, JobBase):
    """A delivery run by the job engine (the ``delivery`` kind, webhooks/jobs.py): each run is one try, or a wait for
    a slot or the end of a pause, and the job goes back to the queue between them (``studio.jobs.JobDeferred``).
    Keyed by its delivery: a delivery's id is its job's, so a task queued with a delivery id (the name older releases
    used) runs it. The delivery stays the log people read; the job is how it is run."""

    delivery = models.OneToOneField(Delivery, primary_key=True, on_delete=models.CASCADE, related_name="job")

    def __str__(self) -> str:
        return f"delivery job #{self.pk}: {self.status}"
