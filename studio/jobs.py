"""The background-job state machine, shared by imports, exports and pre-scoring, and how a job runs.

queued → running → succeeded | failed | cancelled; queued → cancelled (before it started); queued → failed (it
could not be queued: the broker was down); running → running when a run is taken over (its worker died); running →
queued when a run defers its job (``JobDeferred``: a webhook delivery waits for its receiver's next try).

Every job task calls ``job_run(job, work)``: it claims the run (an attempt number, compare-and-swap, so two
deliveries of one job never run together), beats from a thread while ``work`` runs, retries ``work`` when the
database connection dropped (the work is idempotent), and records the end on a fresh connection, retried until
the database answers: no database or broker blip leaves a job "running". If the worker dies anyway, the
watchdog (``jobs_watch_once``, a timer in every worker) finds the job's heartbeat stale and sends it again, or
fails it after ``JOB_MAX_ATTEMPTS``; a job whose message the broker lost before it started is sent again
(``jobs_resend_lost``). The end is announced (``studio.signals.job_ended``) once committed.

Disk: each attempt works in its own folder (``job_workdir``) under ``JOB_WORK_DIR``, removed when the attempt
ends; when a job ends (however: its run, a cancel, the watchdog) its folders go and the job gives back the files it
no longer needs (its kind's ``release_files``, e.g. an import's upload); ``jobs_sweep_files`` (the watchdog's timer)
removes what a killed process left and the files whose keeping time has passed.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, models, transaction
from django.db.models import ForeignObjectRel
from django.utils import timezone, translation
from django.utils.translation import gettext

from studio import metrics
from studio.errors import Conflict, describe_error
from studio.i18n import job_language
from studio.models import JobBase, JobShard, JobStatus
from studio.signals import job_ended, watchdog_passed

log = logging.getLogger(__name__)
# A line per job event (claimed, deferred, ended), with the job's id, kind, queue and attempt.
event_log = logging.getLogger("studio.jobs.events")
J = TypeVar("J", bound=JobBase)

JOB_TRANSITIONS: dict[str, frozenset[str]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.CANCELLED, JobStatus.FAILED}),
    JobStatus.RUNNING: frozenset(
        {JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED}
    ),
    JobStatus.SUCCEEDED: frozenset(),
    JobStatus.FAILED: frozenset(),
    JobStatus.CANCELLED: frozenset(),
}


class JobTransitionError(Exception):
    pass


class JobCancelled(Exception):
    """Raised inside a job's work when someone asked to cancel it."""


class JobSuperseded(Exception):
    """Raised inside a job's work when a newer attempt took the job over: this run stops writing."""


class JobFailed(Exception):
    """A job's work ends in failure for a reason people can act on; the message is shown as it is."""


class JobDeferred(Exception):
    """Raised by a job's work when this run ends without ending the job: the job goes back to the queue, to be run
    again in ``after_s`` seconds (``job_run``'s ``on_defer`` sends it). ``message`` says why, on the queued job."""

    def __init__(self, after_s: float, message: str):
        super().__init__(message)
        self.after_s = max(0.0, after_s)
        self.message = message


class JobQueueUnavailable(Exception):
    """The job could not be queued (the broker is unreachable); the job is marked failed, the request gets 503."""


def _stale_after() -> timedelta:
    return timedelta(seconds=settings.JOB_STALE_AFTER_S)


def _heartbeat_interval_s() -> float:
    # Several beats fit in the stale window, so a live run is never taken for a dead one.
    return max(0.2, min(10.0, settings.JOB_STALE_AFTER_S / 4))


def _beats_missed_after() -> timedelta:
    """A heartbeat older than this missed beats: two of a job's own and the shard watchdog's refresh of a sharded
    job (every stale/3 s). Not enough to take a job over (that waits ``JOB_STALE_AFTER_S``), but enough for a job
    someone asked to cancel: nothing is lost by stopping a job nobody wants, so it is cancelled then."""
    interval = _heartbeat_interval_s()
    return timedelta(seconds=max(2 * interval + 2, settings.JOB_STALE_AFTER_S / 3 + interval))


