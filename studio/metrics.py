"""The studio's Prometheus metrics, gathered across every process (docs/deploy.md, "Metrics").

prometheus-client's multiprocess mode: each process (every uvicorn worker, every Celery worker and prefork child)
writes its counters into memory-mapped files in ``STUDIO_METRICS_DIR`` (``settings.METRICS_DIR``; settings export it
as ``PROMETHEUS_MULTIPROC_DIR`` before this module is imported), and ``/metrics`` sums them. An increment is a
write into a mapped page: no query, no lock shared with other processes, so the autosave pays microseconds. The
files are named by host and process id, not process id alone: compose's containers share the folder (a volume) and
each has its own process 1.

What the database already knows (jobs queued and running, the oldest queued job's wait, the last backup's success
and failure, which ``manage.py backup`` records there from whichever machine runs it) and the disks' free space
are read when Prometheus scrapes, once per scrape, not counted per request.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import time
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DatabaseError
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

if TYPE_CHECKING:  # the models load once the apps are ready; the middleware imports this module before
    from studio.models import JobBase

log = logging.getLogger(__name__)

_HOST = socket.gethostname()
values.ValueClass = values.MultiProcessValue(lambda: f"{_HOST}-{os.getpid()}")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Seconds: an autosave is a few milliseconds; a bundle download or an upload may take minutes.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
JOB_BUCKETS = (1, 5, 15, 60, 300, 900, 1800, 3600, 3 * 3600, 12 * 3600)

http_requests = Counter(
    "studio_http_requests", "HTTP requests answered, by route (URL pattern) and status.", ["route", "method", "status"]
)
http_request_duration = Histogram(
    "studio_http_request_duration_seconds",
    "Time from the request reaching Django to its response, by route and status.",
    ["route", "method", "status"],
    buckets=REQUEST_BUCKETS,
)
draft_saves = Counter(
    "studio_draft_saves",
    "Workspace autosaves and hand-ins written, and those refused as stale (conflict).",
    ["outcome"],
)
job_duration = Histogram(
    "studio_job_duration_seconds",
    "A job's time from its start to its end, by kind, queue and how it ended.",
    ["kind", "queue", "status"],
    buckets=JOB_BUCKETS,
)
job_failures = Counter("studio_job_failures", "Jobs that ended failed, by kind and queue.", ["kind", "queue"])
worker_heartbeat = Gauge(
    "studio_worker_heartbeat_timestamp_seconds",
    "When a worker's watchdog last ran (Unix time), by worker and the queues it takes.",
    ["worker", "queues"],
    multiprocess_mode="max",
)
worker_heartbeat_interval = Gauge(
    "studio_worker_heartbeat_interval_seconds",
    "How often a worker's heartbeat is due (STUDIO_JOB_WATCH_INTERVAL_S).",
    ["worker", "queues"],
    multiprocess_mode="max",
)
webhook_deliveries = Counter(
    "studio_webhook_deliveries", "Webhook delivery attempts, by outcome (delivered, failed).", ["outcome"]
)
login_failures = Counter("studio_login_failures", "Failed logins (wrong name or password).")
storage_errors = Counter(
    "studio_storage_errors", "Requests that met the file storage (S3) or Redis unreachable, by service.", ["service"]
)


# The methods HTTP defines (RFC 9110, and PATCH): any other a client sends is counted as `_OTHER` (OpenTelemetry's
# name for it), so a scanner's methods (uvicorn's parser passes WebDAV's dozens) cannot multiply the series every
# scrape reads and sums.
METHOD_LABELS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"})


def method_label(method: str) -> str:
    return method if method in METHOD_LABELS else "_OTHER"


def observe_request(*, route: str, method: str, status: int, seconds: float) -> None:
    labels = (route, method_label(method), str(status))
    http_requests.labels(*labels).inc()
    http_request_duration.labels(*labels).observe(seconds)


def observe_job_end(job: JobBase, status: str) -> None:
    """A job ended (``studio.jobs``' transition to an end state): its duration, and a failure."""
    kind, queue = job.kind_label(), job.queue_name()
    if job.started_at is not None and job.finished_at is not None:
        job_duration.labels(kind, queue, status).observe((job.finished_at - job.started_at).total_seconds())
    if status == "failed":
        job_failures.labels(kind, queue).inc()


def worker_beat(*, worker: str, queues: str) -> None:
    worker_heartbeat.labels(worker, queues).set(time.time())
    worker_heartbeat_interval.labels(worker, queues).set(settings.JOB_WATCH_INTERVAL_S)


class ScrapeTimeCollector:
    """What is read when Prometheus scrapes: the jobs the database holds, by kind and status, the oldest queued
    job's wait, the latest backups' outcome, and the free space of the disks the studio writes."""

    def __init__(self, job_models: list) -> None:
        self.job_models = job_models

    def collect(self) -> Iterator[Metric]:
        from django.utils import timezone

        jobs = GaugeMetricFamily("studio_jobs", "Jobs queued and running now, by kind.", labels=["kind", "status"])
        oldest = GaugeMetricFamily(
            "studio_jobs_oldest_queued_age_seconds",
            "How long the oldest job that is due has waited in the queue, by kind (0: none waits).",
            labels=["kind"],
        )
        now = timezone.now()
        try:
            self._jobs(jobs, oldest, now)
        except DatabaseError as exc:  # the process's own metrics still go out; /readyz names the database
            log.warning("metrics: the jobs could not be counted: %s", exc.__class__.__name__)
        else:
            yield jobs
            yield oldest
        try:
            yield from self._backup()
        except DatabaseError as exc:
            log.warning("metrics: the backups' outcome could not be read: %s", exc.__class__.__name__)
        yield from self._disks()

    def _backup(self) -> Iterator[Metric]:
        """Nothing until a backup has run (the alerts stay silent); then both times, 0 for one that never was, so
        that a failure after the last success, or a failure and no success ever, compares."""
        from studio.models import BackupOutcome

        outcome = BackupOutcome.objects.filter(pk=BackupOutcome.ROW).first()
        if outcome is None:
            return
        for name, at, what in (
            ("studio_backup_last_success_timestamp_seconds", outcome.last_success_at, "succeeded"),
            ("studio_backup_last_failure_timestamp_seconds", outcome.last_failure_at, "failed"),
        ):
            family = GaugeMetricFamily(name, f"When a backup (manage.py backup) last {what} (Unix time; 0: never).")
            family.add_metric([], at.timestamp() if at else 0.0)
            yield family

    def _jobs(self, jobs: GaugeMetricFamily, oldest: GaugeMetricFamily, now: datetime) -> None:
        from django.db.models import Count, Min
        from django.db.models.functions import Coalesce

        from studio.models import JobStatus

        for model in self.job_models:
            kind = model.kind_label_of_model()
            counts = dict(
                model.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
                .order_by()
                .values_list("status")
                .annotate(n=Count("pk"))
            )
            for status in (JobStatus.QUEUED, JobStatus.RUNNING):
                jobs.add_metric([kind, status.value], counts.get(status.value, 0))
            # A queued job's heartbeat is when it was last sent (a deferred one: when it is due), so a delivery
            # waiting out its backoff is not counted as waiting in the queue.
            waiting_since = (
                model.objects.filter(status=JobStatus.QUEUED)
                .annotate(since=Coalesce("heartbeat_at", "created_at"))
                .filter(since__lte=now)
                .aggregate(oldest=Min("since"))["oldest"]
            )
            oldest.add_metric([kind], (now - waiting_since).total_seconds() if waiting_since else 0.0)

    def _disks(self) -> Iterator[Metric]:
        free = GaugeMetricFamily("studio_disk_free_bytes", "Free space where the studio writes.", labels=["path"])
        size = GaugeMetricFamily("studio_disk_size_bytes", "Size of the disk the studio writes to.", labels=["path"])
        for name, path in (("data", settings.DATA_DIR), ("work", settings.JOB_WORK_DIR)):
            try:
                usage = shutil.disk_usage(path)
            except OSError:
                continue  # not made yet (no job ran): nothing to report
            free.add_metric([name], usage.free)
            size.add_metric([name], usage.total)
        yield free
        yield size


def metrics_files_clear() -> int:
    """Remove the metric files in ``METRICS_DIR`` (before a stack's processes start: those that wrote them are
    gone, and a heartbeat or a gauge of theirs would linger); returns how many."""
    removed = 0
    for file in settings.METRICS_DIR.glob("*.db"):
        file.unlink(missing_ok=True)
        removed += 1
    return removed


def metrics_text(*, job_models: list) -> bytes:
    """Every process's metrics summed, and what is read at scrape time (``job_models``: the job tables to count),
    in Prometheus' text format."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(settings.METRICS_DIR))
    registry.register(ScrapeTimeCollector(job_models))
    return generate_latest(registry)
