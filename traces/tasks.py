"""Celery tasks: thin wrappers that call services."""

from celery import shared_task

from traces import services


@shared_task(name="traces.tasks.run_import", acks_late=True)
def run_import(job_id: int, attempt: int | None = None) -> None:
    services.import_job_dispatch(job_id=job_id, attempt=attempt)


# One shard of an import: its trace folders, read from its part of the stored upload; the last one ends the job.
@shared_task(name="traces.tasks.import_shard", acks_late=True)
def import_shard(job_id: int, index: int) -> None:
    services.import_shard_run(job_id=job_id, index=index)


# A screenshot stored before imports made thumbnails, asked for by a page (traces.views.screenshot_file).
@shared_task(name="traces.tasks.make_thumbnail", acks_late=True)
def make_thumbnail(sha256: str) -> None:
    services.screenshot_thumbnail_make_by_hash(sha256=sha256)
