"""The Celery app. Queues: ``default`` (imports, exports, rule scoring) and ``gpu`` (model scoring)."""

import os
from typing import Any

from celery import Celery
from celery.signals import task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

app = Celery("studio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _make_broker_folders(sender: Any, **kwargs: Any) -> None:
    # kombu's filesystem transport does not create its folders.
    from django.conf import settings

    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        for key in ("data_folder_in", "data_folder_out", "control_folder"):
            os.makedirs(settings.CELERY_BROKER_TRANSPORT_OPTIONS[key], exist_ok=True)


@task_prerun.connect
def _forget_queries(sender: Any | None = None, **kwargs: Any) -> None:
    """Each task starts with an empty query log. With DEBUG on (dev mode) Django logs every query and only a
    request's start clears the log, so a worker kept its last 9,000: an export shard's result is written in one
    query of hundreds of KB, and a worker grew by that much for every shard it built."""
    from django.db import reset_queries

    reset_queries()


# Every worker runs without these consumer steps (docker-compose.yml, docs/deploy.md, runstudio): they keep channels
# on the broker connection, and after Redis restarts Celery restarts them on the connection it has just collected
# ("Error on restarting Gossip: 'NoneType' object has no attribute 'connection_errors'"; the crash of the same
# kind is answered in studio/broker_redis.py). The studio needs none of them: gossip (worker clock sync and election), mingle (merging revokes at start-up) and the
# event heartbeat (worker events for a monitor); `celery inspect ping` works without them.
WORKER_STEPS_OFF = ("--without-gossip", "--without-mingle", "--without-heartbeat")