def _transition(job: JobBase, to: str, **fields: Any) -> None:
    if to not in JOB_TRANSITIONS[job.status]:
        raise JobTransitionError(f"{type(job).__name__} {job.pk}: cannot go from {job.status} to {to}")
    fields["status"] = to
    type(job)._default_manager.filter(pk=job.pk).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)
    if job.is_finished:  # listeners (webhooks) hear of the end only once it is committed
        transaction.on_commit(lambda: job_ended.send(sender=type(job), job=job))
        transaction.on_commit(lambda: job_release(job))
        transaction.on_commit(lambda: _job_ended_observe(job, to))
    else:
        _job_event(job, to)


def _job_event(job: JobBase, status: str, **extra: Any) -> None:
    """The job's one log line for this event (``studio.jobs.events``: a JSON object in production)."""
    event_log.info(
        "%s job %s %s (attempt %s)",
        job.kind_label(),
        job.pk,
        status,
        job.attempts,
        extra={
            "event": "job",
            "job_id": job.pk,
            "job_kind": job.kind_label(),
            "queue": job.queue_name(),
            "status": status,
            "attempt": job.attempts,
            **extra,
        },
    )


def _job_ended_observe(job: JobBase, status: str) -> None:
    duration_s = (
        round((job.finished_at - job.started_at).total_seconds(), 3) if job.started_at and job.finished_at else None
    )
    _job_event(job, status, duration_s=duration_s)
    metrics.observe_job_end(job, status)


# --- claiming a run ----------------------------------------------------------------------------------------


def job_start(job: JobBase, *, attempt: int | None = None) -> bool:
    """Claim the job for this run; False when this run must not go on.

    ``attempt`` is the attempt number the watchdog sent; a delivery without one (the first, or a broker's
    redelivery) may take over a running job only when its heartbeat is stale (its worker is gone)."""
    job.refresh_from_db()
    if job.is_finished:
        return False
    if job.cancel_requested:
        _transition(job, JobStatus.CANCELLED, finished_at=timezone.now(), message="Cancelled before it started.")
        return False
    now = timezone.now()
    if job.status == JobStatus.RUNNING:
        if attempt is not None and attempt != job.attempts + 1:
            return False  # an older message of the watchdog's: a newer attempt already runs
        if attempt is None and job.heartbeat_at and now - job.heartbeat_at < _stale_after():
            return False  # alive elsewhere
    claimed = (
        type(job)
        ._default_manager.filter(pk=job.pk, attempts=job.attempts, status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
        .update(
            status=JobStatus.RUNNING,
            attempts=job.attempts + 1,
            started_at=job.started_at or now,
            heartbeat_at=now,
        )
    )
    if not claimed:
        return False
    job.refresh_from_db()
    _job_event(job, JobStatus.RUNNING)
    return True


def _still_mine(job: JobBase) -> None:
    """Raise when this run was cancelled or taken over meanwhile (one query, at each progress report)."""
    row = type(job)._default_manager.filter(pk=job.pk).values("cancel_requested", "attempts", "status").first()
    if row is None or row["attempts"] != job.attempts or row["status"] != JobStatus.RUNNING:
        raise JobSuperseded()
    if row["cancel_requested"]:
        raise JobCancelled()


def job_progress(job: JobBase, *, done: int, total: int | None = None) -> None:
    """Record progress; raises JobCancelled when a cancel was requested, JobSuperseded when a newer run took over."""
    fields = {"progress_done": done, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["progress_total"] = total
    type(job)._default_manager.filter(pk=job.pk, attempts=job.attempts).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)
    _still_mine(job)


def job_pause(job: JobBase, seconds: float) -> None:
    """Wait ``seconds`` inside a run (its heartbeat goes on), looking every second for a cancel or a take-over:
    raised as at a checkpoint (``JobCancelled``, ``JobSuperseded``)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        _still_mine(job)


def job_add_error(job: JobBase, error: dict) -> None:
    job.errors = [*job.errors, error]
    type(job)._default_manager.filter(pk=job.pk).update(errors=job.errors)


class Heartbeat(threading.Thread):
    """Calls ``beat()`` every heartbeat interval from its own thread (and its own database connection) while a run's
    work goes on, so a long step (one large screenshot, one model batch) is never mistaken for a dead worker: a job's
    run beats for its job (``job_attempt_running``), a shard's for the shard and its job (``studio.shards``)."""

    def __init__(self, name: str, beat: Callable[[], object]):
        super().__init__(name=name, daemon=True)
        self.beat = beat
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(_heartbeat_interval_s()):
                try:
                    self.beat()
                except DatabaseError:
                    connection.close()  # a dropped connection: the next beat opens a new one
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)


