"""Projects, traces, steps and screenshots. Behaviour lives in services.py / selectors.py."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from studio.engine import KindJob
from studio.models import JobBase
from traces.prompt_settings import PROMPT_DEFAULTS
from traces.vocabulary import ERROR_CATEGORIES


def default_error_categories():
    return list(ERROR_CATEGORIES)


class Platform(models.TextChoices):
    DESKTOP = "desktop", _("Desktop")
    MOBILE = "mobile", _("Mobile")
    WEB = "web", _("Web")


class CoordinateConvention(models.TextChoices):
    RELATIVE_1000 = "relative-1000", _("Relative 0–1000 (UI-TARS v1, Qwen2-VL)")
    SMART_RESIZE_PIXELS = "smart-resize-pixels", _("Smart-resized pixels (UI-TARS-1.5, Qwen2.5-VL)")
    SCREEN_PIXELS = "screen-pixels", _("Screen pixels")


class Project(models.Model):
    name = models.CharField(max_length=120, unique=True)
    description = models.TextField(blank=True)
    platform = models.CharField(max_length=16, choices=Platform.choices, default=Platform.DESKTOP)
    coordinate_convention = models.CharField(
        max_length=24, choices=CoordinateConvention.choices, default=CoordinateConvention.RELATIVE_1000
    )
    max_pixels = models.PositiveIntegerField(
        default=PROMPT_DEFAULTS.max_pixels, help_text="Pixel budget of smart_resize (smart-resize-pixels projects)."
    )
    system_prompt = models.TextField(default=PROMPT_DEFAULTS.system_prompt)
    prompt_template = models.TextField(default=PROMPT_DEFAULTS.prompt_template)
    prompt_language = models.CharField(max_length=40, default=PROMPT_DEFAULTS.prompt_language)
    history_window = models.PositiveSmallIntegerField(
        default=PROMPT_DEFAULTS.history_window, help_text="Screenshots sent as images (N)."
    )
    history_full_images = models.PositiveSmallIntegerField(
        default=PROMPT_DEFAULTS.history_full_images,
        help_text="The image budget: a prompt's last k screenshots at max_pixels, older ones at history_max_pixels "
        "(0: every screenshot at max_pixels).",
    )
    history_max_pixels = models.PositiveIntegerField(
        default=PROMPT_DEFAULTS.history_max_pixels,
        help_text="Pixel budget of the older history screenshots under the image budget.",
    )
    box_tokens = models.BooleanField(
        default=PROMPT_DEFAULTS.box_tokens, help_text="Wrap coordinates in <|box_start|>…<|box_end|>."
    )
    error_categories = models.JSONField(default=default_error_categories)
    lease_idle_minutes = models.PositiveSmallIntegerField(default=15)
    double_annotation_share = models.FloatField(
        default=0.0, help_text="Share of traces answered by several annotators, for agreement (0 to 1)."
    )
    double_annotation_annotators = models.PositiveSmallIntegerField(
        default=2, help_text="Distinct annotators each shared trace goes to (2 or more)."
    )
    blind_prescoring = models.BooleanField(default=False, help_text="Hide model suggestions from annotators.")
    text_language = models.CharField(
        max_length=35,
        blank=True,
        default="",
        db_default="",
        help_text="The language its traces are written in (a BCP 47 tag: zh, ja, ar); empty: each trace's own, else "
        "the script of its instruction (traces.languages).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="unique_membership")]


def screenshot_path(instance: Screenshot, filename: str) -> str:
    return f"screenshots/{instance.sha256[:2]}/{instance.sha256}.{instance.format.lower()}"


def thumbnail_path(instance: Screenshot, filename: str) -> str:
    return f"thumbnails/{instance.sha256[:2]}/{instance.sha256}.webp"


class Screenshot(models.Model):
    """An image stored once by the sha256 of its bytes, whatever trace or project uses it."""

    sha256 = models.CharField(max_length=64, unique=True)
    image = models.FileField(upload_to=screenshot_path, max_length=200)
    format = models.CharField(max_length=8)  # PNG, JPEG, WEBP
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    byte_size = models.PositiveIntegerField()
    thumbnail = models.FileField(upload_to=thumbnail_path, max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.sha256[:12]} {self.width}×{self.height} {self.format}"

    @property
    def image_url(self) -> str:
        return reverse("screenshot-file", args=[self.sha256, "image"])

    @property
    def thumbnail_url(self) -> str:
        return reverse("screenshot-file", args=[self.sha256, "thumbnail"])


class Round(models.Model):
    """One run of a checkpoint over a project's tasks: the traces it produced are annotated together, and the round
    dashboard sets its figures beside the previous rounds' (did checkpoint n+1 make fewer or other mistakes?)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rounds")
    name = models.CharField(max_length=120, help_text="How people and runners name the round, unique in its project.")
    checkpoint = models.CharField(max_length=200, help_text="The checkpoint whose runs produced the round's traces.")
    weights_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the checkpoint's weight files.")
    ran_at = models.DateTimeField(help_text="When the checkpoint ran the round's tasks.")
    annotated_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When every trace of the round first had an accepted answer (the round.annotated webhook event).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "ran_at", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_round_name_per_project")]

    def __str__(self):
        return f"{self.project_id}/{self.name}"


