"""Annotations of traces, the leases that hand traces out, and the audit trail of every change."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import MD5
from django.utils.translation import gettext_lazy as _

from studio.engine import KindJob
from studio.models import JobBase


class AnnotationStatus(models.TextChoices):
    DRAFT = "draft", _("Draft")
    SUBMITTED = "submitted", _("Submitted")
    ACCEPTED = "accepted", _("Accepted")
    REJECTED = "rejected", _("Rejected")


class Verdict(models.TextChoices):
    UNSET = "", _("Not decided")
    ERROR = "error", _("First error at τ")
    NO_ERROR = "no_error", _("No error")
    UNUSABLE = "unusable", _("Unusable")


class AnnotationKind(models.TextChoices):
    """Why an annotator answered a trace. Only production answers are the studio's work: gold and qualification
    answers are scored against a reference (``annotation.quality``) and never exported, reviewed, counted as work
    or compared for agreement."""

    PRODUCTION = "production", _("Production")
    GOLD = "gold", _("Gold (scored against its reference)")
    QUALIFICATION = "qualification", _("Qualification (scored, with feedback)")


# The answers the quality dashboard reads (annotation.dashboards.DONE and annotation.workflow.STANDING, spelt here:
# the model cannot import the modules that import it), for its partial indexes.
DONE_PRODUCTION = models.Q(
    kind=AnnotationKind.PRODUCTION,
    status__in=[AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED],
)
STANDING_PRODUCTION = models.Q(
    kind=AnnotationKind.PRODUCTION, status__in=[AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED]
)
STANDING_CORRECTION = STANDING_PRODUCTION & models.Q(verdict=Verdict.ERROR) & ~models.Q(corrected_action="")


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
    # Set once by the hand-out that made the row: a gold trace handed out among the others, or one of a
    # qualification set. The workspace and its API never show it for gold (a gold trace looks like any other).
    # db_default: the previous release inserts rows without the column while this release's migrations are applied.
    kind = models.CharField(
        max_length=16,
        choices=AnnotationKind.choices,
        default=AnnotationKind.PRODUCTION,
        db_default=AnnotationKind.PRODUCTION,
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
            # The quality dashboard's reads, each answered from its index alone (no table rows) on PostgreSQL:
            # answers done by day with the columns its verdicts and times group by,
            models.Index(
                fields=["project", "submitted_at"],
                include=["annotator", "verdict", "time_spent_s"],
                condition=DONE_PRODUCTION,
                name="annotation_done_day_idx",
            ),
            # standing corrections by day (how many each annotator wrote) and by step and text (which are the
            # recorded action: the text's hash finds the few equal ones among the many, then the text is compared),
            models.Index(
                fields=["project", "submitted_at"],
                include=["annotator"],
                condition=STANDING_CORRECTION,
                name="annotation_correction_idx",
            ),
            models.Index(
                "trace",
                "tau",
                MD5("corrected_action"),
                condition=STANDING_CORRECTION,
                name="annotation_correction_text_idx",
            ),
            # and a trace's standing answers in order (agreement pairs the first two).
            models.Index(
                fields=["trace", "id"],
                include=["submitted_at"],
                condition=STANDING_PRODUCTION,
                name="annotation_standing_trace_idx",
            ),
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
    WRONG = "wrong", _("Wrong (a DPO rejected side)")
    TAKEN = "taken", _("Taken as the correction's starting point")


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


# --- Quality control: gold traces, their scores, qualification, paused queues (annotation.quality) ----------------


class QualitySettings(models.Model):
    """A project's quality-control settings (one row per project, made on first change; ``quality.selectors.
    quality_settings`` answers the defaults for a project without one). Fractions are 0..1."""

    project = models.OneToOneField(
        "traces.Project", on_delete=models.CASCADE, primary_key=True, related_name="quality_settings"
    )
    gold_every = models.PositiveIntegerField(
        default=0, help_text="One trace in this many of each annotator's queue is a gold trace (0: none)."
    )
    point_tolerance = models.FloatField(
        default=0.05,
        help_text="A gold point outside the reference's element box (or with no box) still counts within this "
        "distance, as a fraction of the screen (sqrt((dx/W)^2 + (dy/H)^2)).",
    )
    qualification_size = models.PositiveIntegerField(
        default=0, help_text="Gold traces a new member answers before the real queue opens (0: no qualification)."
    )
    qualification_pass_mark = models.FloatField(
        default=0.8, help_text="Share of the qualification's answers that must be right to pass."
    )
    min_gold_accuracy = models.FloatField(default=0.8, help_text="Flag an annotator whose gold accuracy is below.")
    min_gold_answers = models.PositiveIntegerField(
        default=5, help_text="Gold answers an annotator needs before their accuracy is judged."
    )
    min_median_seconds = models.PositiveIntegerField(
        default=10, help_text="Flag an annotator whose median time per trace is below (too fast)."
    )
    max_no_error_streak = models.PositiveIntegerField(
        default=15, help_text="Flag an annotator whose latest answers are this many 'no error' in a row."
    )
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")


class GoldTrace(models.Model):
    """A trace whose accepted answer (``reference``) is the right answer its gold answers are scored against."""

    trace = models.OneToOneField("traces.Trace", on_delete=models.CASCADE, related_name="gold")
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+", editable=False)
    reference = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="+")
    # The reference's version the scores were made against: an accepted answer changed by adjudication, or another
    # answer chosen, re-scores the gold answers (``quality.services.gold_rescore``).
    reference_version = models.PositiveIntegerField()
    marked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    marked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["project", "id"])]

    def __str__(self):
        return f"gold trace {self.trace_id} (reference {self.reference_id})"


class QualificationStatus(models.TextChoices):
    OPEN = "open", _("In progress")
    PASSED = "passed", _("Passed")
    FAILED = "failed", _("Failed")


class QualificationAttempt(models.Model):
    """One try of a project's qualification set by one member: ``size`` gold traces, answered with feedback after
    each; passed when the share right reaches ``pass_mark`` (both copied from the settings when it starts)."""

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=8, choices=QualificationStatus.choices, default=QualificationStatus.OPEN)
    size = models.PositiveIntegerField()
    pass_mark = models.FloatField()
    answered = models.PositiveIntegerField(default=0)
    correct = models.PositiveIntegerField(default=0)
    allowed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )  # the lead who allowed this attempt (none: the first)
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project_id", "annotator_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "annotator", "number"], name="one_attempt_number"),
            models.UniqueConstraint(
                fields=["project", "annotator"], condition=models.Q(status="open"), name="one_open_attempt"
            ),
        ]


class GoldScore(models.Model):
    """A gold or qualification answer scored against its trace's reference, part by part (None: the part does not
    apply to the reference). Kept when the gold trace goes (``gold`` null, ``gold_removed_at`` set): the scores it
    gave stay, marked as such."""

    annotation = models.OneToOneField(Annotation, null=True, on_delete=models.SET_NULL, related_name="gold_score")
    gold = models.ForeignKey(GoldTrace, null=True, on_delete=models.SET_NULL, related_name="scores")
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=AnnotationKind.choices)
    attempt = models.ForeignKey(
        QualificationAttempt, null=True, blank=True, on_delete=models.SET_NULL, related_name="scores"
    )
    # Copied, so a score still names its trace after the gold trace (or the trace) is deleted.
    trace_id_kept = models.BigIntegerField()
    external_id = models.CharField(max_length=255, blank=True)
    reference_id_kept = models.BigIntegerField()
    reference_version = models.PositiveIntegerField()
    verdict_ok = models.BooleanField(null=True)
    tau_exact_ok = models.BooleanField(null=True)
    tau_within_one_ok = models.BooleanField(null=True)
    category_ok = models.BooleanField(null=True)
    action_type_ok = models.BooleanField(null=True)
    point_ok = models.BooleanField(null=True)
    reflection_ok = models.BooleanField(null=True)
    correct = models.BooleanField(help_text="Every part that applies is right (τ exact; ±1 is reported apart).")
    # The part-by-part comparison as the page shows it (quality.scoring.Comparison.as_dict).
    comparison = models.JSONField(default=dict)
    submitted_at = models.DateTimeField()
    scored_at = models.DateTimeField(auto_now_add=True)
    rescored_at = models.DateTimeField(null=True, blank=True)
    # The comparison before the last re-score (the dashboard shows what changed).
    previous = models.JSONField(null=True, blank=True)
    gold_removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "annotator", "kind"]),
            models.Index(fields=["project", "submitted_at"]),
        ]


class GoldEvent(models.Model):
    """Append-only: a gold trace marked, its reference changed (with the re-score's counts), or the gold removed."""

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    gold = models.ForeignKey(GoldTrace, null=True, on_delete=models.SET_NULL, related_name="events")
    trace_id_kept = models.BigIntegerField()
    external_id = models.CharField(max_length=255, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)
    kind = models.CharField(max_length=24)  # marked | reference_changed | rescored | removed
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["project", "at"])]


class QueuePause(models.Model):
    """A lead paused an annotator's queue in a project: the hand-out gives them nothing until it is lifted."""

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    paused_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    paused_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "annotator"], name="one_pause_per_annotator")]


class QueueTally(models.Model):
    """How many new traces the hand-out gave an annotator in a project (production and gold, not qualification):
    the position that decides, deterministically, which of them is a gold trace (one in ``gold_every``)."""

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    handed_out = models.PositiveIntegerField(default=0)
    # "No error" answers in a row among the annotator's latest production submits (kept at submit, so the quality
    # dashboard reads a number instead of ordering every answer), and the longest such run.
    no_error_streak = models.PositiveIntegerField(default=0)
    longest_no_error_streak = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "annotator"], name="one_tally_per_annotator")]