def _job_beat(job: JobBase) -> Heartbeat:
    mine = type(job)._default_manager.filter(pk=job.pk, attempts=job.attempts, status=JobStatus.RUNNING)
    return Heartbeat(f"heartbeat-{type(job).__name__}-{job.pk}", lambda: mine.update(heartbeat_at=timezone.now()))


# --- running ---------------------------------------------------------------------------------------------


def _connection_lost(exc: Exception) -> bool:
    return isinstance(exc, (OperationalError, InterfaceError))


def _fresh_connection() -> None:
    """Drop this thread's database connection so the next query opens a new one; not inside a transaction
    (the caller's, e.g. a test's), which a closed connection would break."""
    if not connection.in_atomic_block:
        connection.close()


def write_retried(write: Callable[[], None], what: str) -> None:
    """Record a run's end (a job's, a shard's): ``write()`` on a fresh connection (the one the work used may be the
    one that broke), retried while the database does not answer, bounded. The last error is raised: the watchdog
    then finds the run stale and finishes or resends it."""
    delays = (0, 1, 2, 4, 8, 15, 30)
    for number, delay in enumerate(delays):
        time.sleep(delay)
        _fresh_connection()
        try:
            write()
            return
        except DatabaseError:
            if number == len(delays) - 1:
                raise
            log.warning("%s: could not record its end yet; retrying", what)


def _end(job: JobBase, status: str, message: str) -> None:
    """Record the run's end (``write_retried``), unless a newer attempt took the job over meanwhile."""

    def write() -> None:
        current = type(job)._default_manager.filter(pk=job.pk).values("attempts", "status").first()
        if current is None or current["attempts"] != job.attempts or current["status"] != JobStatus.RUNNING:
            log.warning(
                "%s %s: attempt %s ended after it was superseded; its end is not recorded",
                type(job).__name__,
                job.pk,
                job.attempts,
            )
            return
        job.status = current["status"]
        with transaction.atomic():
            _transition(job, status, finished_at=timezone.now(), message=message)

    write_retried(write, f"{type(job).__name__} {job.pk}")


def job_run(
    job: J,
    work: Callable[[J], str],
    *,
    attempt: int | None = None,
    on_defer: Callable[[J, float], None] | None = None,
) -> J:
    """Run ``work(job)`` (it returns the summary shown on success) as one attempt of ``job``; returns the job.

    ``work`` keeps its scratch files in ``job_workdir(job)``, made empty for it and removed afterwards. Work that
    raises ``JobDeferred`` puts the job back in the queue (``job_defer``), and ``on_defer(job, after_s)`` sends it
    again; without ``on_defer`` (a run in this process) the job stays queued for whoever runs it next."""
    if not job_start(job, attempt=attempt):
        return job
    tries = 0
    deferred: JobDeferred | None = None
    with job_attempt_running(job):
        while True:
            try:
                outcome = (JobStatus.SUCCEEDED, work(job))
            except JobDeferred as exc:
                deferred = exc
            except JobCancelled:
                outcome = (JobStatus.CANCELLED, "Cancelled on request.")
            except JobSuperseded:
                log.warning("%s %s: attempt %s superseded, stopping", type(job).__name__, job.pk, job.attempts)
                return job
            except JobFailed as exc:
                outcome = (JobStatus.FAILED, str(exc))
            except Exception as exc:  # noqa: BLE001 - every failure ends the job; the worker log keeps the traceback
                if _connection_lost(exc) and tries < settings.JOB_DB_RETRIES:
                    tries += 1
                    log.warning(
                        "%s %s: database connection lost (%s); retrying the work (%s/%s)",
                        type(job).__name__,
                        job.pk,
                        exc.__class__.__name__,
                        tries,
                        settings.JOB_DB_RETRIES,
                    )
                    _fresh_connection()
                    time.sleep(min(2**tries, 30))
                    continue
                log.exception("%s %s failed", type(job).__name__, job.pk)
                outcome = (JobStatus.FAILED, describe_error(exc))
            break
    if deferred is not None:
        if job_defer(job, after_s=deferred.after_s, message=deferred.message) and on_defer is not None:
            on_defer(job, deferred.after_s)
        return job
    _end(job, *outcome)
    return job


