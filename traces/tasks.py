"""Celery tasks: thin wrappers that call services."""

from celery import shared_task

from traces import services


@shared_task(name="traces.tasks.run_import", acks_late=True)
def run_import(job_id: int) -> None:
    services.import_job_run(job_id=job_id)
