"""The job engine (studio/engine.py) and its registry, over every sharded kind at once: each test of the matrix runs
once per declared kind (import, pre-scoring, export), the way the access matrix walks every URL.

In this process, on the test database: a job of each kind is made small (a few shards), then claimed, cancelled,
taken over, failed by a dependency that dies, or sent under the task names an older release queued. The kill
tests with real workers stay with their kinds (test_sharded_jobs, test_import_shards, test_export_shards).

The kinds that run whole and defer between tries (a webhook delivery) have a matrix of their own below: they have
no shards to plan, take back or cancel, and what they add is the wait between runs (studio.jobs.JobDeferred). The
kinds that run whole on a model (evaluation, alternatives) are tested with their apps."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from studio import engine
from studio.celery import app as celery_app
from studio.jobs import JobFailed, job_cancel, job_start
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
    with pytest.raises(ValueError, match="counts its own tries"):
        dataclasses.replace(kind, exhausted=lambda job: False)


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


# --- kinds that run whole and defer between runs -----------------------------------------------------------------

DEFERRING_KINDS = ["delivery"]


@dataclasses.dataclass
class DeferringWorld:
    """A queued job of a deferring kind, and its dependency: ``answers`` sets what the dependency does next
    (a status, or ``None``: it is gone), ``reached`` says how many times the job's work reached it."""

    job: object
    answers: Callable[[list[int | None]], None]
    reached: Callable[[], int]
    log: Callable[[], dict]  # what people read of the job's work (the delivery's log row)


def _delivery_world(project, settings, stack):
    from tests.fixtures_webhooks import Receiver
    from webhooks.models import Delivery, Webhook
    from webhooks.services import event_emit

    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["127.0.0.1"]
    receiver = Receiver(answers=(200,))
    stack.callback(receiver.close)
    Webhook.objects.create(project=project, url=receiver.url, events=["bundle.ready"], secret="s" * 64)
    (delivery,) = event_emit(project=project, event="bundle.ready", payload={"export": {"id": 7}})

    def answers(statuses):
        if None in statuses:
            receiver.close()
            receiver.server.server_close()  # nothing listens on its port any more: connection refused
        receiver.answers = [s for s in statuses if s is not None] or [200]

    def log():
        return Delivery.objects.filter(pk=delivery.pk).values("status", "attempts", "last_error").get()

    return DeferringWorld(job=delivery.job, answers=answers, reached=lambda: len(receiver.requests), log=log)


MAKE_DEFERRING = {"delivery": _delivery_world}


@pytest.fixture(params=DEFERRING_KINDS)
def deferring(request, project, settings):
    """(kind, its world)."""
    with contextlib.ExitStack() as stack:
        yield engine.job_kinds()[request.param], MAKE_DEFERRING[request.param](project, settings, stack)


def test_a_deferring_kind_runs_in_process_to_its_summary(deferring):
    kind, world = deferring
    assert not kind.sharded and kind.exhausted is not None
    done = engine.job_run_here(world.job)
    assert (done.status, done.message) == (JobStatus.SUCCEEDED, "Delivered on try 1 (HTTP 200).")
    assert world.reached() == 1 and world.log()["status"] == "delivered"


def test_a_deferring_job_queued_under_its_old_task_name_still_runs(deferring, monkeypatch):
    kind, world = deferring
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    celery_app.tasks[kind.old_task_names[-1]].apply_async(args=[world.job.pk])
    world.job.refresh_from_db()
    assert world.job.status == JobStatus.SUCCEEDED, world.job.message
    assert world.reached() == 1


def test_a_failed_try_defers_the_job_with_backoff_until_the_kind_gives_up(deferring, settings):
    # The dependency dies for good: each run is one try, and between tries the job waits in the queue, due later
    # each time (base × 3^n); no run sleeps. After the kind's own try limit the job fails, saying the last error.
    kind, world = deferring
    settings.WEBHOOKS_MAX_ATTEMPTS, settings.WEBHOOKS_RETRY_BASE_S = 3, 10
    settings.WEBHOOKS_BREAKER_FAILURES = 100
    world.answers([None])
    waits = []
    for _ in range(5):
        job = engine.job_run_here(world.job)
        if job.is_finished:
            break
        assert job.status == JobStatus.QUEUED and job.message.startswith(f"Try {len(waits) + 1} failed"), job.message
        waits.append(round((job.heartbeat_at - timezone.now()).total_seconds()))
    assert waits == [10, 30]
    assert job.status == JobStatus.FAILED
    assert job.message.startswith("Not delivered: 3 tries failed, the last: ConnectionRefusedError"), job.message
    assert world.log()["status"] == "failed" and world.log()["attempts"] == 3


