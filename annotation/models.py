"""Annotations of traces, the leases that hand traces out, and the audit trail of every change."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.engine import KindJob
from studio.models import JobBase


class AnnotationStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class Verdict(models.TextChoices):
    UNSET = "", "Not decided"
    ERROR = "error", "First error at τ"
    NO_ERROR = "no_error", "No error"
    UNUSABLE = "unusable", "Unusable"


class Annotation(models.Model):
    """One annotator's reading of one trace (verdict, τ, correction, post-reflection, labels)."""

    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="annotations")
    # The trace's project, copied when the annotation is made (a trace never changes project): the dashboards
    # and agreement scan a project's annotations, and a join through traces would cost every one of those scans.
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="annotations", editable=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotations")
    status = models.CharField(
        max_length=16, choices=AnnotationStatus.choices, default=AnnotationStatus.DRAFT, db_index=True
    )
    version = models.PositiveIntegerField(
        default=1, help_text="Bumped by every save; a save based on an older one is refused."
    )

    verdict = models.CharField(max_length=16, choices=Verdict.choices, default=Verdict.UNSET, blank=True)
    tau = models.PositiveIntegerField(null=True, blank=True, help_text="1-based index of the first erroneous step.")
    error_category = models.CharField(max_length=80, blank=True)
    note = models.TextField(blank=True)
    unusable_reason = models.TextField(blank=True)

    corrected_thought = models.TextField(blank=True)
    corrected_action = models.TextField(blank=True, help_text="Canonical UI-TARS action string a*_τ.")
    reflection_thought = models.TextField(blank=True, help_text="t*_{τ+1}: acknowledges the mistake.")
    reflection_action = models.TextField(blank=True, help_text="a*_{τ+1} on o_{τ+1}.")
    no_reflection_reason = models.TextField(blank=True, help_text="Why there is no post-reflection step.")
    # The structured editor's state of both actions, kept even while incomplete (a click without a
    # point yet does not parse), so a reload restores exactly what the annotator had built.
    editor_state = models.JSONField(default=dict, blank=True)

    time_spent_s = models.PositiveIntegerField(default=0)
    is_adjudicated = models.BooleanField(default=False, help_text="The lead's resolution of a disagreement.")
    review_comment = models.TextField(blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="reviewed_annotations"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [models.UniqueConstraint(fields=["trace", "annotator"], name="one_annotation_per_annotator")]
        indexes = [
            models.Index(fields=["status", "submitted_at"]),
            models.Index(fields=["annotator", "status"]),
            models.Index(fields=["project", "submitted_at"]),
            models.Index(fields=["project", "status"]),
        ]

    def __str__(self):
        return f"annotation {self.pk} of trace {self.trace_id} by {self.annotator_id} ({self.status})"


class QueueRequest(models.Model):
    """A lead's request that a trace get more answers than its project's overlap gives it, first in line: a slice of
    corrections sent back to the queue for another reading (``annotation.overlap`` adds ``extra_answers`` to the
    trace's quota; the hand-out offers requested traces before the others)."""

    trace = models.OneToOneField("traces.Trace", on_delete=models.CASCADE, related_name="queue_request")
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    extra_answers = models.PositiveSmallIntegerField(default=1)
    reason = models.CharField(max_length=200, blank=True, help_text="Why, in the lead's words: e.g. the slice's name.")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["project", "created_at"])]


class Lease(models.Model):
    """A time-limited claim of a trace by one annotator, renewed by the page's heartbeat."""

    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="leases")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="leases")
    created_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    release_reason = models.CharField(
        max_length=32, blank=True
    )  # submitted, skipped, closed, released-by-lead, expired
    # The workspace page that holds the lease (a random id per page load): the farewell beacon of a page that was
    # reloaded or replaced must not close the lease its successor holds now.
    page = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One open lease per annotator and trace; the hand-out query keeps traces to their quota.
            models.UniqueConstraint(
                fields=["trace", "user"],
                condition=models.Q(released_at__isnull=True),
                name="one_open_lease_per_user_trace",
            )
        ]
        indexes = [models.Index(fields=["trace", "released_at", "expires_at"])]


class AuditEvent(models.Model):
    """Append-only: every annotation transition and edit, written in the same transaction as the change."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="audit_events")
    # The annotation's project and annotator, copied: review figures read a project's decisions on each
    # annotator's work from this table alone, which autosave edits make by far the largest.
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+", editable=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", editable=False)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    kind = models.CharField(max_length=24)  # transition | edit
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16, blank=True)
    changes = models.JSONField(default=dict, blank=True, help_text="field -> [before, after]")
    comment = models.TextField(blank=True)
    # The annotation's version once this change was written (the number the Versions panel and its restore name);
    # null on rows recorded before it was kept, whose number annotation.selectors.annotation_versions counts back.
    version = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(
                fields=["project", "at"], condition=models.Q(kind="transition"), name="audit_project_transition_idx"
            ),
        ]


class AlternativesJob(KindJob, JobBase):
    """k replies of the configured checkpoint sampled at one step's state s_i of an annotation's trace (the gpu
    queue). The replies are stored per (step, weights hash, settings) in StepAlternative and re-used: a job that finds
    them already there samples nothing."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="alternatives_jobs")
    step = models.ForeignKey("traces.Step", on_delete=models.CASCADE, related_name="+")
    model_dir = models.CharField(max_length=500, help_text="The checkpoint's local directory on the gpu workers.")
    model_name = models.CharField(max_length=200, blank=True)
    weights_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the weight files.")
    settings = models.JSONField(default=dict, blank=True, help_text="Sampling settings (k, temperature, top_p, …).")
    settings_key = models.CharField(max_length=64, help_text="sha256 of the settings that change the replies.")
    reused = models.BooleanField(default=False, help_text="The replies were already stored; nothing was sampled.")


class StepAlternative(models.Model):
    """One sampled reply of a checkpoint at a step, with its parse by the project's grammar."""

    step = models.ForeignKey("traces.Step", on_delete=models.CASCADE, related_name="alternatives")
    weights_hash = models.CharField(max_length=64)
    model_name = models.CharField(max_length=200, blank=True)
    settings_key = models.CharField(max_length=64)
    settings = models.JSONField(default=dict, blank=True)
    number = models.PositiveSmallIntegerField(help_text="1..k: the marker's number on the screenshot.")
    reply = models.TextField(help_text="The reply as the model wrote it.")
    actions = models.JSONField(
        default=list, blank=True, help_text="The reply's actions (grammar JSON, the project's convention); [] unparsed."
    )
    new_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["step_id", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["step", "weights_hash", "settings_key", "number"], name="unique_alternative_per_sampling"
            )
        ]

    @property
    def parsed(self) -> bool:
        return bool(self.actions)


class AlternativeVerdict(models.TextChoices):
    WRONG = "wrong", "Wrong (a DPO rejected side)"
    TAKEN = "taken", "Taken as the correction's starting point"


class AlternativeMark(models.Model):
    """What an annotator said of one alternative in their annotation: wrong, or taken as the starting point."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="alternative_marks")
    alternative = models.ForeignKey(StepAlternative, on_delete=models.CASCADE, related_name="marks")
    verdict = models.CharField(max_length=8, choices=AlternativeVerdict.choices)
    marked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    marked_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["alternative__number"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "alternative"], name="one_mark_per_alternative"),
            models.UniqueConstraint(
                fields=["annotation"], condition=models.Q(verdict="taken"), name="one_taken_alternative"
            ),
        ]
