"""Checkpoint evaluations on corrections: one job per run of a checkpoint over a chosen validation set, one row per
scored sample. Running again (another checkpoint, other settings) adds a job and its rows; nothing is overwritten."""

from __future__ import annotations

from django.db import models

from annotation.models import Annotation
from studio.engine import KindJob
from studio.models import JobBase
from traces.models import Project, Round


class SampleKind(models.TextChoices):
    # The sample kinds of exports/builders.py that an evaluation scores.
    ERROR_CORRECTION = "error_correction", "Error correction (t*_τ a*_τ at s_τ)"
    POST_REFLECTION = "post_reflection", "Post-reflection (t*_τ+1 a*_τ+1 at s_τ+1)"
    DPO = "dpo", "Preference pair (corrected vs recorded step at s_τ)"


class EvaluationJob(KindJob, JobBase):
    """One checkpoint scored on the accepted corrections of one selection (the bundle split or a round)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluation_jobs")
    checkpoint = models.CharField(max_length=200, help_text="What people call the checkpoint, e.g. agent-r2.")
    model_dir = models.CharField(max_length=500, help_text="The checkpoint's local directory on the gpu workers.")
    model_name = models.CharField(max_length=200, blank=True)
    weights_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the weight files.")
    settings = models.JSONField(default=dict, blank=True, help_text="Scoring settings (batching, device, pixels).")
    selection = models.JSONField(
        default=dict, blank=True, help_text="Which samples: split, round, validation_fraction, split_seed, export."
    )
    samples_total = models.PositiveIntegerField(default=0)
    samples_scored = models.PositiveIntegerField(default=0)
    samples_failed = models.PositiveIntegerField(default=0)
    samples_skipped = models.PositiveIntegerField(default=0, help_text="Samples the builder could not make.")
    metrics = models.JSONField(default=dict, blank=True, help_text="evaluation.metrics.summarize of the stored rows.")


class EvaluationSample(models.Model):
    """One scored sample. The annotation and round are kept by id without a database constraint: a row must outlive
    a deleted annotation or round, so that an old evaluation still reads as it was run."""

    job = models.ForeignKey(EvaluationJob, on_delete=models.CASCADE, related_name="samples")
    annotation = models.ForeignKey(Annotation, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    annotation_version = models.PositiveIntegerField()
    kind = models.CharField(max_length=20, choices=SampleKind.choices)
    split = models.CharField(max_length=16)
    category = models.CharField(max_length=80, blank=True, help_text="The annotation's error category.")
    round = models.ForeignKey(
        Round, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    round_name = models.CharField(max_length=120, blank=True)
    loglik_sum = models.FloatField(help_text="log p(target | prompt); for a pair, of the corrected (chosen) step.")
    n_tokens = models.PositiveIntegerField()
    rejected_loglik_sum = models.FloatField(null=True, blank=True, help_text="A pair's recorded (wrong) step.")
    rejected_n_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["job_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "annotation", "kind"], name="unique_evaluation_sample_per_job")
        ]
