"""Sharded jobs: one job row that people see, its work split into shards that any number of workers take at once.

A job's own task plans the shards (``shards_plan``: once; a resumed job keeps its plan) and sends them
(``shards_dispatch``). A shard task (``shard_run``) claims its shard with a compare-and-swap on the shard's attempt
counter, so two deliveries of one shard never run together, beats from a thread while it works, and checks at each
checkpoint that the job was not cancelled or ended and that its claim still holds. The run that completes the last
shard ends the job, exactly once: the job row is locked and its status read before the end is written. A shard that
raises goes back to the queue until it has been tried ``JOB_SHARD_MAX_ATTEMPTS`` times; then the job fails and
names the shard.

Work written by a shard must be idempotent (pre-scoring: unique (job, step) suggestions), because a shard whose
worker died is run again from its start. Writes are guarded by ``ShardProgress.guard`` inside their transaction:
it locks the job row and refuses to write once a cancel is recorded, so nothing is written after a cancel was
acknowledged.

Every worker runs ``shards_watch_once`` on a timer (``shards_watch_start``): a running shard whose beat is stale
(its worker died) goes back to the queue and is sent again; queued shards of a job that nothing is working on are
sent again (their message may be lost); and the job's own heartbeat is kept fresh while its shards are alive, so
the job-level recovery (``studio.jobs``) leaves a sharded job to this one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet, Sum
from django.utils import timezone

from studio.errors import describe_error
from studio.jobs import (  # the one job state machine (shards end their job through it), beat, retry and timer
    Heartbeat,
    JobCancelled,
    _stale_after,
    _transition,
    memory_give_back,
    watch_timer_start,
    write_retried,
)
from studio.models import JobBase, JobShard, JobStatus, ShardStatus

log = logging.getLogger(__name__)

UNFINISHED = (ShardStatus.QUEUED, ShardStatus.RUNNING)


class ShardStopped(Exception):
    """Raised inside a shard's work when it must stop writing: its claim was taken over, or its job ended."""


class ShardFatal(Exception):
    """A shard's failure that no retry mends (a model that is not there): the job fails at once with this message."""


def _shards_of(job: JobBase) -> QuerySet[JobShard]:
    return JobShard.objects.filter(job_model=job._meta.label, job_id=job.pk)


# --- planning and sending ------------------------------------------------------------------------------------


def shards_plan(job: JobBase, pieces: list[tuple[list, int]]) -> list[JobShard]:
    """Record the job's shards, ``(items, size)`` each, unless it has them already (a resumed job keeps its plan)."""
    existing = list(_shards_of(job).order_by("index"))
    if existing:
        return existing
    JobShard.objects.bulk_create(
        [
            JobShard(job_model=job._meta.label, job_id=job.pk, index=index, items=items, size=size)
            for index, (items, size) in enumerate(pieces)
        ],
        ignore_conflicts=True,  # two runs of one job planning at once agree on the plan; the first one's rows stay
    )
    return list(_shards_of(job).order_by("index"))


def _send(job: JobBase, shard: JobShard) -> None:
    # The task object (not send_task by name): registered in any process (a watchdog's, a test's), and eager runs
    # stay eager.
    task, queue = job.shard_task(), job.shard_queue()  # type: ignore[attr-defined]  # every job model is a KindJob
    task.apply_async(
        args=[job.pk, shard.index], queue=queue, retry=True, retry_policy=settings.JOB_SHARD_PUBLISH_RETRY_POLICY
    )


def shards_dispatch(job: JobBase) -> int:
    """Send every shard that is waiting, and take back (then send) the running ones whose worker stopped beating.
    A shard may get a second message; its claim lets only one run."""
    sent = 0
    now = timezone.now()
    for shard in _shards_of(job).filter(status__in=UNFINISHED).defer("items", "result").order_by("index"):
        if shard.status == ShardStatus.RUNNING:
            if shard.heartbeat_at and now - shard.heartbeat_at < _stale_after():
                continue  # alive on some worker
            if not _requeue(shard, now):
                continue
        else:
            JobShard.objects.filter(pk=shard.pk).update(heartbeat_at=now)  # when it was sent
        _send(job, shard)
        sent += 1
    return sent


def shards_take_back(job: JobBase) -> int:
    """The job was taken over because its heartbeat went stale: none of its shards was alive (a live shard beats
    for the job too), so its running ones lost their worker and go back to the queue. Returns how many."""
    now = timezone.now()
    return sum(_requeue(shard, now) for shard in _shards_of(job).filter(status=ShardStatus.RUNNING))


def _requeue(shard: JobShard, now: datetime) -> bool:
    """A running shard whose worker died goes back to the queue (compare-and-swap: one watcher does it)."""
    return bool(
        JobShard.objects.filter(
            pk=shard.pk,
            status=ShardStatus.RUNNING,
            attempts=shard.attempts,
            heartbeat_at=shard.heartbeat_at,
        ).update(status=ShardStatus.QUEUED, heartbeat_at=now)
    )