def job_defer(job: JobBase, *, after_s: float, message: str) -> bool:
    """This run ends and its job goes back to the queue, due in ``after_s`` seconds; True when it did. A queued
    job's ``heartbeat_at`` says when it was (or will be) sent again, so the lost-message watchdog
    (``jobs_resend_lost``) waits for the due time before it counts the job's message lost. A cancel requested
    meanwhile ends the job instead; a run taken over meanwhile writes nothing."""
    due = timezone.now() + timedelta(seconds=after_s)
    mine = type(job)._default_manager.filter(pk=job.pk, attempts=job.attempts, status=JobStatus.RUNNING)
    if mine.filter(cancel_requested=False).update(status=JobStatus.QUEUED, heartbeat_at=due, message=message):
        job.status, job.heartbeat_at, job.message = JobStatus.QUEUED, due, message
        return True
    if mine.exists():  # a cancel was requested while it ran
        _end(job, JobStatus.CANCELLED, "Cancelled on request.")
    return False


def _libc_malloc_trim() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc; another C library keeps its own ways
    except (OSError, AttributeError):
        return None


_malloc_trim = _libc_malloc_trim()


def memory_give_back() -> None:
    """Hand back to the system the memory a run freed. glibc keeps what a thread freed in its arena for the next
    allocation there: a worker that decoded eight 39.6 Mpx screenshots on its writer threads (1.3 GB at the peak,
    from 110 MB) would stay at 926 MB after the import; trimmed, it is back at about 100 MB. Called as each job
    run, plan and shard ends (``job_attempt_running``, ``studio.shards.shard_run``)."""
    if _malloc_trim is not None:
        _malloc_trim(0)


@contextlib.contextmanager
def job_attempt_running(job: JobBase) -> Iterator[Path]:
    """While the block runs, the claimed attempt beats from a thread and has its scratch folder (yielded), made
    empty for it and removed afterwards: ``job_run``'s, and a sharded job's planning (an import's), which may take
    long and is not the job's end."""
    workdir = _workdir_fresh(job)
    beat = _job_beat(job)
    beat.start()
    try:
        yield workdir
    finally:
        beat.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        memory_give_back()


# --- disk: scratch folders and files a job gives back ------------------------------------------------------

_WORKDIR_NAME = re.compile(r"^(?P<label>[a-z0-9_]+-[a-z0-9_]+)-(?P<pk>\d+)-(?P<attempt>\d+)$")


def _workdir_prefix(job: JobBase) -> str:
    return f"{job._meta.label_lower.replace('.', '-')}-{job.pk}-"


def job_workdir(job: JobBase) -> Path:
    """The running attempt's scratch folder. Under the data dir, not /tmp, and named by job and attempt: what a
    killed worker leaves is found and removed, and a superseded attempt never shares a folder with its successor."""
    return Path(settings.JOB_WORK_DIR) / f"{_workdir_prefix(job)}{job.attempts}"


def _workdir_fresh(job: JobBase) -> Path:
    for old in _job_workdirs(job):  # what earlier attempts (killed workers) left
        shutil.rmtree(old, ignore_errors=True)
    workdir = job_workdir(job)
    workdir.mkdir(parents=True)
    return workdir


