"""Fields every background job shares (imports, exports, pre-scoring); the workflow is in studio.jobs."""

from django.conf import settings
from django.db import models


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class JobBase(models.Model):
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last sign of life of the worker running it.")
    message = models.TextField(blank=True, help_text="Failure reason or final summary, for people.")
    errors = models.JSONField(default=list, blank=True, help_text="Per-item problems that did not stop the job.")

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def task_name(self) -> str:
        """The Celery task that runs this job; recovery sends it again (studio.jobs.jobs_recover)."""
        raise NotImplementedError

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


class LoginFailure(models.Model):
    """One failed login. A table, not a per-process cache, so every web process counts the same failures."""

    username = models.CharField(max_length=150, db_index=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["username", "ip", "at"])]
