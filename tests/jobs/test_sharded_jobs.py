"""Sharded pre-scoring over two real worker processes (studio.shards), on whichever broker the run uses.

With REDIS_URL set the broker is Redis; otherwise kombu's filesystem broker (SQLite runs). The shards are small
(two traces each) and each scored trace pauses, so both workers hold a shard when one is SIGKILLed or the job is
cancelled."""

from __future__ import annotations

import pytest

from studio.models import JobShard
from tests.conftest import WorkerProcess, purge_broker, wait_for

pytestmark = pytest.mark.worker

TRACES, STEPS = 16, 4


@pytest.fixture
def sharded_env(monkeypatch):
    monkeypatch.setenv("STUDIO_PRESCORE_SHARD_STEPS", str(2 * STEPS))
    monkeypatch.setenv("STUDIO_PRESCORE_THROTTLE_S", "0.4")
    # A killed worker's shard is taken back within seconds (the watchdog looks every stale/3 s).
    monkeypatch.setenv("STUDIO_JOB_STALE_AFTER_S", "2")
    monkeypatch.setenv("STUDIO_REDIS_VISIBILITY_TIMEOUT_S", "3600")  # recovery must not wait for the broker


def _suggestions(job):
    from prescoring.models import StepSuggestion

    return sorted(StepSuggestion.objects.filter(job=job).values_list("step_id", "suspicion"))


def _two_workers():
    purge_broker()
    return WorkerProcess().start(), WorkerProcess().start()


def _both_busy(job):
    return JobShard.objects.filter(job_model="prescoring.PrescoreJob", job_id=job.pk, status="running").count() >= 2


def test_sharded_job_survives_a_killed_worker_and_ends_once_with_the_undisturbed_rows(
    role_groups, project, lead, tmp_path, sharded_env, settings
):
    from prescoring.models import PrescoreJob, TraceSuggestion
    from prescoring.services import prescore_job_create, prescore_job_run
    from tests.fixtures_annotation import make_traces

    make_traces(project, tmp_path, count=TRACES, steps=STEPS, size=(320, 200))
    settings.PRESCORE_SHARD_STEPS, settings.PRESCORE_THROTTLE_S = 2 * STEPS, 0
    undisturbed = prescore_job_run(
        job_id=prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False).pk
    )
    assert undisturbed.status == "succeeded", undisturbed.message
    assert JobShard.objects.filter(job_id=undisturbed.pk, job_model="prescoring.PrescoreJob").count() == TRACES // 2

    victim, survivor = _two_workers()
    try:
        job = prescore_job_create(project=project, user=lead, scorer="rules")
        wait_for(lambda: _both_busy(job), 60, 0.05, "two shards running")
        victim.kill()
        killed_shards = JobShard.objects.filter(
            job_id=job.pk, job_model="prescoring.PrescoreJob", status="running"
        ).count()
        assert killed_shards >= 1
        job = wait_for(
            lambda: (j := PrescoreJob.objects.get(pk=job.pk)).is_finished and j,
            120,
            0.2,
            "the job ended by the surviving worker",
        )
    finally:
        victim.kill()
        survivor.stop()
    log = "".join(survivor.log)
    assert job.status == "succeeded", (job.message, log[-3000:])
    shards = JobShard.objects.filter(job_id=job.pk, job_model="prescoring.PrescoreJob")
    assert shards.count() == TRACES // 2 and set(shards.values_list("status", flat=True)) == {"done"}
    assert max(shards.values_list("attempts", flat=True)) >= 2, "the killed worker's shard was run again"
    assert "shard watchdog" in log  # the survivor took the dead worker's shard back
    assert job.attempts == 1  # the job itself was never run again: only its shard
    # Exactly the rows of the undisturbed run: one suggestion per step, same scores; counts of the final state.
    assert [s for _, s in _suggestions(job)] == [s for _, s in _suggestions(undisturbed)]
    assert len({step for step, _ in _suggestions(job)}) == TRACES * STEPS
    assert job.steps_scored == TRACES * STEPS and job.progress_done == job.progress_total == TRACES * STEPS
    assert job.message == f"{TRACES * STEPS} steps scored, 0 failed"
    assert TraceSuggestion.objects.filter(job=job).count() == TRACES


def test_cancel_while_shards_run_on_two_workers_stops_every_write(role_groups, project, lead, tmp_path, sharded_env):
    from prescoring.models import PrescoreJob, StepSuggestion
    from prescoring.services import prescore_job_create
    from studio.jobs import job_cancel
    from tests.fixtures_annotation import make_traces

    make_traces(project, tmp_path, count=TRACES, steps=STEPS, size=(320, 200))
    first, second = _two_workers()
    try:
        job = prescore_job_create(project=project, user=lead, scorer="rules")
        wait_for(lambda: _both_busy(job), 60, 0.05, "two shards running")
        job_cancel(job)  # committed: the cancel is acknowledged
        acknowledged = StepSuggestion.objects.filter(job=job).count()
        job = wait_for(lambda: (j := PrescoreJob.objects.get(pk=job.pk)).is_finished and j, 60, 0.1, "cancelled")
        shards = JobShard.objects.filter(job_id=job.pk, job_model="prescoring.PrescoreJob")
        wait_for(lambda: not shards.filter(status="running").exists(), 30, 0.1, "every shard stopped")
        import time

        time.sleep(1.5)  # longer than a scored trace takes: a shard that ignored the cancel would have written
    finally:
        first.stop()
        second.stop()
    assert job.status == "cancelled", job.message
    assert StepSuggestion.objects.filter(job=job).count() == acknowledged < TRACES * STEPS
    assert set(shards.values_list("status", flat=True)) <= {"done", "cancelled"}
    assert shards.filter(status="cancelled").exists()


