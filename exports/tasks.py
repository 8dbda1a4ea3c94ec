"""Celery tasks: thin wrappers that call services."""

import logging

from celery import shared_task

from exports import services

log = logging.getLogger(__name__)


@shared_task(name="exports.tasks.run_export", acks_late=True)
def run_export(job_id: int, attempt: int | None = None) -> None:
    services.export_job_run(job_id=job_id, attempt=attempt)