def _job_workdirs(job: JobBase) -> list[Path]:
    root = Path(settings.JOB_WORK_DIR)
    return sorted(root.glob(f"{_workdir_prefix(job)}*")) if root.is_dir() else []


def job_release(job: JobBase) -> None:
    """Give back what an ended job holds on disk: its scratch folders, and the files it no longer needs."""
    for folder in _job_workdirs(job):
        shutil.rmtree(folder, ignore_errors=True)
    try:
        job.release_files()  # type: ignore[attr-defined]  # KindJob's, as every registered kind's model is
    except Exception:  # noqa: BLE001 - storage may be down; the sweep tries again later
        log.exception("%s %s: could not give back its files; the sweep will try again", type(job).__name__, job.pk)


def jobs_sweep_files(*, now: datetime | None = None) -> dict[str, int]:
    """Remove scratch folders whose job has ended, is gone or has moved to a newer attempt (a killed worker's
    leftovers), spooled request bodies older than a day (a killed web process's), and the files each job kind
    keeps only for a while; with the embedded broker, its messages a killed consumer claimed but never read go back
    into the queue and a killed producer's partial files go (``broker_filesystem.queue_sweep``). Returns how many
    of each were removed (or restored)."""
    now = now or timezone.now()
    models = {model._meta.label_lower.replace(".", "-"): model for model in job_models()}
    removed = {"workdirs": 0, "spooled_bodies": 0, "job_files": 0}
    root = Path(settings.JOB_WORK_DIR)
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        match = _WORKDIR_NAME.match(folder.name)
        model = models.get(match["label"]) if match else None
        if match is None or model is None:
            continue  # not a job's folder: not ours to remove
        row = model.objects.filter(pk=int(match["pk"])).values("status", "attempts").first()
        running = row is not None and row["status"] in (JobStatus.QUEUED, JobStatus.RUNNING)
        if running and int(match["attempt"]) >= row["attempts"]:
            continue  # the live attempt's
        shutil.rmtree(folder, ignore_errors=True)
        removed["workdirs"] += 1
    spool = Path(settings.FILE_UPLOAD_TEMP_DIR)
    cutoff = (now - timedelta(days=1)).timestamp()
    for file in spool.iterdir() if spool.is_dir() else []:
        try:
            if file.is_file() and file.stat().st_mtime < cutoff:
                file.unlink()
                removed["spooled_bodies"] += 1
            elif file.is_dir() and file.name.startswith("push-") and file.stat().st_mtime < cutoff:
                shutil.rmtree(file, ignore_errors=True)  # a pushed trace's folder (traces.services.trace_push)
                removed["spooled_bodies"] += 1
        except OSError:
            continue  # gone meanwhile, or not ours
    for model in models.values():
        removed["job_files"] += model.sweep_expired_files(now=now)
    queue = (getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}).get("data_folder_in")
    if queue and settings.CELERY_BROKER_URL.startswith("filesystem:"):  # the embedded broker's files
        from studio.broker_filesystem import queue_sweep

        swept = queue_sweep(queue, now=now.timestamp())
        removed["broker_claims_restored"], removed["broker_partials_removed"] = (
            swept["restored"],
            swept["partial_removed"],
        )
    return removed


# --- cancel ----------------------------------------------------------------------------------------------


