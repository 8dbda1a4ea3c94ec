"""The background-job state machine, shared by imports, exports and pre-scoring.

queued → running → succeeded | failed | cancelled; queued → cancelled; running → running when a
worker died and its task came back (late acks, or jobs_recover on the embedded broker). Tasks call
these functions only.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from studio.models import JobStatus

JOB_TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.CANCELLED}),
    JobStatus.RUNNING: frozenset({JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}


class JobTransitionError(Exception):
    pass


class JobCancelled(Exception):
    """Raised inside a job's loop when someone asked to cancel it."""


def _transition(job, to: str, **fields) -> None:
    if to not in JOB_TRANSITIONS[job.status]:
        raise JobTransitionError(f"{type(job).__name__} {job.pk}: cannot go from {job.status} to {to}")
    fields["status"] = to
    type(job).objects.filter(pk=job.pk).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)


def job_start(job) -> bool:
    """Move a job to running; False when it already finished (a redelivered task then does nothing)."""
    job.refresh_from_db()
    if job.is_finished:
        return False
    if job.cancel_requested:
        _transition(job, JobStatus.CANCELLED, finished_at=timezone.now(), message="Cancelled before it started.")
        return False
    # running → running happens when a worker was killed and the task came back.
    now = timezone.now()
    _transition(job, JobStatus.RUNNING, started_at=job.started_at or now, attempts=job.attempts + 1, heartbeat_at=now)
    return True


def job_progress(job, *, done: int, total: int | None = None) -> None:
    """Record progress; raises JobCancelled when a cancel was requested meanwhile."""
    fields = {"progress_done": done, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["progress_total"] = total
    type(job).objects.filter(pk=job.pk).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)
    if type(job).objects.filter(pk=job.pk, cancel_requested=True).exists():
        raise JobCancelled()


def job_add_error(job, error: dict) -> None:
    job.errors = [*job.errors, error]
    type(job).objects.filter(pk=job.pk).update(errors=job.errors)


def job_finish(job, *, message: str = "") -> None:
    _transition(job, JobStatus.SUCCEEDED, finished_at=timezone.now(), message=message)


def job_fail(job, *, message: str) -> None:
    _transition(job, JobStatus.FAILED, finished_at=timezone.now(), message=message)


def job_mark_cancelled(job, *, message: str = "Cancelled on request.") -> None:
    _transition(job, JobStatus.CANCELLED, finished_at=timezone.now(), message=message)


def job_request_cancel(job) -> None:
    with transaction.atomic():
        type(job).objects.filter(pk=job.pk).update(cancel_requested=True)
        job.refresh_from_db()
        if job.status == JobStatus.QUEUED:
            job_mark_cancelled(job, message="Cancelled before it started.")


def jobs_recover(*, stale_after_s: float) -> list[tuple[str, int]]:
    """Send again the running jobs whose worker stopped beating: it was killed.

    Only the embedded filesystem broker needs this: it deletes a message as soon as a worker takes it,
    so a killed worker's task is gone. Redis redelivers unacknowledged tasks itself (late acks).
    A recovered task resumes idempotently (job_start lets a running job run again).
    """
    from django.apps import apps

    from studio.celery import app as celery_app
    from studio.models import JobBase

    cutoff = timezone.now() - timezone.timedelta(seconds=stale_after_s)
    sent = []
    for model in apps.get_models():
        if not issubclass(model, JobBase):
            continue
        for job in model.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=cutoff):
            celery_app.send_task(job.task_name(), args=[job.pk])
            sent.append((model._meta.label, job.pk))
    return sent


def job_enqueue(task, job) -> None:
    """Send the job's task once the row that names it is committed."""
    transaction.on_commit(lambda: task.delay(job.pk))


__all__ = [
    "JOB_TRANSITIONS",
    "JobCancelled",
    "JobTransitionError",
    "job_add_error",
    "job_enqueue",
    "job_fail",
    "job_finish",
    "job_mark_cancelled",
    "job_progress",
    "job_request_cancel",
    "job_start",
    "jobs_recover",
]
