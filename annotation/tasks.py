"""Celery tasks: thin wrappers that call services."""

from celery import shared_task


# Routed to the `gpu` queue by settings.CELERY_TASK_ROUTES; the model stays loaded in the worker process.
@shared_task(name="annotation.tasks.sample_alternatives", acks_late=True)
def sample_alternatives(job_id: int, attempt: int | None = None) -> None:
    from annotation.alternatives import services

    services.alternatives_job_run(job_id=job_id, attempt=attempt)