def job_cancel(job: JobBase) -> tuple[bool, str]:
    """Cancel ``job`` in whatever state it is; returns (changed, what happened, in words)."""
    with transaction.atomic():
        job = type(job)._default_manager.select_for_update().get(pk=job.pk)
        if job.is_finished:
            return False, gettext("Nothing to cancel: the job already %(status)s.") % {
                "status": job.get_status_display().lower()
            }
        type(job)._default_manager.filter(pk=job.pk).update(cancel_requested=True)
        job.cancel_requested = True
        now = timezone.now()
        if job.status == JobStatus.QUEUED:
            said = (
                gettext("Cancelled before it started.")
                if job.started_at is None
                else gettext("Cancelled while it waited to run again.")
            )
            _transition(job, JobStatus.CANCELLED, finished_at=now, message=said)
            return True, said
        if job.heartbeat_at is None or now - job.heartbeat_at >= _beats_missed_after():
            _transition(
                job, JobStatus.CANCELLED, finished_at=now, message=gettext("Cancelled; its worker had stopped.")
            )
            return True, gettext("Cancelled: its worker had stopped, so it ended at once.")
    return True, gettext(
        "Cancel requested: a running worker stops at its next checkpoint, within seconds; if its worker has "
        "stopped, the job is cancelled as soon as its heartbeat is missed (within %(seconds)s s)."
    ) % {"seconds": math.ceil(job_cancel_bound_s())}


def job_cancel_bound_s() -> float:
    """The longest a cancelled running job whose worker has stopped waits for the watchdog, by the watchdog's own rule
    (``jobs_watch_once``): its last beat was at the latest when the cancel came, it has missed beats
    ``_beats_missed_after`` later, and a watchdog pass, one every ``JOB_WATCH_INTERVAL_S``, sees that at the next
    pass. (The shard watchdog keeps no cancelled job's heartbeat alive: only its running shards' own beats do.)"""
    return _beats_missed_after().total_seconds() + settings.JOB_WATCH_INTERVAL_S


# --- delete ----------------------------------------------------------------------------------------------


class JobDeleteRefused(Conflict):
    """A job cannot be deleted while it is queued or running: its workers would write into rows that are going."""


# Rows that point at a job (a pre-scoring job's suggestions: one a step) deleted per transaction, so deleting a job
# of 200,000 steps never reads them all into memory (Django's collector does) nor holds one long lock.
JOB_DELETE_BATCH = 5000


def job_cascades(model: type[models.Model]) -> list[ForeignObjectRel]:
    """The one-to-many relations whose rows go with a job of ``model`` (a pre-scoring job's suggestions): what
    ``job_delete`` deletes in batches and the admin's delete page counts. SET_NULL and the like are left to the
    job's own delete, which updates them in one statement."""
    return [r for r in model._meta.related_objects if r.one_to_many and r.on_delete is models.CASCADE]


def job_delete(job: JobBase, *, batch: int = JOB_DELETE_BATCH) -> dict[str, int]:
    """Delete an ended job with what it owns: the rows that cascade from it, a batch at a time; its shards (they
    name their job by model and id, with no foreign key, so they would outlive it); then the stored files only it
    owns (an export's bundle and parts, an import's upload and parts), once its row is gone. Refused while the job
    is queued or running. Returns what it removed, by model."""
    model = type(job)
    current = model._default_manager.filter(pk=job.pk).first()
    if current is None:
        return {}
    job = current
    if not job.is_finished:
        raise JobDeleteRefused(
            gettext("%(job)s %(id)s is %(status)s: cancel it or let it end, then delete it.")
            % {"job": job._meta.verbose_name, "id": job.pk, "status": job.status}
        )
    removed: dict[str, int] = {}
    for relation in job_cascades(model):
        rows = relation.related_model._base_manager.filter(**{relation.field.name: job.pk})
        while ids := list(rows.order_by("pk").values_list("pk", flat=True)[: max(1, batch)]):
            with transaction.atomic():
                relation.related_model._base_manager.filter(pk__in=ids).delete()
            label = relation.related_model._meta.label
            removed[label] = removed.get(label, 0) + len(ids)
    with transaction.atomic():
        removed[JobShard._meta.label] = JobShard.objects.filter(job_model=model._meta.label, job_id=job.pk).delete()[0]
        model._default_manager.filter(pk=job.pk).delete()
    removed[model._meta.label] = 1
    for folder in _job_workdirs(job):
        shutil.rmtree(folder, ignore_errors=True)
    # The files go once the row is gone: a failure before leaves the row pointing at files that still exist.
    job.files_delete()  # type: ignore[attr-defined]  # KindJob's, as every registered kind's model is
    return removed


# --- queueing --------------------------------------------------------------------------------------------


