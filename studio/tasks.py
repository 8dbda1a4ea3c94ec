"""The platform's Celery side, found by the worker's autodiscovery: every job kind's tasks (``studio.engine``), and
the watchdogs each worker starts once it is ready."""

import logging

from celery.signals import worker_ready

from studio.engine import tasks_register

tasks_register()


@worker_ready.connect
def _start_job_watchdog(sender=None, **kwargs):
    """Every worker watches for jobs whose worker died (stale heartbeat) and sends them again: with any broker,
    a killed worker's job is taken over within a minute or two, not when a message times out an hour later."""
    from studio.jobs import watchdog_start

    watchdog_start()
    logging.getLogger(__name__).info("job watchdog started")


@worker_ready.connect
def _start_shard_watchdog(sender=None, **kwargs):
    """Every worker takes back the shards whose worker died and sends them again (studio.shards)."""
    from studio.shards import shards_watch_start

    shards_watch_start()
