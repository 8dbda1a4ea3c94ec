"""Pre-scoring's rows: a scoring run (PrescoreJob) and what it suggests per step and per trace — suggestions for
annotators, never answers. Behaviour lives in services.py / selectors.py.

The models moved here from the traces app; their tables kept their names (``Meta.db_table``), so the move was a
change of Django's state only (migrations/0001_initial.py)."""

from __future__ import annotations

from django.db import models

from studio.engine import KindJob
from studio.models import JobBase
from traces.models import Project, Step, Trace


class Scorer(models.TextChoices):
    RULES = "rules", "Rule checks"
    QWEN2VL = "qwen2vl", "Qwen2-VL model"


class PrescoreJob(KindJob, JobBase):
    """One scoring run over a project's traces. Every run keeps its own suggestions: re-scoring with
    another model adds rows and never overwrites earlier ones."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prescore_jobs")
    scorer = models.CharField(max_length=16, choices=Scorer.choices)
    model_path = models.CharField(max_length=500, blank=True, help_text="Local checkpoint directory (qwen2vl).")
    model_name = models.CharField(max_length=200, blank=True)
    weights_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the weight files.")
    settings = models.JSONField(default=dict, blank=True)
    trace_ids = models.JSONField(default=list, blank=True, help_text="Traces to score; empty: the whole project.")
    steps_scored = models.PositiveIntegerField(default=0)
    steps_failed = models.PositiveIntegerField(default=0)

    class Meta(JobBase.Meta):
        db_table = "traces_prescorejob"  # kept from when these models were in the traces app (module docstring)


class StepSuggestion(models.Model):
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="suggestions")
    job = models.ForeignKey(PrescoreJob, on_delete=models.CASCADE, related_name="step_suggestions")
    scorer = models.CharField(max_length=16, choices=Scorer.choices)
    model_name = models.CharField(max_length=200, blank=True)
    weights_hash = models.CharField(max_length=64, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    flags = models.JSONField(default=list, blank=True, help_text="Rule flags: [{code, message, ...}].")
    loglik_sum = models.FloatField(null=True, blank=True)
    loglik_mean = models.FloatField(null=True, blank=True)
    n_tokens = models.PositiveIntegerField(null=True, blank=True)
    model_action = models.TextField(blank=True, help_text="The model's own greedy reply.")
    model_action_parsed = models.JSONField(default=list, blank=True)
    agrees = models.BooleanField(null=True, blank=True)
    click_distance = models.FloatField(null=True, blank=True, help_text="Distance / screen diagonal.")
    suspicion = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "traces_stepsuggestion"
        ordering = ["step_id", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["job", "step"], name="unique_step_suggestion_per_job")]


class TraceSuggestion(models.Model):
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="suggestions")
    job = models.ForeignKey(PrescoreJob, on_delete=models.CASCADE, related_name="trace_suggestions")
    scorer = models.CharField(max_length=16, choices=Scorer.choices)
    model_name = models.CharField(max_length=200, blank=True)
    weights_hash = models.CharField(max_length=64, blank=True)
    suggested_tau = models.PositiveIntegerField(null=True, blank=True, help_text="Most likely first erroneous step.")
    tau_probability = models.FloatField(default=0.0)
    no_error_probability = models.FloatField(default=1.0)
    max_suspicion = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "traces_tracesuggestion"
        ordering = ["trace_id", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["job", "trace"], name="unique_trace_suggestion_per_job")]
        indexes = [models.Index(fields=["trace", "scorer", "created_at"])]