def job_task_send(task: Any, job: JobBase, *, queue: str | None = None) -> None:  # task: a Celery task
    """Send the job's task (to ``queue``, else the task's route) once the row that names it is committed; a broker
    that cannot be reached marks the job failed and raises JobQueueUnavailable (the request answers 503), instead of
    a job "queued" for ever. Services call it through ``studio.engine.job_enqueue``."""
    where = {"queue": queue} if queue else {}

    def send() -> None:
        try:
            task.apply_async(args=[job.pk], retry=True, retry_policy=settings.JOB_PUBLISH_RETRY_POLICY, **where)
        except Exception as exc:  # noqa: BLE001 - kombu raises several types for an unreachable broker
            log.warning("could not queue %s %s: %s", type(job).__name__, job.pk, exc)
            job.refresh_from_db()
            if not job.is_finished:
                _transition(
                    job,
                    JobStatus.FAILED,
                    finished_at=timezone.now(),
                    message=gettext("Could not be queued: the task broker is unreachable. Try again shortly."),
                )
            raise JobQueueUnavailable("the task queue is unreachable; the job was not started") from exc
        _job_event(job, JobStatus.QUEUED)

    transaction.on_commit(send)


# --- the watchdog ----------------------------------------------------------------------------------------


def job_models() -> list:
    """Every job model (the subclasses of JobBase), whichever app defines it."""
    from django.apps import apps

    from studio.models import JobBase

    return [model for model in apps.get_models() if issubclass(model, JobBase)]


def jobs_watch_once() -> list[tuple[str, int, str]]:
    """Find running jobs whose heartbeat is stale (their worker died) and send them again, or fail them after
    ``JOB_MAX_ATTEMPTS``. Several workers may watch at once: a compare-and-swap on the heartbeat lets one act."""
    from studio.celery import app as celery_app

    now = timezone.now()
    acted = []
    for model in job_models():
        stale = models.Q(heartbeat_at__lt=now - _stale_after())
        cancelled_and_silent = models.Q(cancel_requested=True, heartbeat_at__lt=now - _beats_missed_after())
        for job in model.objects.filter(stale | cancelled_and_silent, status=JobStatus.RUNNING):
            if not model.objects.filter(pk=job.pk, heartbeat_at=job.heartbeat_at, status=JobStatus.RUNNING).update(
                heartbeat_at=now
            ):
                continue  # another watcher took it
            if job.cancel_requested:
                job.status = JobStatus.RUNNING
                _transition(job, JobStatus.CANCELLED, finished_at=now, message="Cancelled; its worker had stopped.")
                acted.append((model._meta.label, job.pk, "cancelled"))
            elif job.attempts_exhausted():
                job.status = JobStatus.RUNNING
                with translation.override(job_language(job)):
                    said = gettext("Its worker stopped %(times)s times; not tried again. Check the worker logs.") % {
                        "times": job.attempts
                    }
                _transition(job, JobStatus.FAILED, finished_at=now, message=said)
                acted.append((model._meta.label, job.pk, "failed"))
            else:
                celery_app.send_task(
                    job.task_name(), args=[job.pk], kwargs={"attempt": job.attempts + 1}, queue=job.queue_name()
                )
                acted.append((model._meta.label, job.pk, "resent"))
    return acted


def broker_queue_sizes(queues: Iterable[str]) -> dict[str, int]:
    """The messages waiting in each of ``queues`` (taken by no worker yet); a queue the broker does not know holds
    none (Redis drops an emptied queue's key)."""
    from kombu.exceptions import ChannelError

    from studio.celery import app as celery_app

    sizes = {}
    with celery_app.connection_for_write() as conn:
        channel = conn.default_channel
        for queue in queues:
            try:
                sizes[queue] = channel.queue_declare(queue=queue, passive=True).message_count
            except ChannelError:
                sizes[queue] = 0
    return sizes


