"""Export jobs: one bundle (one archive) of training samples (SFT/DPO, process labels, RL prompts) built from accepted
annotations."""

from __future__ import annotations

from django.db import models

from exports.formats import FORMAT_NAME_MAX, format_choices
from studio.engine import KindJob
from studio.models import JobBase


class FormatField(models.CharField):
    """A format's name. Its choices are the declared formats (exports.formats), read when asked for: a new format
    is no schema change, so the choices stay out of migrations."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", FORMAT_NAME_MAX)
        kwargs.setdefault("choices", format_choices)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        kwargs.pop("choices", None)
        return name, "django.db.models.CharField", args, kwargs


class ExportJob(KindJob, JobBase):
    project = models.ForeignKey("traces.Project", on_delete=models.CASCADE, related_name="export_jobs")
    format = FormatField()
    options = models.JSONField(
        default=dict, blank=True, help_text="Normalised export options (exports.builders.ExportOptions)."
    )
    split_seed = models.PositiveIntegerField(default=0)
    counts = models.JSONField(
        default=dict, blank=True, help_text="Samples per kind and split, skipped items per reason."
    )
    bundle_name = models.CharField(
        max_length=300, blank=True, help_text="Storage name; set only once the archive is complete."
    )
    bundle_sha256 = models.CharField(max_length=64, blank=True)
    bundle_size = models.PositiveBigIntegerField(default=0)
    sources = models.JSONField(
        null=True,
        blank=True,
        help_text="[annotation id, version] of every annotation the bundle was built from (its lineage); "
        "null for a bundle made before lineage was kept whose manifest could not be read.",
    )

    class Meta(JobBase.Meta):
        indexes = [models.Index(fields=["project", "created_at"])]

    def __str__(self):
        return f"export {self.pk} ({self.format}) of project {self.project_id}: {self.status}"
