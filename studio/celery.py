"""The Celery app. Queues: ``default`` (imports, exports, rule scoring) and ``gpu`` (model scoring)."""

import logging
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

app = Celery("studio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _make_broker_folders(sender, **kwargs):
    # kombu's filesystem transport does not create its folders.
    from django.conf import settings

    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        for key in ("data_folder_in", "data_folder_out", "control_folder"):
            os.makedirs(settings.CELERY_BROKER_TRANSPORT_OPTIONS[key], exist_ok=True)


@worker_ready.connect
def _recover_interrupted_jobs(sender=None, **kwargs):
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return  # Redis redelivers a killed worker's unacknowledged task by itself
    from studio.jobs import jobs_recover

    try:
        sent = jobs_recover(stale_after_s=settings.JOB_STALE_AFTER_S)
    except Exception:  # a worker must start even when the database is not reachable yet
        logging.getLogger(__name__).exception("could not look for interrupted jobs")
    else:
        if sent:
            logging.getLogger(__name__).warning("sent again interrupted jobs %s", sent)
