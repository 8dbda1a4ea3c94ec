"""A real worker runs an export; a worker killed with SIGKILL mid-export: the job finishes on retry and
the bundle equals an undisturbed run's, byte for byte."""

import pytest

from annotation.models import Verdict
from exports import services
from exports.models import ExportJob
from studio.models import JobShard
from tests.conftest import WorkerProcess, purge_broker, wait_for
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

pytestmark = pytest.mark.worker


@pytest.fixture
def slow_export_env(monkeypatch):
    # The worker pauses per batch of annotations (so it can be killed mid-export); the replacement worker's
    # watchdog sends the stale running export again (Redis may also redeliver it: the later run does nothing).
    monkeypatch.setenv("STUDIO_EXPORT_THROTTLE_S", "3")
    monkeypatch.setenv("STUDIO_JOB_STALE_AFTER_S", "1")
    monkeypatch.setenv("STUDIO_JOB_WATCH_INTERVAL_S", "1")
    monkeypatch.setenv("STUDIO_REDIS_VISIBILITY_TIMEOUT_S", "3")


def annotate(project, annotator, lead, n):
    for i in range(n):
        trace = make_trace(
            project,
            replies=REPLIES,
            external_id=f"w{i}",
            image_seed=i % 4 + 1,
            instruction=f"Open the display settings ({i})",
        )
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=2,
            corrected_thought=f"Fix {i}.",
            corrected_action=f"click(start_box='({i},5)')",
        )


def test_killed_worker_export_finishes_on_retry_with_same_checksum(
    transactional_db, project, annotator, lead, engineer, slow_export_env, monkeypatch
):
    annotate(project, annotator, lead, 12)
    purge_broker()
    worker = WorkerProcess().start()
    try:
        job = services.export_job_create(project=project, user=engineer, fmt="trl")
        # Killed mid-export: while a shard builds its part (the plan, which builds a few samples to draw the split,
        # is over), so the shards' take-over, not the plan's, is what the retry does.
        wait_for(
            lambda: JobShard.objects.filter(job_id=job.pk, job_model=job._meta.label, status="running").exists(),
            60,
            message="an export shard running",
        )
        worker.kill()
        killed = ExportJob.objects.get(pk=job.pk)
        assert killed.status == "running" and not killed.bundle_name
    finally:
        worker.kill()
    replacement = WorkerProcess().start()
    try:
        finished = wait_for(lambda: (j := ExportJob.objects.get(pk=job.pk)).is_finished and j, 120, message="retry")
    finally:
        replacement.stop()
    assert finished.status == "succeeded", finished.message
    assert finished.attempts == 2

    # The undisturbed run, in this process (no throttle here: settings were read before the env changed).
    reference = services.export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    reference = services.export_job_run(job_id=reference.pk)
    assert reference.status == "succeeded"
    assert finished.bundle_sha256 == reference.bundle_sha256
