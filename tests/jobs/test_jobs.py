"""Jobs tell the truth: Cancel in every state of every kind, a
taken-over run reports the final counts (not a sum), a dropped database connection is retried and the end is
recorded, a job that cannot be queued fails with 503, runstudio brings a dead worker back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from exports import services as export_services
from prescoring.models import PrescoreJob
from prescoring.services import prescore_job_create
from studio.jobs import job_cancel
from tests.conftest import REPO, WorkerProcess, purge_broker, wait_for
from tests.factories import native_trace_folder
from tests.ports import free_port
from traces import services as trace_services
from traces.models import ImportJob
from traces.services import import_shards

pytestmark = pytest.mark.django_db


def import_job(project, folder, user=None):
    return trace_services.import_job_create(
        project=project, user=user, upload_name=str(folder), original_name=folder.name, server_path=True, enqueue=False
    )


def jobs_of_every_kind(project, lead, engineer, tmp_path):
    return [
        import_job(project, tmp_path, lead),
        export_services.export_job_create(project=project, user=engineer, fmt="trl", enqueue=False),
        prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False),
    ]


def test_cancel_says_what_happened_in_every_state(project, lead, engineer, tmp_path):
    for job in jobs_of_every_kind(project, lead, engineer, tmp_path):
        kind = type(job).__name__
        assert job_cancel(job) == (True, "Cancelled before it started."), kind
        job.refresh_from_db()
        assert job.status == "cancelled"
        changed, said = job_cancel(job)
        assert not changed and "already cancelled" in said, kind

    for job in jobs_of_every_kind(project, lead, engineer, tmp_path):  # running, its worker alive
        type(job).objects.filter(pk=job.pk).update(status="running", attempts=1, heartbeat_at=timezone.now())
        changed, said = job_cancel(job)
        job.refresh_from_db()
        assert changed and "stops at its next checkpoint" in said and job.status == "running" and job.cancel_requested

    for job in jobs_of_every_kind(project, lead, engineer, tmp_path):  # running, its worker gone (orphan)
        type(job).objects.filter(pk=job.pk).update(
            status="running", attempts=1, heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        changed, said = job_cancel(job)
        job.refresh_from_db()
        assert changed and "worker had stopped" in said and job.status == "cancelled"


def test_cancel_api_for_every_kind(project, lead, engineer, tmp_path, api_client):
    imp, exp, pre = jobs_of_every_kind(project, lead, engineer, tmp_path)
    for url, user in (
        (f"/api/imports/{imp.pk}/cancel/", lead),
        (f"/api/exports/{exp.pk}/cancel/", engineer),
        (f"/api/prescore/jobs/{pre.pk}/cancel/", lead),
    ):
        first = api_client(user).post(url)
        assert first.status_code == 200 and first.json()["status"] == "cancelled", (url, first.json())
        again = api_client(user).post(url)
        assert again.status_code == 409 and "already cancelled" in again.json()["detail"], url
    assert api_client(engineer).post(f"/api/imports/{imp.pk}/cancel/").status_code == 403


def test_a_running_job_stops_at_its_next_checkpoint(project, lead, tmp_path, monkeypatch):
    for n in range(4):
        native_trace_folder(tmp_path / "batch" / f"t{n}", external_id=f"c-{n}", steps=2)
    job = import_job(project, tmp_path / "batch", lead)
    real = trace_services.trace_import_one

    def cancel_after_first(**kwargs):
        result = real(**kwargs)
        ImportJob.objects.filter(pk=kwargs["job"].pk).update(cancel_requested=True)
        return result

    monkeypatch.setattr(import_shards, "trace_import_one", cancel_after_first)
    job = trace_services.import_job_run(job_id=job.pk)
    assert job.status == "cancelled" and job.traces_imported == 1 and job.message == "Cancelled on request."


def test_a_taken_over_import_reports_the_final_counts_not_a_sum(project, lead, tmp_path, monkeypatch):
    for n in range(5):
        native_trace_folder(tmp_path / "batch" / f"t{n}", external_id=f"r-{n}", steps=2)
    job = import_job(project, tmp_path / "batch", lead)
    real = trace_services.trace_import_one
    calls = []

    def dies_after_three(**kwargs):
        if len(calls) == 3:
            raise KeyboardInterrupt  # the worker process dies: nothing in the job's code runs any more
        calls.append(1)
        return real(**kwargs)

    monkeypatch.setattr(import_shards, "trace_import_one", dies_after_three)
    with pytest.raises(KeyboardInterrupt):
        trace_services.import_job_run(job_id=job.pk)
    monkeypatch.setattr(import_shards, "trace_import_one", real)
    ImportJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    job = trace_services.import_job_run(job_id=job.pk, attempt=2)  # as the watchdog sends it
    assert job.status == "succeeded" and job.attempts == 2
    assert (job.traces_imported, job.traces_skipped, job.traces_failed) == (5, 0, 0)
    assert "5 traces" in job.message and "0 traces already present" in job.message
    assert trace_services.import_job_run(job_id=job.pk, attempt=2).attempts == 2  # a late duplicate does nothing


def test_a_redelivered_message_does_not_run_a_job_whose_worker_is_alive(project, lead, tmp_path):
    job = import_job(project, tmp_path, lead)
    ImportJob.objects.filter(pk=job.pk).update(status="running", attempts=1, heartbeat_at=timezone.now())
    job = trace_services.import_job_run(job_id=job.pk)
    assert job.status == "running" and job.attempts == 1


def test_a_dropped_connection_is_retried_and_the_end_recorded(project, lead, tmp_path, settings, transactional_db):
    settings.JOB_DB_RETRIES = 2
    for n in range(3):
        native_trace_folder(tmp_path / "batch" / f"t{n}", external_id=f"d-{n}", steps=2)
    job = import_job(project, tmp_path / "batch", lead)
    dropped = {"work": 0, "end": 0}

    def drop_once(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("INSERT") and "traces_trace" in sql and not dropped["work"]:
            dropped["work"] += 1
            raise OperationalError("server closed the connection unexpectedly")
        if "traces_importjob" in sql and "succeeded" in list(params or ()) and not dropped["end"]:
            dropped["end"] += 1
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(drop_once):
        job = trace_services.import_job_run(job_id=job.pk)
    assert dropped == {"work": 1, "end": 1}
    job.refresh_from_db()
    assert job.status == "succeeded" and job.traces_imported == 3, job.message


def test_a_job_that_cannot_be_queued_fails_and_the_api_says_503(project, engineer, api_client, transactional_db):
    from studio.celery import app

    original = app.conf.broker_url, app.conf.broker_transport
    dead = free_port()
    # A Redis that is not there, whichever broker the run uses (the embedded mode names its transport apart).
    app.conf.broker_url, app.conf.broker_transport = f"redis://127.0.0.1:{dead}/0", None
    app._pool = None
    app.amqp._producer_pool = None
    try:
        started = time.monotonic()
        response = api_client(engineer).post(f"/api/projects/{project.pk}/exports/", {"format": "trl"}, format="json")
        elapsed = time.monotonic() - started
    finally:
        app.conf.broker_url, app.conf.broker_transport = original
        app._pool = None
        app.amqp._producer_pool = None
    assert response.status_code == 503 and response["Retry-After"], response.content
    assert "queue is unreachable" in response.json()["detail"] and elapsed < 15
    from exports.models import ExportJob

    job = ExportJob.objects.get()
    assert job.status == "failed" and "Could not be queued" in job.message


@pytest.mark.parametrize("sharded", [True, False])
def test_a_cancelled_job_whose_worker_died_ends_within_the_promised_bound(
    sharded, project, lead, engineer, tmp_path, settings, monkeypatch
):
    """The promise ("within N s") against the watchdogs' timing rule, on a clock the test moves: a job (and its
    running shard) beat last just before the cancel, its worker is dead, a living worker's job and shard watchdogs
    pass at their intervals, in any phase. The shard watchdog kept a sharded job's heartbeat fresh while its shard
    was unfinished, so the job was cancelled only when its shard, taken back after going stale, ran again: 67.6 s
    against the 50 s promised."""
    from studio.jobs import jobs_watch_once
    from studio.models import JobShard
    from studio.shards import shards_watch_once

    settings.JOB_STALE_AFTER_S, settings.JOB_WATCH_INTERVAL_S = 60, 20
    shard_every = settings.JOB_STALE_AFTER_S / 3  # studio.shards.shards_watch_start
    clock = [timezone.now()]
    monkeypatch.setattr(timezone, "now", lambda: clock[0])
    job = export_services.export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    for job_phase in (0.0, 9.5, 19.5):
        for shard_phase in (0.0, 10.0, 19.5):
            cancelled_at = clock[0]
            type(job).objects.filter(pk=job.pk).update(
                status="running", attempts=1, heartbeat_at=cancelled_at, cancel_requested=False, finished_at=None
            )
            JobShard.objects.filter(job_id=job.pk).delete()
            if sharded:
                JobShard.objects.create(
                    job_model=type(job)._meta.label, job_id=job.pk, index=0, status="running", attempts=1,
                    heartbeat_at=cancelled_at, items=[1],
                )  # fmt: skip
            changed, said = job_cancel(job)
            promised = int(re.search(r"within (\d+) s", said).group(1))
            passes = sorted(
                [(job_phase + n * settings.JOB_WATCH_INTERVAL_S, jobs_watch_once) for n in range(10)]
                + [(shard_phase + n * shard_every, shards_watch_once) for n in range(10)],
                key=lambda timed: timed[0],
            )
            for after_s, watchdog_pass in passes:
                clock[0] = cancelled_at + timedelta(seconds=after_s)
                watchdog_pass()
                job.refresh_from_db()
                if job.status == "cancelled":
                    break
            assert job.status == "cancelled" and after_s <= promised, (job_phase, shard_phase, after_s, promised)
            clock[0] += timedelta(seconds=300)
    purge_broker()  # the shards the watchdog sent again


def test_prescore_job_that_fails_says_why_without_sql(project, lead, monkeypatch, tmp_path):
    from django.db import DataError

    from prescoring import services as prescoring
    from tests.fixtures_annotation import make_traces

    make_traces(project, tmp_path, count=1, steps=2)
    job = prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)

    def refuses(*args, **kwargs):
        raise DataError('invalid input syntax for type integer: "x"\nLINE 1: SELECT "traces_step"."id" FROM ...')

    monkeypatch.setattr(prescoring, "_run_rules", refuses)
    job = prescoring.prescore_job_run(job_id=job.pk)
    job = PrescoreJob.objects.get(pk=job.pk)
    assert job.status == "failed" and "DataError" in job.message and "SELECT" not in job.message


@pytest.mark.worker
def test_runstudio_brings_back_whichever_child_dies_and_says_so(tmp_path):
    """A dead worker was restarted, a dead web server once was not (runstudio stopped the worker and exited:
    nothing answered until someone restarted it by hand). Each child is killed in turn and comes back, logged."""
    import psutil

    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")},
        "STUDIO_DATA_DIR": str(tmp_path),
        "STUDIO_MODE": "dev",
        "PYTHONUNBUFFERED": "1",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    log = tmp_path / "runstudio.log"
    with open(log, "w") as out:
        studio = subprocess.Popen(
            [sys.executable, "manage.py", "runstudio", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def children(marker: str):
            found = []
            for child in psutil.Process(studio.pid).children():
                try:
                    if child.status() != psutil.STATUS_ZOMBIE and marker in " ".join(child.cmdline()):
                        found.append(child)
                except psutil.Error:  # gone between the listing and the look
                    pass
            return found

        def answers():
            try:
                return urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2).status == 200
            except OSError:
                return False

        # The supervisor is the plain script runstudio became (same pid): a few megabytes, no Django.
        wait_for(lambda: "supervisor.py" in " ".join(psutil.Process(studio.pid).cmdline()), 60, message="supervisor")
        supervisor_rss_mb = psutil.Process(studio.pid).memory_info().rss / 2**20
        assert supervisor_rss_mb < 30, f"the supervisor holds {supervisor_rss_mb:.0f} MB"
        # Two children and nothing forked below them: one web server, one worker (threads) for jobs and webhooks.
        wait_for(lambda: children("uvicorn") and children("jobs@%h"), 60, message="both children started")
        assert sorted(live_processes_below(studio.pid)) == sorted(
            [children("uvicorn")[0].pid, children("jobs@%h")[0].pid]
        )
        for marker, name, up in (
            ("uvicorn", "web server", answers),
            ("jobs@%h", "worker", lambda: True),
        ):
            first = wait_for(lambda m=marker: children(m), 60, message=f"{name} started")[0]
            wait_for(answers, 60, message="web server up")
            os.kill(first.pid, signal.SIGKILL)
            wait_for(
                lambda m=marker, old=first.pid: [p for p in children(m) if p.pid != old],
                30,
                message=f"{name} restarted",
            )
            wait_for(up, 60, message=f"{name} serving again")
            text = log.read_text()
            assert f"the {name} (pid {first.pid}) exited (code -9)" in text, text[-2000:]
            assert studio.poll() is None
        assert re.search(r"web server started again \(pid \d+\)", log.read_text())
        assert answers()
    finally:
        studio.send_signal(signal.SIGTERM)
        studio.wait(30)


def live_processes_below(pid: int) -> list[int]:
    """Every live (not zombie) process below ``pid``, however deep."""
    import psutil

    found = []
    for process in psutil.Process(pid).children(recursive=True):
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except psutil.Error:
            pass
    return found


def test_the_embedded_stack_is_a_web_server_and_one_threaded_worker_for_jobs_and_webhooks(settings):
    """Each Django process is ~90 MB of its own: runstudio starts two, and its worker forks none. Deliveries may take
    only their slots of its threads, so the jobs keep theirs (tests/webhooks/test_webhook_isolation.py runs it)."""
    from studio.management.commands.runstudio import (
        EMBEDDED_JOB_THREADS,
        embedded_children,
        embedded_worker_environment,
    )

    settings.WEBHOOKS_DELIVERIES_PER_PROCESS = 3
    children = dict(embedded_children("127.0.0.1", "8000", "default,gpu"))
    assert list(children) == ["web server", "worker"]
    worker = children["worker"]
    option = {worker[i]: worker[i + 1] for i in range(len(worker) - 1) if worker[i].startswith("-")}
    assert option["-Q"] == "default,gpu,webhooks" and option["--pool"] == "threads"
    assert int(option["--concurrency"]) == EMBEDDED_JOB_THREADS + 3 and EMBEDDED_JOB_THREADS >= 1
    assert embedded_worker_environment() == {"STUDIO_WEBHOOKS_DELIVERIES_PER_PROCESS": "3", "CELERY_SKIP_CHECKS": "1"}
    assert "--workers" not in children["web server"]


@pytest.mark.worker
def test_the_process_count_sees_a_forking_workers_children(transactional_db):
    """The control for runstudio's count of processes: a prefork worker's children are found below it."""
    from studio.management.commands.runstudio import worker_command

    purge_broker()
    worker = WorkerProcess(command=worker_command("default", "fork-control", pool="prefork", concurrency=2)).start()
    try:
        wait_for(lambda: len(live_processes_below(worker.proc.pid)) == 2, 30, message="two forked children")
    finally:
        worker.stop()


@pytest.mark.django_db
def test_each_task_starts_with_an_empty_query_log():
    """With DEBUG on (dev mode) Django logs every query, and only a request's start clears the log: a worker would keep
    the last 9,000, an export shard's result (hundreds of KB) among them. studio.celery clears it as a task starts."""
    from celery.signals import task_prerun

    import studio.celery  # noqa: F401 - connects the handler

    connection.force_debug_cursor = True
    try:
        ImportJob.objects.count()
        assert connection.queries
        task_prerun.send(sender=None, task_id="t", task=None, args=(), kwargs={})
        assert connection.queries == []
    finally:
        connection.force_debug_cursor = False


