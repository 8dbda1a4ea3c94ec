"""Search entries (one per annotation with a first error: the step card at τ), saved slices and correction clusters.

A ``SearchEntry`` copies what search filters on out of the annotation, its trace and the step at τ, so a search with
facets reads one table: ``document``, ``correction`` and ``actions`` are the searchable texts (lower-cased,
``search_text.py``), the other columns are the facets. It is
kept by ``services.search_entry_refresh`` after every annotation save (``receivers.py``)."""

from __future__ import annotations

from pathlib import PurePath

from django.conf import settings
from django.db import models
from django.db.models import Value

from studio.engine import KindJob
from studio.models import JobBase, job_field_with_db_default


class SearchEntry(models.Model):
    annotation = models.OneToOneField("annotation.Annotation", on_delete=models.CASCADE, related_name="search_entry")
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="+")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+")
    step = models.ForeignKey("traces.Step", null=True, on_delete=models.CASCADE, related_name="+")
    round = models.ForeignKey("traces.Round", null=True, on_delete=models.SET_NULL, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    document = models.TextField(
        help_text="Instruction, recorded and corrected thoughts, actions in words, notes; lower-case "
        "(insights/search_text.py)."
    )
    # db_default (correction, actions): release 0.35 inserts entries without these columns while this release's
    # migrations are applied (docs/deploy.md, "Upgrading").
    correction = models.TextField(
        blank=True,
        default="",
        db_default="",
        help_text="What the annotator wrote, in words: the full-text index weighs it most.",
    )
    actions = models.TextField(
        blank=True,
        default="",
        db_default="",
        help_text="The recorded and corrected actions as people write them (plain form).",
    )
    status = models.CharField(max_length=16)
    verdict = models.CharField(max_length=16, blank=True)
    category = models.CharField(max_length=80, blank=True)
    recorded_type = models.CharField(max_length=40, blank=True)
    corrected_type = models.CharField(max_length=40, blank=True)
    displacement = models.CharField(max_length=24, blank=True, help_text="How far the point moved: a bucket.")
    direction = models.CharField(max_length=8, blank=True, help_text="Which way it moved: left, right, up, down.")
    position = models.CharField(max_length=16, blank=True, help_text="τ/n bucket: early, middle, late.")
    tau = models.PositiveIntegerField(null=True)
    step_count = models.PositiveIntegerField(default=0)
    platform = models.CharField(max_length=40, blank=True)
    app = models.CharField(max_length=120, blank=True, help_text="The app or site, from the trace's metadata or URL.")
    annotation_version = models.PositiveIntegerField(default=0)
    agreement = models.CharField(
        max_length=16,
        blank=True,
        help_text="Against the trace's other handed-in answers: same τ, other τ (or no error); empty: the only one.",
    )

    suspicion = models.FloatField(
        null=True,
        help_text="The pre-score suspicion of the step at τ, from its latest scoring (none: never scored); kept by "
        "triggers on the step suggestions (migration 0009) and by search_entry_refresh.",
    )

    class Meta:
        indexes = [
            models.Index(fields=["project", "status"]),
            models.Index(fields=["project", "category"]),
            # A project's entries newest first, with their ids: a page of a search without words is read from the
            # index alone (an index-only scan on PostgreSQL), however far in.
            models.Index(fields=["project", "annotation", "id"], name="searchentry_project_newest"),
        ]


class Slice(models.Model):
    """A search saved under a name: the query string of the search page, re-run each time it is read."""

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="slices")
    name = models.CharField(max_length=120)
    query = models.JSONField(default=dict, help_text="The search: q and facet filters (field -> value).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="slice_name_unique_in_project")]

    def __str__(self) -> str:
        return self.name


class ClusterRun(KindJob, JobBase):
    """One clustering of a project's accepted corrections, a job of the engine (``insights/jobs.py``: queued,
    running with a heartbeat, cancelled, taken over when its worker dies): the CPU worker's with TF-IDF vectors of
    the texts, the gpu worker's with the pre-scoring model's embeddings where a model is configured
    (``representation``). A project has at most one run queued or running: starting again while one is answers that
    one."""

    class Representation(models.TextChoices):
        TFIDF = "tfidf", "TF-IDF"
        MODEL = "model", "model embeddings"

    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="cluster_runs")
    method = models.CharField(max_length=120, blank=True, help_text="How the text was clustered.")
    representation = models.CharField(
        max_length=16,
        choices=Representation.choices,
        default=Representation.TFIDF,
        help_text="What the texts were compared by: TF-IDF vectors, or the model's embeddings.",
    )
    model_path = models.CharField(
        max_length=500, blank=True, help_text="The checkpoint whose embeddings were compared (representation: model)."
    )
    corrections = models.PositiveIntegerField(default=0)
    # db_default here and on the JobBase fields below: release 0.35 inserts runs without these columns while this
    # release's migrations are applied (docs/deploy.md, "Upgrading"); JobBase keeps none (the other job tables
    # were made with these columns).
    without_words = models.PositiveIntegerField(
        default=0,
        db_default=0,
        help_text="Corrections whose text has no word to compare (empty, or digits and punctuation only): in no "
        "text cluster.",
    )

    attempts = job_field_with_db_default("attempts", 0)
    cancel_requested = job_field_with_db_default("cancel_requested", False)
    errors = job_field_with_db_default("errors", Value([], output_field=models.JSONField()))
    progress_done = job_field_with_db_default("progress_done", 0)
    progress_total = job_field_with_db_default("progress_total", 0)

    class Meta(JobBase.Meta):
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project"],
                condition=models.Q(status__in=["queued", "running"]),
                name="one_unfinished_cluster_run_per_project",
            )
        ]

    @property
    def model_name(self) -> str:
        return PurePath(self.model_path).name if self.model_path else ""


class Cluster(models.Model):
    class Kind(models.TextChoices):
        SIGNATURE = "signature"  # recorded → corrected action type, displacement, category
        TEXT = "text"  # the corrected thoughts and notes: TF-IDF or the model's embeddings (the run says which)

    run = models.ForeignKey(ClusterRun, on_delete=models.CASCADE, related_name="clusters")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=200)
    terms = models.JSONField(default=list, help_text="Its distinctive terms (text) or signature parts.")
    size = models.PositiveIntegerField()
    sizes_by_round = models.JSONField(default=dict, help_text="round name -> corrections in it.")
    annotation_ids = models.JSONField(default=list)
    label = models.CharField(max_length=200, blank=True, help_text="A lead's name for it (empty: its terms).")
    pinned = models.BooleanField(default=False, help_text="Shown first, and kept across clusterings.")
    merged = models.BooleanField(default=False, help_text="A lead merged other clusters into it.")

    class Meta:
        ordering = ["-pinned", "kind", "-size", "id"]

    @property
    def display_name(self) -> str:
        return self.label or self.name
