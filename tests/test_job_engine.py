"""The job engine (studio/engine.py) and its registry, over every sharded kind at once: each test of the matrix runs
once per declared kind (import, pre-scoring, export), the way the access matrix walks every URL.

In this process, on the test database: a job of each kind is made small (a few shards), then claimed, cancelled,
taken over, failed by a dependency that dies, or sent under the task names an older release queued. The kill
tests with real workers stay with their kinds (test_sharded_jobs, test_import_shards, test_export_shards)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from studio import engine
from studio.celery import app as celery_app
from studio.jobs import JobFailed, job_cancel
from studio.models import JobShard, JobStatus, ShardStatus
from tests.factories import native_trace_folder

KINDS = ["import", "prescore", "export"]


def _import_job(project, lead, tmp_path, settings):
    from traces.services import import_job_create

    settings.IMPORT_SHARD_TRACES = 1
    for n in range(3):
        native_trace_folder(tmp_path / "src" / f"t{n}", external_id=f"m-{n}", steps=2, size=(48, 32))
    return import_job_create(
        project=project, user=lead, upload_name=str(tmp_path / "src"), server_path=True, fmt="native", enqueue=False
    )


def _prescore_job(project, lead, tmp_path, settings):
    from prescoring.services import prescore_job_create
    from traces.services import import_job_run

    assert import_job_run(job_id=_import_job(project, lead, tmp_path, settings).pk).status == "succeeded"
    settings.PRESCORE_SHARD_STEPS = 2
    return prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)


def _export_job(project, lead, tmp_path, settings):
    from exports.services import export_job_create

    return export_job_create(project=project, user=lead, fmt="trl", enqueue=False)


MAKE = {"import": _import_job, "prescore": _prescore_job, "export": _export_job}
# The summary each kind's users read (three traces of two steps; the export has no accepted annotation yet).
SUMMARY_STARTS = {
    "import": "3 traces, 6 steps, ",
    "prescore": "6 steps scored, 0 failed",
    "export": "no samples from 0 accepted annotations; 0 skipped; the bundle is empty",
}


@pytest.fixture(params=KINDS)
def kind_job(request, project, lead, tmp_path, settings):
    """(kind, a queued job of it)."""
    kind = engine.job_kinds()[request.param]
    return kind, MAKE[request.param](project, lead, tmp_path, settings)


def _shards(job) -> list[JobShard]:
    return list(JobShard.objects.filter(job_model=job._meta.label, job_id=job.pk).order_by("index"))


@pytest.fixture
def replaced(monkeypatch):
    """Swap one of a kind's parts for the test (a plan that fails, work whose database goes away)."""

    def replace(kind: engine.JobKind, **parts) -> engine.JobKind:
        changed = dataclasses.replace(kind, **parts)
        monkeypatch.setitem(engine._KINDS, kind.name, changed)
        return changed

    return replace


def test_every_job_model_is_a_declared_kind_with_its_tasks_under_their_old_names_too():
    from evaluation.models import EvaluationJob
    from studio.jobs import job_models

    kinds = engine.job_kinds()
    assert {kind.model for kind in kinds.values()} == {model._meta.label for model in job_models()}
    assert sorted(name for name, kind in kinds.items() if kind.sharded) == sorted(KINDS)
    celery_app.loader.import_default_modules()  # what a worker does at start
    registered = set(celery_app.tasks)
    for kind in kinds.values():
        names = {kind.task_name, *kind.old_task_names}
        if kind.sharded:
            names |= {kind.shard_task_name, *kind.old_shard_task_names}
        assert names <= registered, kind.name
    assert kinds["prescore"].old_task_names == ("traces.tasks.prescore_rules", "traces.tasks.prescore_with_model")
    assert kinds["evaluation"].old_task_names == ("evaluation.tasks.run_evaluation",)
    assert kinds["alternatives"].old_task_names == ("annotation.tasks.sample_alternatives",)
    assert EvaluationJob().queue_name() == "gpu"  # a checkpoint's kinds go where the model stays loaded


def test_a_kind_is_declared_once():
    kind = engine.job_kinds()["import"]
    with pytest.raises(ValueError, match="declared twice"):
        engine.job_kind_register(dataclasses.replace(kind, model="exports.ExportJob"))
    with pytest.raises(ValueError, match="summarize or by assemble"):
        dataclasses.replace(kind, assemble=lambda job: "")
    with pytest.raises(ValueError, match="not both"):
        dataclasses.replace(kind, run=lambda job: "")