# --- running one shard ---------------------------------------------------------------------------------------


class ShardProgress:
    """What a shard's work reports through: counts (the job's progress is the sum of its shards'), checkpoints
    (cancel, take-over, job ended) and the write guard."""

    def __init__(self, job: JobBase, shard: JobShard, on_progress: Callable | None = None) -> None:
        self.job = job
        self.shard = shard
        self.on_progress = on_progress or (lambda job: None)
        self.totals = (0, 0)  # the job's units done and failed, summed over its shards at the last report

    def start(self, *, done: int) -> None:
        """A run starts from what is stored: ``done`` units the shard's earlier runs wrote already."""
        self.shard.done, self.shard.failed = done, 0
        self._record()

    def add(self, *, done: int = 0, failed: int = 0) -> None:
        self.shard.done += done
        self.shard.failed += failed
        self._record()

    def _record(self) -> None:
        shard, job = self.shard, self.job
        now = timezone.now()
        if not JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts, status=ShardStatus.RUNNING).update(
            done=shard.done, failed=shard.failed, heartbeat_at=now
        ):
            raise ShardStopped()
        totals = _shards_of(job).aggregate(done=Sum("done"), failed=Sum("failed"))
        self.totals = (totals["done"] or 0, totals["failed"] or 0)
        job.progress_done = sum(self.totals)
        type(job)._default_manager.filter(pk=job.pk, status=JobStatus.RUNNING).update(
            progress_done=job.progress_done, heartbeat_at=now
        )
        self.checkpoint()

    def report(self) -> None:
        """Tell the caller of an in-process run (the ``prescore`` command prints it); after the job's fields are set."""
        self.on_progress(self.job)

    def checkpoint(self) -> None:
        row = type(self.job)._default_manager.filter(pk=self.job.pk).values("status", "cancel_requested").first()
        if row is None or row["status"] != JobStatus.RUNNING:
            raise ShardStopped()
        if row["cancel_requested"]:
            raise JobCancelled()

    def guard(self) -> None:
        """Call inside the transaction that writes the shard's results: locks the job row (a cancel request waits
        for this write, or this write sees the cancel) and raises instead of writing after a cancel or take-over."""
        row = (
            type(self.job)
            ._default_manager.select_for_update()
            .filter(pk=self.job.pk)
            .values("status", "cancel_requested")
            .first()
        )
        if row is None or row["status"] != JobStatus.RUNNING:
            raise ShardStopped()
        if row["cancel_requested"]:
            raise JobCancelled()
        if not JobShard.objects.filter(
            pk=self.shard.pk, attempts=self.shard.attempts, status=ShardStatus.RUNNING
        ).exists():
            raise ShardStopped()


def _shard_beat(job: JobBase, shard: JobShard) -> Heartbeat:
    """Beats for the shard and its job while the shard's work runs."""
    mine = JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts, status=ShardStatus.RUNNING)
    running_job = type(job)._default_manager.filter(pk=job.pk, status=JobStatus.RUNNING)

    def beat() -> None:
        now = timezone.now()
        mine.update(heartbeat_at=now)
        running_job.update(heartbeat_at=now)

    return Heartbeat(f"shard-beat-{job.pk}-{shard.index}", beat)


def _claim(shard: JobShard) -> bool:
    """Take the shard for this run: it waits, or its last run's worker stopped beating."""
    now = timezone.now()
    claimable = Q(status=ShardStatus.QUEUED) | Q(status=ShardStatus.RUNNING, heartbeat_at__lt=now - _stale_after())
    if not JobShard.objects.filter(claimable, pk=shard.pk, attempts=shard.attempts).update(
        status=ShardStatus.RUNNING, attempts=F("attempts") + 1, heartbeat_at=now
    ):
        return False
    shard.refresh_from_db()
    return True


