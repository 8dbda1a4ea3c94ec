"""docs/contributing.md's "Add a job kind", followed step by step with a toy kind: the kind runs through the
engine's own tasks (eager: the run task plans and sends its shards, each shard task runs), a shard that fails is
tried again, and a cancel stops it, before it starts and while it runs. If the recipe stops working, this fails."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection, models

from studio import engine
from studio.celery import app as celery_app
from studio.engine import JobKind, KindJob, job_kind_register
from studio.jobs import job_cancel
from studio.models import JobBase, JobShard, JobStatus, ShardStatus


def toy_plan(job, scratch):
    return [([number], 1) for number in range(job.toys)]


def toy_work(job, shard, progress):
    progress.start(done=0)
    if shard.index == job.flaky_shard and shard.attempts == 1:
        raise RuntimeError("a dependency blinked")  # any exception: the shard goes back to the queue
    if shard.index == job.cancel_at_shard:
        job_cancel(job)  # someone presses "cancel" while the shard works
    progress.add(done=len(shard.items))  # a checkpoint: a cancel or a take-over stops the shard here


def toy_summarize(job, shards):
    return f"{sum(shard.done for shard in shards)} toys made"


@pytest.fixture
def toy_kind(transactional_db, monkeypatch):
    # Step 1: the job model (KindJob + JobBase) and its table, which an app's migration would make.
    class ToyJob(KindJob, JobBase):
        toys = models.PositiveSmallIntegerField(default=3)
        flaky_shard = models.SmallIntegerField(default=-1)
        cancel_at_shard = models.SmallIntegerField(default=-1)

        class Meta:
            app_label = "studio"

    with connection.schema_editor() as editor:
        editor.create_model(ToyJob)
    # Step 2: the kind, declared once (an app's jobs.py). Step 3, a worker's tasks: registering makes them.
    monkeypatch.setattr(engine, "_KINDS", dict(engine.job_kinds()))
    kind = job_kind_register(
        JobKind(name="toy", model="studio.ToyJob", plan=toy_plan, work=toy_work, summarize=toy_summarize)
    )
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    yield kind, ToyJob
    for name in (kind.task_name, kind.shard_task_name):
        engine._TASKS.pop(name, None)
        celery_app.tasks.pop(name, None)
    with connection.schema_editor() as editor:
        editor.delete_model(ToyJob)
    del apps.all_models["studio"]["toyjob"]
    apps.clear_cache()


def shards(job) -> list[JobShard]:
    return list(JobShard.objects.filter(job_model=job._meta.label, job_id=job.pk).order_by("index"))


def test_a_toy_kind_made_by_the_recipe_runs_retries_a_failed_shard_and_is_cancelled(toy_kind):
    """One test: the toy table's flush is the cost of a test here."""
    kind, ToyJob = toy_kind
    assert {"jobs.toy.run", "jobs.toy.shard"} <= set(celery_app.tasks)
    # Step 4: a service makes the row and queues it through the engine.
    job = ToyJob.objects.create(flaky_shard=1)
    engine.job_enqueue(job)
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.SUCCEEDED, "3 toys made")
    assert job.kind_label() == "toy" and job.progress_done == job.progress_total == 3
    assert [(shard.status, shard.attempts) for shard in shards(job)] == [
        (ShardStatus.DONE, 1),
        (ShardStatus.DONE, 2),  # failed once, tried again
        (ShardStatus.DONE, 1),
    ]

    # Cancelled before it starts, and while it runs.
    waiting = ToyJob.objects.create()
    assert job_cancel(waiting) == (True, "Cancelled before it started.")
    engine.job_enqueue(waiting)  # its message, sent anyway, runs nothing
    waiting.refresh_from_db()
    assert waiting.status == JobStatus.CANCELLED and shards(waiting) == []

    running = ToyJob.objects.create(cancel_at_shard=1)
    engine.job_run_here(running)
    running.refresh_from_db()
    assert (running.status, running.message) == (JobStatus.CANCELLED, "Cancelled on request.")
    assert [shard.status for shard in shards(running)] == [
        ShardStatus.DONE,
        ShardStatus.CANCELLED,  # stopped at its checkpoint
        ShardStatus.CANCELLED,  # never started
    ]
