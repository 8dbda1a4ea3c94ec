"""A job whose broker message was lost before any worker took it (a Redis restarted without its data, a broker
folder cleared) is sent again by the watchdog (studio.jobs.jobs_resend_lost) and ends; a job whose message is
waiting in the queue is left alone. Both brokers: Redis when the run has REDIS_URL, else the filesystem broker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from exports import services
from exports.models import ExportJob
from studio.jobs import broker_queue_sizes, jobs_resend_lost
from tests.conftest import purge_broker, wait_for

LOST = "resent: its message was lost"


def test_a_queued_job_whose_message_was_lost_is_sent_again_once_per_interval(
    transactional_db, project, engineer, settings
):
    settings.JOB_QUEUED_LOST_AFTER_S = 60
    purge_broker()
    job = services.export_job_create(project=project, user=engineer, fmt="trl")  # committed: its message is sent
    later = timezone.now() + timedelta(seconds=61)
    assert broker_queue_sizes(["default"]) == {"default": 1}
    assert jobs_resend_lost() == []  # queued for less than a minute: not looked at
    assert jobs_resend_lost(now=later) == []  # its message is in the queue, waiting for a worker

    purge_broker()  # the broker lost it
    assert jobs_resend_lost(now=later) == [("exports.ExportJob", job.pk, LOST)]
    assert broker_queue_sizes(["default"]) == {"default": 1}
    assert ExportJob.objects.get(pk=job.pk).status == "queued"
    assert jobs_resend_lost(now=later) == []  # its new message is there

    purge_broker()  # lost again: sent again once the interval has passed, not before
    assert jobs_resend_lost(now=later + timedelta(seconds=30)) == []
    assert jobs_resend_lost(now=later + timedelta(seconds=61)) == [("exports.ExportJob", job.pk, LOST)]


def test_a_cancelled_or_started_job_is_not_sent_again(transactional_db, project, engineer, settings):
    from studio.jobs import job_cancel

    settings.JOB_QUEUED_LOST_AFTER_S = 60
    purge_broker()
    cancelled = services.export_job_create(project=project, user=engineer, fmt="trl")
    job_cancel(cancelled)
    started = services.export_job_create(project=project, user=engineer, fmt="parquet")
    ExportJob.objects.filter(pk=started.pk).update(status="running", attempts=1, heartbeat_at=timezone.now())
    purge_broker()
    assert jobs_resend_lost(now=timezone.now() + timedelta(seconds=61)) == []


@pytest.mark.worker
def test_a_job_lost_by_the_broker_ends_once_a_worker_runs(transactional_db, project, engineer, monkeypatch, request):
    monkeypatch.setenv("STUDIO_JOB_WATCH_INTERVAL_S", "1")
    monkeypatch.setenv("STUDIO_JOB_QUEUED_LOST_AFTER_S", "2")
    purge_broker()
    job = services.export_job_create(project=project, user=engineer, fmt="trl")
    purge_broker()  # lost before any worker was there to take it
    worker = request.getfixturevalue("celery_worker")
    job = wait_for(lambda: (j := ExportJob.objects.get(pk=job.pk)).is_finished and j, 60, 0.2, "export ended")
    log = "".join(worker.log)
    assert job.status == "succeeded", (job.message, log[-3000:])
    assert LOST in log