def test_each_kind_runs_in_process_to_the_summary_of_its_shards(kind_job):
    kind, job = kind_job
    done = engine.job_run_here(job)
    assert done.status == JobStatus.SUCCEEDED, done.message
    assert done.message.startswith(SUMMARY_STARTS[kind.name]), done.message
    shards = _shards(done)
    assert shards and all(shard.status == ShardStatus.DONE for shard in shards)
    if kind.assemble is None:  # (an assembly counts the files it packs)
        assert done.progress_total == sum(shard.size for shard in shards)


def test_a_job_queued_under_its_old_task_name_still_runs(kind_job, monkeypatch):
    # What a worker upgraded with messages in its queue receives: the name an older release sent (eager here: the
    # task, its shards and an export's assembly run in this process, through the tasks the engine registered).
    kind, job = kind_job
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    celery_app.tasks[kind.old_task_names[-1]].apply_async(args=[job.pk])
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.message


def test_a_job_cancelled_before_it_started_never_runs(kind_job):
    kind, job = kind_job
    assert job_cancel(job) == (True, "Cancelled before it started.")
    done = engine.job_run_here(job)
    assert (done.status, done.message) == (JobStatus.CANCELLED, "Cancelled before it started.")
    assert _shards(done) == []


def test_a_cancel_while_it_runs_ends_it_at_its_next_shard(kind_job):
    kind, job = kind_job
    assert engine.job_begin(kind, job)
    changed, said = job_cancel(job)
    assert changed and said.startswith("Cancel requested")
    assert engine.job_shard_run(kind, job_id=job.pk, index=0) == "cancelled"  # a worker takes its next shard
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.CANCELLED, "Cancelled on request.")
    assert {shard.status for shard in _shards(job)} == {ShardStatus.CANCELLED}


def test_a_job_taken_over_gets_back_the_shards_its_dead_worker_held(kind_job, settings):
    # The job's heartbeat went stale (its worker died while a shard ran); the watchdog sends the next attempt. The
    # shard's own beat looks recent, so only the take-over can free it: every kind gives it back to the queue.
    kind, job = kind_job
    assert engine.job_begin(kind, job)
    shard = _shards(job)[0]
    JobShard.objects.filter(pk=shard.pk).update(status=ShardStatus.RUNNING, attempts=1, heartbeat_at=timezone.now())
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_S + 1)
    type(job).objects.filter(pk=job.pk).update(heartbeat_at=stale)
    job.refresh_from_db()
    done = engine.job_run_here(job, attempt=job.attempts + 1)
    assert done.status == JobStatus.SUCCEEDED, done.message
    assert JobShard.objects.get(pk=shard.pk).attempts == 2


def test_a_plan_that_cannot_be_made_fails_the_job_saying_why(kind_job, replaced):
    kind, job = kind_job

    def refused(job, scratch):
        raise JobFailed("nothing to plan: the upload is empty")

    replaced(kind, plan=refused)
    done = engine.job_run_here(job)
    assert (done.status, done.message) == (JobStatus.FAILED, "nothing to plan: the upload is empty")


def test_a_plan_whose_database_went_away_fails_the_job_in_words(kind_job, replaced):
    kind, job = kind_job

    def unreachable(job, scratch):
        raise OperationalError("could not connect to server: Connection refused")

    replaced(kind, plan=unreachable)
    done = engine.job_run_here(job)
    assert done.status == JobStatus.FAILED and "database" in done.message.lower(), done.message


def test_a_shard_whose_dependency_keeps_dying_fails_the_job_naming_it_after_the_attempt_limit(
    kind_job, replaced, settings
):
    kind, job = kind_job
    tries = []

    def dying(job, shard, progress):
        if shard.index > 0:
            return kind.work(job, shard, progress)
        tries.append(shard.index)
        raise OperationalError("server closed the connection unexpectedly")

    replaced(kind, work=dying)
    done = engine.job_run_here(job)
    assert done.status == JobStatus.FAILED
    assert done.message.startswith(f"Shard 1 failed {settings.JOB_SHARD_MAX_ATTEMPTS} times: "), done.message
    assert tries == [0] * settings.JOB_SHARD_MAX_ATTEMPTS