def test_cancel_on_a_job_whose_worker_died_is_truthful_and_prompt(project, lead, engineer, tmp_path, settings):
    """Cancel on a job whose worker had died once answered 200 "running", saying the worker stops within
    seconds, and took effect only when the heartbeat was stale (~60 s). A job someone cancels is cancelled once its
    heartbeat misses beats (30 s with the defaults), at the click or by the next watchdog pass."""
    from studio.jobs import jobs_watch_once

    settings.JOB_STALE_AFTER_S = 60
    for job in jobs_of_every_kind(project, lead, engineer, tmp_path):  # died 40 s ago: beats missed, not yet stale
        type(job).objects.filter(pk=job.pk).update(
            status="running", attempts=1, heartbeat_at=timezone.now() - timedelta(seconds=40)
        )
        changed, said = job_cancel(job)
        job.refresh_from_db()
        assert changed and "worker had stopped" in said and job.status == "cancelled", (type(job).__name__, said)

    for job in jobs_of_every_kind(project, lead, engineer, tmp_path):  # beating 5 s ago: it may be alive
        type(job).objects.filter(pk=job.pk).update(
            status="running", attempts=1, heartbeat_at=timezone.now() - timedelta(seconds=5)
        )
        changed, said = job_cancel(job)
        assert changed and "as soon as its heartbeat is missed (within 50 s)" in said, said
        # ... then its worker turns out to be dead: the next watchdog pass cancels it, without waiting for stale.
        type(job).objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=31))
        acted = jobs_watch_once()
        job.refresh_from_db()
        assert job.status == "cancelled" and (type(job)._meta.label, job.pk, "cancelled") in acted
