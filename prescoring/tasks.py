"""Celery tasks: thin wrappers that call services.

The task names are the ones they had in the traces app: queued messages and the routes in settings
(CELERY_TASK_ROUTES) name them, so a worker upgraded with jobs in flight still runs them."""

from celery import shared_task

from prescoring import services


@shared_task(name="traces.tasks.prescore_rules", acks_late=True)
def prescore_rules(job_id: int, attempt: int | None = None) -> None:
    services.prescore_job_dispatch(job_id=job_id, attempt=attempt)


# Routed to the `gpu` queue by settings.CELERY_TASK_ROUTES; the model stays loaded in the worker process.
@shared_task(name="traces.tasks.prescore_with_model", acks_late=True)
def prescore_with_model(job_id: int, attempt: int | None = None) -> None:
    services.prescore_job_dispatch(job_id=job_id, attempt=attempt)


# One shard of a scoring job; sent with the queue of the job's scorer (PrescoreJob.shard_queue).
@shared_task(name="traces.tasks.prescore_shard", acks_late=True)
def prescore_shard(job_id: int, index: int) -> None:
    services.prescore_shard_run(job_id=job_id, index=index)