# --- the shard machinery in one process (studio.shards), with work functions that fail on purpose -------------


@pytest.fixture
def planned_job(project, lead, settings):
    """A rules scoring job claimed and planned into three shards (no worker: the runs happen in the test)."""
    from prescoring.services import prescore_job_create
    from studio.jobs import job_start
    from studio.shards import shards_plan

    settings.JOB_SHARD_MAX_ATTEMPTS = 3
    job = prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)
    assert job_start(job)
    shards_plan(job, [([1], 1), ([2], 1), ([3], 1)])
    return job


def _summary(job, shards):
    return f"{sum(s.done for s in shards)} done"


def _work_counting(calls, *, fail_on=None):
    def work(job, shard, progress):
        calls.append((shard.index, shard.attempts))
        if fail_on and fail_on(shard):
            raise RuntimeError(f"shard {shard.index} broke")
        progress.start(done=0)
        progress.add(done=1)

    return work


def test_a_failing_shard_is_retried_and_the_job_ends_once_it_passes(planned_job):
    from studio.shards import shards_run_here

    calls = []
    shards_run_here(
        planned_job, _work_counting(calls, fail_on=lambda s: s.index == 1 and s.attempts == 1), summarize=_summary
    )
    planned_job.refresh_from_db()
    assert planned_job.status == "succeeded" and planned_job.message == "3 done"
    assert calls == [(0, 1), (1, 1), (2, 1), (1, 2)]
    assert planned_job.progress_done == 3


def test_a_shard_that_always_fails_fails_the_job_naming_it_after_the_attempt_limit(planned_job):
    from studio.shards import shards_run_here

    calls = []
    shards_run_here(planned_job, _work_counting(calls, fail_on=lambda s: s.index == 2), summarize=_summary)
    planned_job.refresh_from_db()
    assert planned_job.status == "failed"
    assert planned_job.message == "Shard 3 failed 3 times: RuntimeError: shard 2 broke"
    assert [c for c in calls if c[0] == 2] == [(2, 1), (2, 2), (2, 3)]


def test_a_fatal_shard_error_fails_the_job_at_once(planned_job):
    from studio.shards import ShardFatal, shards_run_here

    def work(job, shard, progress):
        raise ShardFatal("model not loaded: /models/current: no config.json")

    shards_run_here(planned_job, work, summarize=_summary)
    planned_job.refresh_from_db()
    assert planned_job.status == "failed" and planned_job.message == "model not loaded: /models/current: no config.json"
    assert JobShard.objects.filter(job_id=planned_job.pk, status="failed").count() == 1
    assert JobShard.objects.filter(job_id=planned_job.pk, status="cancelled").count() == 2  # never run


def test_a_live_shard_cannot_be_claimed_twice_and_a_stale_one_is_taken_back(planned_job, settings):
    from datetime import timedelta

    from django.utils import timezone

    from studio.shards import _claim, shards_watch_once

    settings.JOB_STALE_AFTER_S = 60
    shard = JobShard.objects.get(job_id=planned_job.pk, index=0)
    duplicate = JobShard.objects.get(pk=shard.pk)  # a second delivery of the same message, read at the same time
    assert _claim(shard) and shard.attempts == 1
    assert not _claim(duplicate)  # compare-and-swap on the attempt counter
    assert not _claim(JobShard.objects.get(pk=shard.pk))  # running and beating: alive elsewhere
    # Its worker dies: no beat for longer than the stale window.
    JobShard.objects.filter(pk=shard.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    JobShard.objects.filter(job_id=planned_job.pk).exclude(pk=shard.pk).update(heartbeat_at=timezone.now())
    purge_broker()
    try:
        acted = shards_watch_once()
    finally:
        purge_broker()
    assert acted == [("prescoring.PrescoreJob", planned_job.pk, 0, "resent")]
    shard.refresh_from_db()
    assert shard.status == "queued" and shard.attempts == 1
    assert _claim(shard) and shard.attempts == 2


def test_the_watchdog_cancels_the_shards_of_a_job_that_ended(planned_job):
    from studio.shards import shards_job_end, shards_watch_once

    shards_job_end(planned_job, "failed", "stopped by hand")
    assert shards_watch_once() == []
    assert set(JobShard.objects.filter(job_id=planned_job.pk).values_list("status", flat=True)) == {"cancelled"}
