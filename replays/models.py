"""Replays: a runner restores a trace's environment at step τ, runs the annotator's corrected action there and lets
its agent go on; the branch it pushes, and the environment's verdict, say whether the correction works."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class ReplayStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    CLAIMED = "claimed", _("Claimed by a runner")
    SUCCEEDED = "succeeded", _("Replayed")  # the environment's verdict is kept, success or not
    FAILED = "failed", _("Failed")  # the runner could not replay it (its words are kept)
    TIMED_OUT = "timed_out", _("Timed out")
    CANCELLED = "cancelled", _("Cancelled")


# A request in one of these is over: it is claimed, pushed to or finished no more.
REPLAY_ENDED = (ReplayStatus.SUCCEEDED, ReplayStatus.FAILED, ReplayStatus.TIMED_OUT, ReplayStatus.CANCELLED)


class ReplayPolicy(models.Model):
    """A project's replay settings: whether every accepted correction is replayed, and the clocks."""

    project = models.OneToOneField("traces.Project", on_delete=models.CASCADE, related_name="replay_policy")
    every_accepted_correction = models.BooleanField(
        default=False, help_text="Ask for a replay of each correction a lead accepts."
    )
    deadline_s = models.PositiveIntegerField(
        default=3600, help_text="A request not finished this long after it was made times out."
    )
    lease_s = models.PositiveIntegerField(
        default=300,
        help_text="A claim its runner does not renew (each push of its branch does) this long returns its request to the queue.",
    )


class ReplayRequest(models.Model):
    """One replay of one accepted correction: its task, the recorded actions before τ and the corrected action at τ,
    claimed by one runner at a time (a lease), ended by the runner's verdict, a failure in its words, a timeout or a
    cancel."""

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    annotation = models.ForeignKey("annotation.Annotation", on_delete=models.CASCADE, related_name="replay_requests")
    annotation_version = models.PositiveIntegerField()
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="replay_requests")
    tau = models.PositiveIntegerField(help_text="The corrected step, 1-based.")
    # In the trace's coordinate convention, integers: what the runner executes on the restored screen.
    corrected_action = models.TextField()
    corrected_thought = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=ReplayStatus.choices, default=ReplayStatus.QUEUED)
    reason = models.CharField(max_length=16, help_text="Who asked: lead, rule (every accepted correction) or api.")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    deadline_at = models.DateTimeField()
    # The claim: the runner's name, when, and until when it holds (renewed by each push of its branch).
    claimed_by = models.CharField(max_length=200, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    claims = models.PositiveIntegerField(default=0, help_text="How many times a runner claimed it.")
    branch = models.OneToOneField(
        "traces.Trace", null=True, blank=True, on_delete=models.SET_NULL, related_name="replay_of"
    )
    # The environment's verdict (succeeded) or the runner's words (failed), or why it timed out or was cancelled.
    success = models.BooleanField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True)
    message = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project", "status", "id"], name="replay_claim_idx"),
            models.Index(fields=["status", "deadline_at"], name="replay_deadline_idx"),
        ]

    def __str__(self):
        return f"replay {self.pk} of trace {self.trace_id} at step {self.tau} ({self.status})"