def shard_run(
    job: JobBase,
    index: int,
    work: Callable[[Any, JobShard, ShardProgress], None],
    *,
    summarize: Callable[[Any, list[JobShard]], str] | None = None,
    on_progress: Callable | None = None,
    resend: bool = True,
    on_complete: Callable[[Any], None] | None = None,
) -> str:
    """Run shard ``index`` of ``job``: ``work(job, shard, progress)``; returns what happened, in a word.

    ``summarize(job, shards)`` writes the job's summary when this run completes its last shard (it may set
    fields on the job row). ``resend`` False: a shard that failed is not sent to the broker again (in-process
    runs retry it themselves). ``on_complete(job)``, when given, is called instead when this run completes the
    last shard, and the job stays running: a job with a last step after its shards (an export assembles its
    bundle) queues that step there, the way a chord's callback follows its group."""
    model = type(job)
    job.refresh_from_db()
    shard = JobShard.objects.get(job_model=job._meta.label, job_id=job.pk, index=index)
    if job.is_finished or shard.status not in UNFINISHED:
        return "nothing to do"
    if job.cancel_requested:
        shards_job_end(job, JobStatus.CANCELLED, "Cancelled on request.")
        return "cancelled"
    if not _claim(shard):
        return "taken"
    beat = _shard_beat(job, shard)
    beat.start()
    fatal = False
    try:
        work(job, shard, ShardProgress(job, shard, on_progress))
    except JobCancelled:
        outcome, message = ShardStatus.CANCELLED, "Cancelled on request."
    except ShardStopped:
        log.warning(
            "%s %s shard %s (attempt %s) stopped: taken over or its job ended",
            model.__name__,
            job.pk,
            index,
            shard.attempts,
        )
        return "stopped"
    except ShardFatal as exc:
        outcome, message, fatal = ShardStatus.FAILED, str(exc), True
    except Exception as exc:
        log.exception("%s %s shard %s failed", model.__name__, job.pk, index)
        outcome, message = ShardStatus.FAILED, describe_error(exc)
    else:
        outcome, message = ShardStatus.DONE, ""
    finally:
        beat.stop()
        memory_give_back()

    def end() -> None:
        mine = JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts, status=ShardStatus.RUNNING)
        if outcome == ShardStatus.DONE:
            # (Or done already: this end was retried after its first try recorded that much.)
            done = (
                mine.update(status=ShardStatus.DONE, message="")
                or JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts, status=ShardStatus.DONE).exists()
            )
            if done:
                if on_complete is None:
                    assert summarize is not None, "a sharded job ends by summarize or on_complete"
                    _job_finish_if_complete(job, summarize)
                elif not _shards_of(job).exclude(status=ShardStatus.DONE).exists():
                    on_complete(job)  # two last shards may both call it: the step it queues claims the job once
        elif outcome == ShardStatus.CANCELLED:
            mine.update(status=ShardStatus.CANCELLED, message=message)
            shards_job_end(job, JobStatus.CANCELLED, "Cancelled on request.")
        elif not fatal and shard.attempts < settings.JOB_SHARD_MAX_ATTEMPTS:  # tried again, on any worker
            if mine.update(status=ShardStatus.QUEUED, message=message, heartbeat_at=timezone.now()) and resend:
                _send(job, shard)
        elif mine.update(status=ShardStatus.FAILED, message=message):
            shards_job_end(
                job,
                JobStatus.FAILED,
                message if fatal else f"Shard {index + 1} failed {shard.attempts} times: {message}",
            )

    write_retried(end, f"{model.__name__} {job.pk} shard {index}")
    return outcome


def _job_finish_if_complete(job: JobBase, summarize: Callable[[Any, list[JobShard]], str]) -> bool:
    """End the job when none of its shards is left; the locked row makes the last two shards end it once."""
    model = type(job)
    with transaction.atomic():
        locked = model._default_manager.select_for_update().get(pk=job.pk)
        if locked.is_finished:
            return False
        shards = list(_shards_of(job).order_by("index"))
        if any(s.status != ShardStatus.DONE for s in shards):
            return False
        message = summarize(locked, shards)
        totals = sum(s.done + s.failed for s in shards)
        model._default_manager.filter(pk=job.pk).update(progress_done=totals)
        _transition(locked, JobStatus.SUCCEEDED, finished_at=timezone.now(), message=message)
    job.refresh_from_db()
    return True


def shards_job_end(job: JobBase, status: str, message: str) -> bool:
    """End a sharded job (succeeded with no shards, failed, cancelled) once: the row is locked and its status read
    first. Its waiting shards are cancelled; running ones stop at their next checkpoint."""
    model = type(job)
    with transaction.atomic():
        locked = model._default_manager.select_for_update().get(pk=job.pk)
        if locked.is_finished:
            return False
        _transition(locked, status, finished_at=timezone.now(), message=message)
        _shards_of(job).filter(status=ShardStatus.QUEUED).update(status=ShardStatus.CANCELLED)
    job.refresh_from_db()
    return True


def shards_run_here(
    job: JobBase,
    work: Callable[[Any, JobShard, ShardProgress], None],
    *,
    summarize: Callable[[Any, list[JobShard]], str] | None = None,
    on_progress: Callable | None = None,
    on_complete: Callable[[Any], None] | None = None,
) -> None:
    """Run every shard of ``job`` in this process, in order (the ``prescore`` command, tests): the same shard runs
    a worker makes, with failed shards retried here up to the attempt limit."""
    for _ in range(settings.JOB_SHARD_MAX_ATTEMPTS):
        for shard in list(_shards_of(job).filter(status__in=UNFINISHED).order_by("index")):
            shard_run(
                job,
                shard.index,
                work,
                summarize=summarize,
                on_progress=on_progress,
                resend=False,
                on_complete=on_complete,
            )
        job.refresh_from_db()
        if job.is_finished or not _shards_of(job).filter(status__in=UNFINISHED).exists():
            return


