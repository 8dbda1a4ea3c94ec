"""Celery tasks: thin wrappers that call services."""

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from exports import services

log = logging.getLogger(__name__)


@shared_task(name="exports.tasks.run_export", acks_late=True)
def run_export(job_id: int) -> None:
    services.export_job_run(job_id=job_id)


@worker_ready.connect
def _recover_exports(sender=None, **kwargs):
    # Only the filesystem broker loses a killed worker's task; Redis redelivers it (late acks).
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        try:
            requeued = services.export_jobs_recover()
        except Exception:  # a worker must start even when the database is not reachable yet
            log.exception("could not look for interrupted exports")
        else:
            if requeued:
                log.warning("queued again interrupted export jobs %s", requeued)
