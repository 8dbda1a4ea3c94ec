"""Celery tasks: thin wrappers that call services. The import job's tasks are made by the job engine from its kind
(traces/jobs.py, studio/engine.py)."""

from celery import shared_task

from traces import services


# A screenshot stored before imports made thumbnails, asked for by a page (traces.views.screenshot_file).
@shared_task(name="traces.tasks.make_thumbnail", acks_late=True)
def make_thumbnail(sha256: str) -> None:
    services.screenshot_thumbnail_make_by_hash(sha256=sha256)
