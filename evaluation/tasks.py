"""Celery tasks: thin wrappers that call services."""

from celery import shared_task


# Routed to the `gpu` queue by settings.CELERY_TASK_ROUTES; the model stays loaded in the worker process.
@shared_task(name="evaluation.tasks.run_evaluation", acks_late=True)
def run_evaluation(job_id: int, attempt: int | None = None) -> None:
    from evaluation import services

    services.evaluation_job_run(job_id=job_id, attempt=attempt)