def jobs_resend_lost(*, now: datetime | None = None) -> list[tuple[str, int, str]]:
    """Send again the jobs whose message the broker lost before any worker took it (a Redis restarted without its
    data): ``jobs_watch_once`` only sees jobs that started, and these would stay queued for ever. A job still
    queued after ``JOB_QUEUED_LOST_AFTER_S`` counts as lost when its queue holds fewer messages than there are such
    jobs waiting on it; then each of them is sent again, at most once per ``JOB_QUEUED_LOST_AFTER_S`` (a queued
    job's ``heartbeat_at`` says when it was last sent again; a compare-and-swap on it lets one of several watchers
    act). A second message of a job that was not lost is harmless: ``job_start`` lets one run claim it, and the
    other finds it running or ended."""
    from studio.celery import app as celery_app

    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.JOB_QUEUED_LOST_AFTER_S)
    waiting: dict[str, list] = {}
    for model in job_models():
        old = model.objects.filter(status=JobStatus.QUEUED, cancel_requested=False, created_at__lt=cutoff).filter(
            models.Q(heartbeat_at__isnull=True) | models.Q(heartbeat_at__lt=cutoff)
        )
        for job in old:
            waiting.setdefault(job.queue_name(), []).append(job)
    if not waiting:
        return []
    acted = []
    for queue, size in broker_queue_sizes(waiting).items():
        if size >= len(waiting[queue]):
            continue  # their messages may all be there, waiting for a free worker
        for job in waiting[queue]:
            model = type(job)
            claimed = model.objects.filter(pk=job.pk, status=JobStatus.QUEUED, heartbeat_at=job.heartbeat_at)
            if not claimed.update(heartbeat_at=now):
                continue  # started meanwhile, or another watcher sent it
            celery_app.send_task(job.task_name(), args=[job.pk], queue=queue)
            acted.append((model._meta.label, job.pk, "resent: its message was lost"))
    return acted


def watch_timer_start(name: str, interval_s: Callable[[], float], watch: Callable[[], None]) -> threading.Thread:
    """A daemon timer in a worker process: ``watch()`` every ``interval_s()`` seconds, counted from one pass's start
    to the next whatever a pass takes (the promise a cancel makes, ``job_cancel_bound_s``, counts one interval
    between passes). A pass that raises is logged and the next one opens a fresh connection: a watchdog outlives a
    database or broker blip. The job watchdog's timer and the shard watchdog's (``studio.shards``)."""

    def loop() -> None:
        next_pass = time.monotonic()
        while True:
            next_pass = max(next_pass + interval_s(), time.monotonic())
            time.sleep(max(0.0, next_pass - time.monotonic()))
            try:
                watch()
            except Exception:  # noqa: BLE001 - see above
                log.exception("%s could not look at the jobs", name)
                connection.close()

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread


def watchdog_start(beat: Callable[[], None] | None = None) -> threading.Thread:
    """``jobs_watch_once`` every ``JOB_WATCH_INTERVAL_S``, after ``beat()`` (the worker's heartbeat for the metrics:
    the watchdog's timer is the worker's pulse)."""

    def watch() -> None:
        if beat is not None:
            beat()
        acted = jobs_watch_once() + jobs_resend_lost()
        if acted:
            log.warning("job watchdog: %s", acted)
        swept = jobs_sweep_files()
        if any(swept.values()):
            log.info("disk sweep: %s", swept)
        watchdog_passed.send(sender=None)  # the apps' own clocks (a replay request's deadline)

    return watch_timer_start("job-watchdog", lambda: settings.JOB_WATCH_INTERVAL_S, watch)


__all__ = [
    "JOB_TRANSITIONS",
    "Heartbeat",
    "JobCancelled",
    "JobDeferred",
    "JobFailed",
    "JobQueueUnavailable",
    "JobSuperseded",
    "JobTransitionError",
    "job_add_error",
    "job_cancel",
    "job_cancel_bound_s",
    "memory_give_back",
    "job_defer",
    "job_task_send",
    "job_pause",
    "job_progress",
    "job_run",
    "job_start",
    "jobs_resend_lost",
    "jobs_watch_once",
    "watch_timer_start",
    "watchdog_start",
    "write_retried",
]