# --- the watchdog --------------------------------------------------------------------------------------------


def shards_watch_once() -> list[tuple[str, int, int, str]]:
    """Take back stale shards and send them again; keep alive the heartbeat of jobs whose shards are alive."""
    now = timezone.now()
    cutoff = now - _stale_after()
    acted = []
    jobs = {}
    for key in JobShard.objects.filter(status__in=UNFINISHED).values_list("job_model", "job_id").distinct():
        model = apps.get_model(key[0])
        job = model.objects.filter(pk=key[1]).first()
        if job is None or job.is_finished:  # the job ended (failed, cancelled) or was deleted: nothing to run
            JobShard.objects.filter(job_model=key[0], job_id=key[1], status__in=UNFINISHED).update(
                status=ShardStatus.CANCELLED
            )
            continue
        jobs[key] = job
    for (label, job_id), job in jobs.items():
        # Without their items and results: every worker's watchdog reads them a few times per stale window, and a
        # million-pair export's unfinished shards hold a million annotation ids.
        unfinished = JobShard.objects.filter(job_model=label, job_id=job_id, status__in=UNFINISHED)
        shards = list(unfinished.defer("items", "result").order_by("index"))
        running_fresh = any(
            s.status == ShardStatus.RUNNING and s.heartbeat_at and s.heartbeat_at >= cutoff for s in shards
        )
        for shard in shards:
            stale = shard.heartbeat_at is None or shard.heartbeat_at < cutoff
            if not stale:
                continue
            if shard.status == ShardStatus.RUNNING:
                if shard.attempts >= settings.JOB_SHARD_MAX_ATTEMPTS:
                    if JobShard.objects.filter(
                        pk=shard.pk,
                        attempts=shard.attempts,
                        status=ShardStatus.RUNNING,
                        heartbeat_at=shard.heartbeat_at,
                    ).update(status=ShardStatus.FAILED):
                        shards_job_end(
                            job,
                            JobStatus.FAILED,
                            f"Shard {shard.index + 1}: its worker stopped {shard.attempts} times; not tried again.",
                        )
                        acted.append((label, job_id, shard.index, "failed"))
                    continue
                if _requeue(shard, now):
                    _send(job, shard)
                    acted.append((label, job_id, shard.index, "resent"))
            elif not running_fresh and JobShard.objects.filter(  # queued, nothing of the job moves: message lost?
                pk=shard.pk, status=ShardStatus.QUEUED, heartbeat_at=shard.heartbeat_at
            ).update(heartbeat_at=now):
                _send(job, shard)
                acted.append((label, job_id, shard.index, "resent"))
        # The shards are alive (running, or waiting in the queue): the job is not stale. A job someone cancelled is
        # kept alive by its running shards' own beats only, so the job watchdog cancels it once they are missed
        # (studio.jobs.job_cancel_bound_s) instead of when a dead worker's shard is taken back and run again.
        type(job)._default_manager.filter(pk=job_id, status=JobStatus.RUNNING, cancel_requested=False).update(
            heartbeat_at=now
        )
    return acted


def shards_watch_start() -> threading.Thread:
    """A daemon timer in a worker process: ``shards_watch_once`` a few times per stale window."""

    def watch() -> None:
        acted = shards_watch_once()
        if acted:
            log.warning("shard watchdog: %s", acted)

    return watch_timer_start("shard-watchdog", lambda: max(0.5, settings.JOB_STALE_AFTER_S / 3), watch)


def shards_all_done(job: JobBase) -> bool:
    """The job has a plan and every shard of it completed."""
    shards = _shards_of(job)
    return shards.exists() and not shards.exclude(status=ShardStatus.DONE).exists()


def shards_of(job: JobBase) -> list[JobShard]:
    """The job's shards, in plan order."""
    return list(_shards_of(job).order_by("index"))


def shards_results(job: JobBase) -> Iterator[Any]:  # each shard's JSON result
    """Each shard's ``result``, in plan order, read one shard at a time: together, a big job's results (an export's
    sources and images per shard) need not fit in a worker's memory."""
    for pk in list(_shards_of(job).order_by("index").values_list("pk", flat=True)):
        yield JobShard.objects.filter(pk=pk).values_list("result", flat=True).get()


__all__ = [
    "ShardFatal",
    "ShardProgress",
    "ShardStopped",
    "shard_run",
    "shards_all_done",
    "shards_dispatch",
    "shards_job_end",
    "shards_of",
    "shards_plan",
    "shards_results",
    "shards_run_here",
    "shards_take_back",
    "shards_watch_once",
    "shards_watch_start",
]
