"""The job engine: each kind of background job is declared once (a ``JobKind``) and run by one engine.

A product app declares its kinds in its ``jobs`` module (``traces/jobs.py``: imports; ``prescoring/jobs.py``;
``exports/jobs.py``) with ``job_kind_register``; the engine finds them the way Django finds admin modules
(``job_kinds``). A kind says what is particular to it, and nothing else:

- ``plan(job, scratch)``: the job's shards, ``(items, size)`` each; called once, on the claimed job, in a scratch
  folder and with the job beating (an import unpacks its upload). ``JobFailed`` ends the job with its message as it
  is; any other exception ends it with ``describe_error``'s words (the worker log keeps the traceback).
- ``work(job, shard, progress)``: one shard, on whichever worker took it (``studio.shards.shard_run``).
- ``summarize(job, shards)``: the job's summary when its last shard completed (the job row is locked), or when
  its plan holds no shard.
- ``assemble(job)``, optional: a last step after the shards (an export builds its bundle): the shard that
  completes the last one sends the job's task again, as the next attempt, and that run assembles (``job_run``).
- ``queue(job)``: where the job's task and its shards go (model scoring: ``gpu``).

A kind without shards (an evaluation, a step's alternatives: one model pass on one gpu worker; a webhook delivery:
one POST) says ``run(job)`` instead, the whole work returning its summary, run by ``studio.jobs.job_run`` (claim,
heartbeat, retries on a lost database connection, cancel, failure). Its work may end a run without ending the job
(``JobDeferred``: a delivery whose receiver failed waits for its next try, one whose receiver is busy or paused
waits its turn): the job goes back to the queue and the engine sends its task again after the wait, so no worker
thread sleeps through it. Such a kind counts its own tries, so it says when a job whose worker stopped is given up
(``exhausted(job)``): the engine's default, ``JOB_MAX_ATTEMPTS`` runs, would count its waits too.

What every kind gets from the engine (``studio.jobs`` is the state machine, ``studio.shards`` the shards'):
claiming a run (``job_start``), heartbeats, take-over (a job taken over gets its running shards back: they lost
their worker), retries of a failed shard, cancel, failure, runs in this process (``job_run_here``: the
management commands, tests, the embedded default's commands) and assembly. Each kind's Celery tasks are made
here: ``jobs.<name>.run`` and ``jobs.<name>.shard``, and, under the names they had before the engine, aliases
(``old_task_names``), so messages already queued by an older release still run.

Services enqueue through the engine (``job_enqueue``, ``task_send``), never by importing a tasks module, so no
app's services and tasks import each other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import translation
from django.utils.module_loading import autodiscover_modules

from studio.celery import app as celery_app
from studio.errors import describe_error
from studio.i18n import job_language
from studio.jobs import (
    JobCancelled,
    JobDeferred,
    JobFailed,
    JobSuperseded,
    job_attempt_running,
    job_pause,
    job_run,
    job_start,
    job_task_send,
)
from studio.logs import log_context_set
from studio.models import JobBase, JobShard, JobStatus
from studio.shards import (
    ShardProgress,
    shard_run,
    shards_all_done,
    shards_dispatch,
    shards_job_end,
    shards_of,
    shards_plan,
    shards_run_here,
    shards_take_back,
)

log = logging.getLogger(__name__)

J = TypeVar("J", bound=JobBase)

Pieces = list[tuple[list, int]]


def _default_queue(job: JobBase) -> str:
    return settings.CELERY_TASK_DEFAULT_QUEUE


@dataclass(frozen=True)
class JobKind:
    """One kind of sharded background job, declared once (module docstring)."""

    name: str
    model: str  # the job model's label, e.g. "traces.ImportJob"
    plan: Callable[[Any, Path], Pieces] | None = None
    work: Callable[[Any, JobShard, ShardProgress], None] | None = None
    summarize: Callable[[Any, list[JobShard]], str] | None = None
    assemble: Callable[[Any], str] | None = None
    queue: Callable[[Any], str] = _default_queue
    related: tuple[str, ...] = ()  # what loading a job selects with it (its project)
    old_task_names: tuple[str, ...] = ()  # the job's task under the names of older releases
    old_shard_task_names: tuple[str, ...] = ()

    # The stored files a job of this kind owns (an import's upload, an export's parts and bundle), given back by the
    # engine through the job (KindJob): ``release_files(job)`` once its end is committed, what it no longer needs;
    # ``delete_files(job)`` when its row goes, everything (release_files' files when not given); ``sweep_files(now)``
    # on the watchdog's timer, ended jobs' files past their keeping time (returns how many). Most kinds hold none.
    release_files: Callable[[Any], object] | None = None
    delete_files: Callable[[Any], object] | None = None
    sweep_files: Callable[[Any], int] | None = None

    run: Callable[[Any], str] | None = None  # a kind without shards: its whole work
    # A kind whose runs defer (studio.jobs.JobDeferred): whether a job whose worker stopped is given up, not sent again.
    exhausted: Callable[[Any], bool] | None = None

    def __post_init__(self) -> None:
        if self.exhausted is not None and self.run is None:
            raise ValueError(f"job kind {self.name!r}: only a kind that runs whole defers, and counts its own tries")
        if self.run is not None:
            if any(part is not None for part in (self.plan, self.work, self.summarize, self.assemble)):
                raise ValueError(f"job kind {self.name!r}: a kind runs whole (run) or in shards (plan, work), not both")
            return
        if self.plan is None or self.work is None:
            raise ValueError(f"job kind {self.name!r}: a sharded kind needs plan and work")
        if (self.summarize is None) == (self.assemble is None):
            raise ValueError(f"job kind {self.name!r}: a job ends by summarize or by assemble, one of them")

    @property
    def sharded(self) -> bool:
        return self.run is None

    @property
    def task_name(self) -> str:
        return f"jobs.{self.name}.run"

    @property
    def shard_task_name(self) -> str:
        return f"jobs.{self.name}.shard"

    def load(self, job_id: int) -> Any:  # a row of the kind's job model
        from django.apps import apps

        model = apps.get_model(self.model)
        return model.objects.select_related(*self.related).get(pk=job_id)


# --- the registry ----------------------------------------------------------------------------------------------

_KINDS: dict[str, JobKind] = {}
_discovered = False
# A web process's request threads may ask at once: one discovers, the others wait for the whole registry.
_discovering = threading.RLock()


def job_kind_register(kind: JobKind) -> JobKind:
    """Add ``kind`` to the registry (from its app's ``jobs`` module) and make its Celery tasks."""
    known = _KINDS.get(kind.name)
    if known is not None and known is not kind and known.model != kind.model:
        raise ValueError(f"job kind {kind.name!r} is declared twice ({known.model}, {kind.model})")
    _KINDS[kind.name] = kind
    _tasks_make(kind)
    return kind


def job_kinds() -> dict[str, JobKind]:
    """Every declared kind, by name (each installed app's ``jobs`` module is imported once, first)."""
    global _discovered
    with _discovering:
        if not _discovered:
            autodiscover_modules("jobs")
            _discovered = True
    return dict(_KINDS)


def job_kind_of(job_or_model: Any) -> JobKind:  # Any: a job or job model, or KindJob's self
    """The kind of a job (or of a job model)."""
    label = job_or_model._meta.label
    for kind in job_kinds().values():
        if kind.model == label:
            return kind
    raise LookupError(f"{label} is not a registered job kind (studio.engine.job_kind_register)")


class KindJob:
    """A job model's answers about its tasks and queue, from its registered kind: the job watchdogs
    (``studio.jobs.jobs_watch_once``, ``studio.shards``) send its tasks through them."""

    def task_name(self) -> str:
        return job_kind_of(self).task_name

    @classmethod
    def kind_label_of_model(cls) -> str:
        return job_kind_of(cls).name

    def queue_name(self) -> str:
        return job_kind_of(self).queue(self)

    def shard_task(self) -> Any:  # a Celery task (Celery is untyped)
        return _TASKS[job_kind_of(self).shard_task_name]

    def shard_queue(self) -> str:
        return self.queue_name()

    def release_files(self) -> None:
        """Delete the stored files this job no longer needs now that it has ended (called once its end is committed,
        by ``studio.jobs.job_release``)."""
        kind = job_kind_of(self)
        if kind.release_files is not None:
            kind.release_files(self)

    def files_delete(self) -> None:
        """Delete every stored file this job owns, for its row is going (its project is deleted)."""
        kind = job_kind_of(self)
        delete = kind.delete_files or kind.release_files
        if delete is not None:
            delete(self)

    @classmethod
    def sweep_expired_files(cls, *, now: datetime) -> int:
        """Delete files of ended jobs of this kind whose keeping time has passed; returns how many."""
        kind = job_kind_of(cls)
        return kind.sweep_files(now) if kind.sweep_files is not None else 0

    def attempts_exhausted(self) -> bool:
        exhausted = job_kind_of(self).exhausted
        if exhausted is not None:
            return exhausted(self)
        return JobBase.attempts_exhausted(self)  # type: ignore[arg-type]  # (a KindJob is always a JobBase)


# --- the Celery tasks ------------------------------------------------------------------------------------------

_TASKS: dict[str, Any] = {}


def _tasks_make(kind: JobKind) -> None:
    """The kind's run and shard tasks, and an alias of each under its older names."""

    # Every line a task logs names its job (studio.logs): a worker's log is read job by job.
    def run(job_id: int, attempt: int | None = None) -> None:
        with log_context_set(job_id=job_id, job_kind=kind.name):
            job_dispatch(kind, job_id=job_id, attempt=attempt)

    def shard(job_id: int, index: int) -> str:
        with log_context_set(job_id=job_id, job_kind=kind.name, shard=index):
            return job_shard_run(kind, job_id=job_id, index=index)

    made: list[tuple[tuple[str, ...], Callable[..., object]]] = [((kind.task_name, *kind.old_task_names), run)]
    if kind.sharded:
        made.append(((kind.shard_task_name, *kind.old_shard_task_names), shard))
    for names, function in made:
        for name in names:
            if name not in _TASKS:
                _TASKS[name] = celery_app.task(name=name, acks_late=True)(function)


def tasks_register() -> list[str]:
    """Make every kind's tasks (a worker does at start, through ``studio.tasks``); returns their names."""
    job_kinds()
    return sorted(_TASKS)


_every_task_loaded = False
# Celery's autodiscovery answers a second thread that asks while a first is still importing the tasks modules with
# nothing at all (``celery.loaders.base.autodiscover_tasks``): that thread would find the registry half filled. One
# thread loads; the others wait for the whole registry.
_loading_every_task = threading.Lock()


def tasks_load_every() -> None:
    """Register every task this process can send: every kind's, and every installed app's tasks module (what a
    worker imports at start). The web process does it before it serves its first request (``studio.asgi``); any
    other process does it on its first send."""
    global _every_task_loaded
    with _loading_every_task:
        if not _every_task_loaded:
            tasks_register()
            celery_app.loader.import_default_modules()
            celery_app.finalize()
            _every_task_loaded = True


def task_send(name: str, *, args: list | None = None, kwargs: dict | None = None, **options: Any) -> None:
    """Send the task registered as ``name`` through its task object (an eager setting runs it here): how services
    ask for a task without importing their app's tasks module."""
    _task(name).apply_async(args=args or [], kwargs=kwargs or {}, **options)


def _task(name: str) -> Any:  # a Celery task (Celery is untyped)
    task = _TASKS.get(name)
    if task is None:
        tasks_load_every()
        task = _TASKS.setdefault(name, celery_app.tasks[name])
    return task


def job_enqueue(job: JobBase) -> None:
    """Queue ``job``'s task once its row is committed (``studio.jobs.job_task_send``: a broker that cannot be
    reached fails the job and the request answers 503). Any job model: a registered kind, or one whose model
    names its task (``JobBase.task_name``)."""
    job_task_send(_task(job.task_name()), job, queue=job.queue_name())


# --- running a job of a kind -----------------------------------------------------------------------------------


def job_begin(kind: JobKind, job: JobBase, *, attempt: int | None = None) -> bool:
    """Claim the job and plan its shards (once: a resumed job keeps its plan); False when this run must not go on.
    A job taken over (its heartbeat went stale) had no shard alive, for a live shard keeps it fresh: its running
    shards' workers are gone, and they go back to the queue."""
    assert kind.plan is not None, f"job kind {kind.name!r} has no shards to plan"
    taken_over = job.status == JobStatus.RUNNING
    if not job_start(job, attempt=attempt):
        return False
    if shards_of(job):
        if taken_over:
            shards_take_back(job)
    else:
        try:
            with job_attempt_running(job) as scratch:
                pieces = kind.plan(job, scratch)
                with transaction.atomic():
                    shards_plan(job, pieces)
        except JobFailed as exc:
            shards_job_end(job, JobStatus.FAILED, str(exc))
            return False
        except Exception as exc:  # noqa: BLE001 - every failure to plan ends the job, said why; the log keeps the rest
            log.exception("%s job %s could not be planned", kind.name, job.pk)
            shards_job_end(job, JobStatus.FAILED, describe_error(exc))
            return False
    shards = shards_of(job)
    job.progress_total = sum(shard.size for shard in shards)
    type(job)._default_manager.filter(pk=job.pk).update(progress_total=job.progress_total)
    if not shards:
        assert kind.summarize is not None, f"job kind {kind.name!r}: a plan without shards needs summarize"
        shards_job_end(job, JobStatus.SUCCEEDED, kind.summarize(job, []))
        return False
    return True


def job_dispatch(kind: JobKind, *, job_id: int, attempt: int | None = None) -> JobBase:
    """What a worker does with a job's task: claim the job, plan it and send its shards to every worker on the
    kind's queue. A kind with an assembly: once every shard is done (the last shard sent the task again; the job
    watchdog does when that message is lost), assemble and end the job, once."""
    job = kind.load(job_id)
    # The job's words (its summary, its errors) are its requester's language, whoever's worker runs it.
    with translation.override(job_language(job)):
        if kind.run is not None:
            return job_run(
                job, kind.run, attempt=attempt, on_defer=lambda job, after_s: _send_later(kind, job, after_s)
            )
        if kind.assemble is not None and shards_all_done(job):
            return job_run(job, _assembly(kind), attempt=attempt)
        if job_begin(kind, job, attempt=attempt):
            shards_dispatch(job)
        return job


def job_shard_run(kind: JobKind, *, job_id: int, index: int) -> str:
    """One shard of a job, in whichever worker took it; the run that completes the last shard ends the job (or
    sends it on to its assembly)."""
    job = kind.load(job_id)
    assert kind.work is not None, f"job kind {kind.name!r} has no shards"
    with translation.override(job_language(job)):
        if kind.assemble is not None:
            return shard_run(job, index, kind.work, on_complete=lambda job: _assemble_later(kind, job))
        return shard_run(job, index, kind.work, summarize=kind.summarize)


def _assembly(kind: JobKind) -> Callable[[Any], str]:
    """The kind's assembly as a run's work, tried like a shard: up to ``JOB_SHARD_MAX_ATTEMPTS`` times, pausing
    ``JOB_ASSEMBLE_RETRY_PAUSE_S`` before the second try and twice as long before each next (a cancel still ends it
    meanwhile), so a storage that hangs for a while, which the shards are retried through, does not end the job at
    its first timeout. ``JobFailed`` ends it at once, a lost database connection is ``job_run``'s to retry, and the
    last failure ends the job in ``describe_error``'s words."""
    assert kind.assemble is not None
    assemble = kind.assemble

    def work(job: JobBase) -> str:
        tries = 0
        while True:
            tries += 1
            try:
                return assemble(job)
            except (JobFailed, JobCancelled, JobSuperseded, JobDeferred, DatabaseError):
                raise
            except Exception as exc:
                if tries >= settings.JOB_SHARD_MAX_ATTEMPTS:
                    log.exception("%s job %s: its last step failed %s times", kind.name, job.pk, tries)
                    raise JobFailed(f"Its last step failed {tries} times: {describe_error(exc)}") from exc
                pause = settings.JOB_ASSEMBLE_RETRY_PAUSE_S * 2 ** (tries - 1)
                log.warning("%s job %s: its last step failed (%r); trying again in %s s", kind.name, job.pk, exc, pause)
                job_pause(job, pause)

    return work


def _send_later(kind: JobKind, job: JobBase, after_s: float) -> None:
    """A deferred job's next run, in ``after_s`` seconds. Not with an eager setting, which would run it here at once
    (a loop while a receiver stays busy), nor when the broker cannot take it: the job stays queued, due then, and the
    lost-message watchdog (``studio.jobs.jobs_resend_lost``) sends it once it is overdue."""
    if celery_app.conf.task_always_eager:
        return
    try:
        _task(kind.task_name).apply_async(args=[job.pk], countdown=after_s, queue=kind.queue(job))
    except Exception as exc:  # noqa: BLE001 - kombu raises several types for an unreachable broker
        log.warning("could not send %s job %s again: %s; the watchdog will", kind.name, job.pk, exc)


def _assemble_later(kind: JobKind, job: JobBase) -> None:
    """The last shard is done: send the job's task again to assemble, as the next attempt (two last shards may
    both send it; job_start lets one claim it)."""
    job.refresh_from_db()
    _task(kind.task_name).apply_async(args=[job.pk], kwargs={"attempt": job.attempts + 1}, queue=kind.queue(job))


def job_run_here(job: J, *, attempt: int | None = None, on_progress: Callable | None = None) -> J:
    """Run (or take over, after a worker died) a job in this process: the same plan, shard runs and assembly a
    worker makes, the shards one after the other (failed ones retried here up to the attempt limit). Returns the
    job as it ended."""
    kind = job_kind_of(job)
    job = kind.load(job.pk)
    with translation.override(job_language(job)):
        return _job_run_here(kind, job, attempt=attempt, on_progress=on_progress)


def _job_run_here(kind: JobKind, job: J, *, attempt: int | None, on_progress: Callable | None) -> J:
    if kind.run is not None:
        job_run(job, kind.run, attempt=attempt)
        job.refresh_from_db()
        return job
    assert kind.work is not None
    if job_begin(kind, job, attempt=attempt):
        if kind.assemble is not None:
            shards_run_here(job, kind.work, on_progress=on_progress, on_complete=lambda job: None)
        else:
            shards_run_here(job, kind.work, summarize=kind.summarize, on_progress=on_progress)
    job.refresh_from_db()
    if kind.assemble is not None and not job.is_finished and shards_all_done(job):
        job_run(job, _assembly(kind), attempt=job.attempts + 1)
        job.refresh_from_db()
    return job


__all__ = [
    "JobKind",
    "KindJob",
    "job_enqueue",
    "job_begin",
    "job_dispatch",
    "job_kind_of",
    "job_kind_register",
    "job_kinds",
    "job_run_here",
    "job_shard_run",
    "task_send",
    "tasks_load_every",
    "tasks_register",
]
