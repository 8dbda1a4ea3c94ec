"""Celery tasks: thin wrappers that call services. The import job's tasks (``jobs.import.run``, ``jobs.import.shard``,
and the same under the names older releases queued them by) are made by the job engine (studio/engine.py) from the
kind declared in traces/jobs.py; importing it here registers them in a worker."""

from celery import shared_task

from traces import jobs, services  # noqa: F401  (jobs: the import kind's tasks)


# A screenshot stored before imports made thumbnails, asked for by a page (traces.views.screenshot_file).
@shared_task(name="traces.tasks.make_thumbnail", acks_late=True)
def make_thumbnail(sha256: str) -> None:
    services.screenshot_thumbnail_make_by_hash(sha256=sha256)
