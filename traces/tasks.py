"""Celery tasks: thin wrappers that call services."""

from celery import shared_task

from traces import services


@shared_task(name="traces.tasks.run_import", acks_late=True)
def run_import(job_id: int) -> None:
    services.import_job_run(job_id=job_id)


@shared_task(name="traces.tasks.prescore_rules", acks_late=True)
def prescore_rules(job_id: int) -> None:
    from traces.prescoring import services as prescoring

    prescoring.prescore_job_run(job_id=job_id)


# Routed to the `gpu` queue by settings.CELERY_TASK_ROUTES; the model stays loaded in the worker process.
@shared_task(name="traces.tasks.prescore_with_model", acks_late=True)
def prescore_with_model(job_id: int) -> None:
    from traces.prescoring import services as prescoring

    prescoring.prescore_job_run(job_id=job_id)
