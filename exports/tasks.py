"""Celery tasks: thin wrappers that call services."""

import logging

from celery import shared_task

from exports import services

log = logging.getLogger(__name__)


@shared_task(name="exports.tasks.run_export", acks_late=True)
def run_export(job_id: int, attempt: int | None = None) -> None:
    services.export_job_dispatch(job_id=job_id, attempt=attempt)


# One shard of an export: builds its data files, and the last one sends run_export again to assemble the bundle.
@shared_task(name="exports.tasks.export_shard", acks_late=True)
def export_shard(job_id: int, index: int) -> None:
    services.export_shard_run(job_id=job_id, index=index)
