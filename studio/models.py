"""Fields every background job shares (imports, exports, pre-scoring); the workflow is in studio.jobs."""

import importlib
from typing import Any

from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models
from django.utils.translation import gettext_lazy as _


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class JobBase(models.Model):
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life of the worker running it; queued: when it was last sent again.",
    )
    message = models.TextField(blank=True, help_text="Failure reason or final summary, for people.")
    errors = models.JSONField(default=list, blank=True, help_text="Per-item problems that did not stop the job.")

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def task_name(self) -> str:
        """The Celery task that runs this job; the watchdog sends it again (studio.jobs.jobs_watch_once)."""
        raise NotImplementedError

    def queue_name(self) -> str:
        """The queue its task goes to: the task's route in settings, else the default queue."""
        from django.conf import settings as django_settings

        route = django_settings.CELERY_TASK_ROUTES.get(self.task_name())
        return route["queue"] if route else django_settings.CELERY_TASK_DEFAULT_QUEUE

    @classmethod
    def kind_label_of_model(cls) -> str:
        """The job's kind as logs and metrics name it (a registered kind's name: ``studio.engine.KindJob``)."""
        return cls._meta.model_name or cls.__name__.lower()

    def kind_label(self) -> str:
        return type(self).kind_label_of_model()

    def attempts_exhausted(self) -> bool:
        """Whether the watchdog gives up on this job, running with a stale heartbeat, instead of sending it again:
        its worker stopped ``JOB_MAX_ATTEMPTS`` times (each run is an attempt)."""
        return self.attempts >= settings.JOB_MAX_ATTEMPTS

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)


def job_field_with_db_default(name: str, db_default: Any) -> models.Field:
    """JobBase's field ``name`` as it is, with a database default: for a job model whose table an earlier release
    had without the column, so that release's inserts, which leave the column out, still succeed while this
    release's migrations are applied (docs/deploy.md, "Upgrading"). JobBase itself stays without one: the other
    job tables were made with these columns."""
    field = JobBase._meta.get_field(name)
    assert isinstance(field, models.Field), name
    _, _, args, options = field.deconstruct()
    return type(field)(*args, **{**options, "db_default": db_default})


class ShardStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class JobShard(models.Model):
    """One piece of a sharded job (studio.shards): any worker takes it; the job row is what people see.

    ``items`` names the shard's work (pre-scoring: trace ids). ``attempts`` is the claim counter every write of a
    run is checked against, so a run that was taken over writes nothing more."""

    job_model = models.CharField(max_length=100, help_text="The job's model label, e.g. prescoring.PrescoreJob.")
    job_id = models.PositiveIntegerField()
    index = models.PositiveIntegerField()
    items = models.JSONField(default=list)
    size = models.PositiveIntegerField(default=0, help_text="Units of work (steps) in the shard.")
    status = models.CharField(max_length=16, choices=ShardStatus.choices, default=ShardStatus.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last run's beat, or when it was last sent.")
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(
        null=True,
        blank=True,
        help_text="What the shard's completed run made, for the job's end to gather (exports: its data files, "
        "images and counts); written in the guarded transaction of the run's last write.",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job_model", "job_id", "index"], name="unique_shard_per_job")]
        indexes = [models.Index(fields=["job_model", "job_id", "status"])]


class LoginFailure(models.Model):
    """One failed login. A table, not a per-process cache, so every web process counts the same failures."""

    username = models.CharField(max_length=150, db_index=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["username", "ip", "at"])]


class SignInIdentity(models.Model):
    """The provider's account a studio user signs in as (single sign-on, studio.oidc): the issuer and its stable
    ``sub``, never the name the provider shows, which people may change (and which could name a local account)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_in_identity")
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)
    groups = models.JSONField(default=list, blank=True, help_text="The groups the last sign-in brought.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="unique_sign_in_identity")]


class BackupOutcome(models.Model):
    """The outcome of ``manage.py backup``'s latest runs (one row, ``pk`` 1): a table, not a metric file, because a
    backup may run on another machine than the web server whose ``/metrics`` publishes it."""

    ROW = 1

    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    last_failure_message = models.TextField(blank=True)


class ShortcutMode(models.TextChoices):
    """How a person takes the pages' single-key shortcuts (WCAG 2.1.4; static/js/keys.js reads it off the page)."""

    SINGLE = "single", _("On: a key alone (e marks the first error)")
    MODIFIER = "modifier", _("With Alt (Option on a Mac): Alt+e marks the first error")
    OFF = "off", _("Off: buttons, arrows, Home, End, Esc and the Ctrl keys only")


class AccountSettings(models.Model):
    """A person's own settings (the account menu's Settings page); a user without a row has the defaults."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account_settings")
    shortcuts = models.CharField(
        max_length=16, choices=ShortcutMode.choices, default=ShortcutMode.SINGLE, db_default=ShortcutMode.SINGLE
    )
    # A code of settings.LANGUAGES, or blank for the browser's (Accept-Language); studio.i18n keeps it in the
    # session at sign-in so no request reads this row.
    language = models.CharField(max_length=16, blank=True, default="", db_default="")


class StudioSession(AbstractBaseSession):
    """A signed-in browser's session (settings.SESSION_ENGINE, studio.sessions): Django's session row with the user
    it signs in as in a column of its own, so a request reads its session and its user, with their roles, in one
    query. The user's id stays in the session's data too, where Django's sign-in checks read it."""

    # Deleting a user deletes their sessions (Django's collector). No constraint in the database: a session saved
    # for a user deleted meanwhile would fail at its commit, which Django's session creation takes for a taken key
    # and retries without end; such a row's user is simply not found, and the request is no one's.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=True,
        db_constraint=False,
    )

    @classmethod
    def get_session_store_class(cls) -> type:
        return importlib.import_module(settings.SESSION_ENGINE).SessionStore