def test_a_deferring_job_waits_for_a_slot_of_its_process_without_spending_a_try(deferring, settings):
    from webhooks.services import PROCESS_SLOTS

    kind, world = deferring
    settings.WEBHOOKS_DELIVERIES_PER_PROCESS = 1
    assert PROCESS_SLOTS.take()  # another delivery holds this process's one slot
    try:
        job = engine.job_run_here(world.job)
        assert (job.status, job.message) == (JobStatus.QUEUED, "Waits for a delivery slot of its worker.")
        assert world.reached() == 0 and world.log()["attempts"] == 0
    finally:
        PROCESS_SLOTS.give_back()
    assert engine.job_run_here(world.job).status == JobStatus.SUCCEEDED
    assert world.log()["attempts"] == 1


def test_a_deferring_job_cancelled_before_it_started_never_runs(deferring, django_capture_on_commit_callbacks):
    kind, world = deferring
    with django_capture_on_commit_callbacks(execute=True):
        assert job_cancel(world.job) == (True, "Cancelled before it started.")
    done = engine.job_run_here(world.job)
    assert (done.status, done.message) == (JobStatus.CANCELLED, "Cancelled before it started.")
    assert world.reached() == 0
    assert world.log() == {"status": "failed", "attempts": 0, "last_error": "Cancelled before it started."}


def test_a_cancel_while_it_waits_ends_it_and_no_try_follows(deferring, django_capture_on_commit_callbacks):
    kind, world = deferring
    world.answers([500, 200])
    assert engine.job_run_here(world.job).status == JobStatus.QUEUED
    with django_capture_on_commit_callbacks(execute=True):
        assert job_cancel(world.job) == (True, "Cancelled while it waited to run again.")
    assert engine.job_run_here(world.job).status == JobStatus.CANCELLED
    assert world.reached() == 1
    assert world.log()["status"] == "failed" and world.log()["last_error"] == "Cancelled while it waited to run again."


def test_a_cancel_during_a_try_ends_the_job_instead_of_its_next_wait(
    deferring, replaced, django_capture_on_commit_callbacks
):
    kind, world = deferring
    world.answers([500])

    def cancelled_meanwhile(job):
        job_cancel(job)  # someone cancels while the try is under way: the try goes on, no other follows
        return kind.run(job)

    replaced(kind, run=cancelled_meanwhile)
    with django_capture_on_commit_callbacks(execute=True):
        done = engine.job_run_here(world.job)
    assert (done.status, done.message) == (JobStatus.CANCELLED, "Cancelled on request.")
    assert world.reached() == 1 and world.log()["status"] == "failed"


def test_a_deferring_job_taken_over_counts_the_try_its_dead_worker_made(deferring, settings):
    # Its worker died during a try (the delivery still holds its endpoint slot) and the watchdog sends the next
    # attempt: the receiver may have had that try (at least once), so it counts, and the slot is given back.
    from webhooks.models import Delivery

    kind, world = deferring
    job = world.job
    assert job_start(job)
    Delivery.objects.filter(pk=job.pk).update(sending_since=timezone.now())
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_S + 1)
    type(job).objects.filter(pk=job.pk).update(heartbeat_at=stale)
    job.refresh_from_db()
    done = engine.job_run_here(job, attempt=job.attempts + 1)
    assert (done.status, done.message) == (JobStatus.SUCCEEDED, "Delivered on try 2 (HTTP 200).")
    assert world.reached() == 1


def test_the_watchdog_gives_up_on_a_deferring_job_by_its_tries_not_its_runs(
    deferring, settings, django_capture_on_commit_callbacks
):
    from studio.jobs import jobs_watch_once
    from webhooks.models import Delivery

    kind, world = deferring
    job = world.job
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_S + 1)
    # Many runs (waits for slots and pauses), one try: a stopped worker's job is run again, not failed.
    type(job).objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, attempts=settings.JOB_MAX_ATTEMPTS + 3, heartbeat_at=stale
    )
    Delivery.objects.filter(pk=job.pk).update(attempts=1)
    job.refresh_from_db()
    assert not job.attempts_exhausted()
    Delivery.objects.filter(pk=job.pk).update(attempts=settings.WEBHOOKS_MAX_ATTEMPTS)
    assert job.attempts_exhausted()
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_watch_once() == [(job._meta.label, job.pk, "failed")]
    assert world.log()["status"] == "failed" and world.log()["last_error"].startswith("Its worker stopped")
