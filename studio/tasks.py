"""The platform's Celery side, found by the worker's autodiscovery: every job kind's tasks (``studio.engine``), and
the watchdogs each worker starts once it is ready."""

import logging
from typing import Any

from celery.signals import worker_ready

from studio.engine import tasks_register

tasks_register()


@worker_ready.connect
def _start_job_watchdog(sender: Any | None = None, **kwargs: Any) -> None:
    """Every worker watches for jobs whose worker died (stale heartbeat) and sends them again: with any broker,
    a killed worker's job is taken over within a minute or two, not when a message times out an hour later."""
    from studio.jobs import watchdog_start
    from studio.metrics import worker_beat

    worker = getattr(sender, "hostname", None) or "worker"
    queues = ",".join(sorted(_queues_of(sender)))

    def beat() -> None:
        worker_beat(worker=worker, queues=queues)

    beat()
    watchdog_start(beat)
    logging.getLogger(__name__).info("job watchdog started")


def _queues_of(consumer: Any) -> set[str]:
    """The queues a worker takes (``-Q``), for its heartbeat's label: the alert is per queue."""
    try:
        return set(consumer.app.amqp.queues.consume_from)
    except AttributeError:
        return {"default"}


@worker_ready.connect
def _start_shard_watchdog(sender: Any | None = None, **kwargs: Any) -> None:
    """Every worker takes back the shards whose worker died and sends them again (studio.shards)."""
    from studio.shards import shards_watch_start

    shards_watch_start()