class Outcome(models.TextChoices):
    SUCCESS = "success", _("Success")
    FAILURE = "failure", _("Failure")
    UNKNOWN = "unknown", _("Unknown")


class Trace(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="traces")
    external_id = models.CharField(max_length=255, help_text="Stable id from the source; makes imports idempotent.")
    instruction = models.TextField()
    source = models.CharField(max_length=40, help_text="Importer format, e.g. native, uitars-messages, osworld.")
    source_path = models.CharField(max_length=500, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.UNKNOWN)
    metadata = models.JSONField(default=dict, blank=True)
    final_screenshot = models.ForeignKey(
        Screenshot,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The screen after the last action, where the runner kept it.",
    )
    step_count = models.PositiveIntegerField(default=0)
    # The convention the recorded points are in (from the importer where the source says, an explicit choice at
    # import, else the project's). Pages, pre-scoring and exports convert from it; corrections and exports are in the
    # project's convention. Empty only before save(): a trace made without one takes its project's.
    coordinate_convention = models.CharField(max_length=24, choices=CoordinateConvention.choices)
    # How many annotations of this trace stand (submitted or accepted), kept by the annotation state machine:
    # agreement reads only traces with two or more instead of counting a whole project's annotations per read.
    standing_annotations = models.PositiveIntegerField(default=0, editable=False)
    import_job = models.ForeignKey("ImportJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="traces")
    # The round whose checkpoint produced the trace. Empty for traces that came before rounds existed, or from a
    # source that belongs to none: there is no round to give them afterwards, so the column stays nullable.
    # RESTRICT: a round cannot go while traces name it, but a project's deletion takes both.
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.RESTRICT, related_name="traces")
    # A runner is still pushing its steps one by one (docs/rounds.md): the trace is incomplete, so it stays out of
    # the annotation queue and of pre-scoring until the runner ends it.
    receiving = models.BooleanField(
        default=False, help_text="Still receiving steps from its runner; not annotated or pre-scored until ended."
    )
    # What the trace is (traces/identity.py): sha256 of its instruction and each step's screenshot hash and action
    # text as received, whatever its folder or zip was called. The same content again is "already present" and
    # stores nothing; not unique, since traces stored before it existed may repeat one (the trace_duplicates command
    # lists them). Empty while the trace is receiving steps from its runner (set when it is ended).
    content_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    # A branch (docs/runners.md): the environment restored to step ``branch_at`` of ``parent`` and run on from there
    # with another action. Its steps 1..branch_at-1 are the parent's, as rows naming the parent's stored screenshots
    # (stored once by content, never copied); its own steps start at ``branch_at``. SET_NULL: a branch outlives a
    # deleted parent as a trace of its own.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="branches", editable=False
    )
    branch_at = models.PositiveIntegerField(
        null=True, blank=True, editable=False, help_text="The parent's step this branch differs from (τ)."
    )
    # A replay's branch waits outside the annotation queue until a lead sends it there (a failed branch worth reading).
    held_from_queue = models.BooleanField(
        default=False, db_default=False, editable=False, help_text="Not handed out to annotators (a replay's branch)."
    )
    language = models.CharField(
        max_length=35,
        blank=True,
        default="",
        db_default="",
        help_text="The language of its text (BCP 47), put on the pages' text as lang; empty: the page's own.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["project", "external_id"], name="unique_trace_per_project")]
        indexes = [
            models.Index(fields=["project", "content_hash"], name="trace_content_idx"),
            models.Index(fields=["project", "created_at"]),
            models.Index(
                fields=["project"], condition=models.Q(standing_annotations__gte=2), name="trace_multi_annotated_idx"
            ),
        ]

    def save(self, *args, **kwargs):
        if not self.coordinate_convention:
            self.coordinate_convention = self.project.coordinate_convention
        super().save(*args, **kwargs)

    def __str__(self):
        return f"{self.project_id}/{self.external_id}"


class Step(models.Model):
    """Step i of a trace: the observation o_i (before acting), the thought t_i and the action a_i."""

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField(help_text="1-based position in the trace.")
    screenshot = models.ForeignKey(Screenshot, null=True, blank=True, on_delete=models.PROTECT, related_name="steps")
    thought = models.TextField(blank=True)
    reflection = models.TextField(blank=True)
    action_summary = models.TextField(blank=True)
    action_text = models.TextField(blank=True, help_text="The action part of the reply, as recorded.")
    raw_response = models.TextField(blank=True, help_text="The whole model reply, as recorded.")
    parsed_actions = models.JSONField(default=list, blank=True)
    parse_error = models.TextField(blank=True, help_text="Why the recorded action does not parse; kept, never dropped.")
    off_screen_point = models.TextField(
        blank=True,
        help_text="Which recorded point lies outside the screenshot in the trace's convention (empty: none, or no "
        "screenshot to measure); set at import, never trained on unless an annotator corrected the step.",
    )
    human_edited_response = models.TextField(blank=True, help_text="A human-corrected reply kept by the source.")
    context = models.JSONField(default=dict, blank=True, help_text="Plans, evaluations and other source context.")

    class Meta:
        ordering = ["trace_id", "index"]
        constraints = [models.UniqueConstraint(fields=["trace", "index"], name="unique_step_index")]

    def __str__(self):
        return f"{self.trace_id}#{self.index}"


class ImportJob(KindJob, JobBase):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    upload = models.CharField(max_length=500, help_text="Storage name of the uploaded archive, or a server path.")
    upload_is_server_path = models.BooleanField(default=False)
    original_name = models.CharField(max_length=255, blank=True)
    format = models.CharField(max_length=32, blank=True, help_text="Blank: detect.")
    traces_imported = models.PositiveIntegerField(default=0)
    traces_skipped = models.PositiveIntegerField(default=0)
    traces_failed = models.PositiveIntegerField(default=0)
    steps_imported = models.PositiveIntegerField(default=0)
    screenshots_stored = models.PositiveIntegerField(default=0)
    unparsed_actions = models.PositiveIntegerField(default=0)
    off_screen_steps = models.PositiveIntegerField(default=0, help_text="Imported steps with a point off the screen.")
    # The convention of the uploaded traces' points when the uploader says so; empty: the source's own, else the
    # project's.
    coordinate_convention = models.CharField(
        max_length=24, choices=CoordinateConvention.choices, blank=True, default=""
    )

    # The round every trace this import creates is put in (empty: none).
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.RESTRICT, related_name="import_jobs")

    # When the uploaded archive was deleted from storage (docs/deploy.md, "Disk"); empty while it is kept.
    upload_removed_at = models.DateTimeField(null=True, blank=True)

    # The sharded import's plan (traces.services.import_plan_make): the format read, the name of the folder the
    # traces are read from, the storage names of the shards' archive parts, the problems met unpacking.
    plan = models.JSONField(default=dict, blank=True)


class TraceDeletion(models.Model):
    """The record a deleted trace leaves behind: who deleted what, when and why (the trace, its steps, its
    annotations and their audit are gone with it; shared screenshots stay)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="trace_deletions")
    trace_id = models.PositiveIntegerField()
    external_id = models.CharField(max_length=500)
    instruction = models.TextField(blank=True)
    step_count = models.PositiveIntegerField(default=0)
    annotation_count = models.PositiveIntegerField(default=0)
    deleted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField()
    deleted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-deleted_at", "-id"]
