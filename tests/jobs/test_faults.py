"""Faults: a worker SIGKILLed mid-import and mid-pre-scoring, Redis restarted while annotators save, the
database connection dropped in the middle of a save. (The export kill test is tests/exports/test_export_worker.py.)
"""

from __future__ import annotations

import io
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pytest
from django.db import OperationalError, connection
from django.test import Client

from tests.conftest import WorkerProcess, purge_broker, wait_for
from tests.database_template import server_connect
from tests.factories import native_trace_folder
from tests.ports import free_port


def claim(client: Client, project) -> dict:
    response = client.post(f"/api/projects/{project.pk}/next-trace/")
    assert response.status_code == 200, response.content
    return response.json()


def save(client: Client, annotation_id: int, version: int, note: str):
    return client.put(
        f"/api/annotations/{annotation_id}/draft/",
        data={"version": version, "note": note},
        content_type="application/json",
    )


# --- the database connection dropped mid-request -------------------------------------------------


def test_dropped_database_connection_is_a_retryable_503_and_the_draft_is_kept(
    role_groups, project, annotator, tmp_path
):
    from annotation.models import Annotation
    from tests.fixtures_annotation import make_traces

    make_traces(project, tmp_path, count=1, steps=2)
    client = Client()
    client.force_login(annotator)
    annotation_id = claim(client, project)["annotation"]["id"]
    first = save(client, annotation_id, 1, "before the drop")
    assert first.status_code == 200
    version = first.json()["version"]

    def drop_on_annotation_write(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("UPDATE") and "annotation_annotation" in sql:
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(drop_on_annotation_write):
        dropped = save(client, annotation_id, version, "during the drop")
    assert dropped.status_code == 503, dropped.content
    body = dropped.json()
    assert body["retryable"] is True and "Retry" in body["detail"] and dropped["Retry-After"]
    kept = Annotation.objects.get(pk=annotation_id)
    assert kept.note == "before the drop" and kept.version == version  # nothing half-written
    retried = save(client, annotation_id, version, "during the drop")  # the client's retry, same base version
    assert retried.status_code == 200 and retried.json()["note"] == "during the drop"


def test_terminated_postgres_backend_is_a_retryable_503(role_groups, project, annotator, tmp_path):
    """On PostgreSQL, really kill the request's server process (pg_terminate_backend) before the save."""
    if connection.vendor != "postgresql":
        pytest.skip("pg_terminate_backend needs PostgreSQL (the SQLite run uses the wrapper test above)")

    from annotation.models import Annotation
    from tests.fixtures_annotation import make_traces

    make_traces(project, tmp_path, count=1, steps=2)
    client = Client()
    client.force_login(annotator)
    annotation_id = claim(client, project)["annotation"]["id"]
    version = save(client, annotation_id, 1, "before").json()["version"]
    pid = connection.cursor().connection.info.backend_pid
    with server_connect(connection.settings_dict, "postgres", autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    time.sleep(0.2)
    try:
        dropped = save(client, annotation_id, version, "after")
    finally:
        connection.close()  # what the next request's health check does in the server
    assert dropped.status_code == 503, dropped.content
    assert dropped.json()["retryable"] is True and dropped["Retry-After"]
    assert Annotation.objects.get(pk=annotation_id).note == "before"  # the draft the server acknowledged
    assert save(client, annotation_id, version, "after").status_code == 200
    assert Annotation.objects.get(pk=annotation_id).note == "after"


# --- Redis restarted while annotators save --------------------------------------------------------


class PrivateRedis:
    """A redis-server of our own on a loopback port: this test restarts it, never the shared one."""

    def __init__(self, workdir: Path):
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    def start(self) -> PrivateRedis:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(
            lambda: (
                subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout.strip()
                == b"PONG"
            ),
            10,
            0.1,
            "private redis",
        )
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def test_saves_succeed_while_redis_restarts(role_groups, project, annotator, make_user, tmp_path, settings):
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    from channels.layers import channel_layers

    from annotation.models import Annotation
    from studio.permissions import Role
    from tests.fixtures_annotation import make_traces
    from traces.services import membership_add

    redis = PrivateRedis(tmp_path).start()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{redis.port}/0"]},
        }
    }
    channel_layers.backends.clear()
    try:
        make_traces(project, tmp_path / "t", count=3, steps=2)
        others = [make_user(f"ann{i}", Role.ANNOTATOR) for i in range(2)]
        for user in others:
            membership_add(project=project, user=user)
        sessions = []
        for user in [annotator, *others]:
            client = Client()
            client.force_login(user)
            sessions.append([client, claim(client, project)["annotation"]["id"], 1])
        acknowledged, slowest = {}, 0.0

        def round_of_saves(label: str):
            nonlocal slowest
            for entry in sessions:
                client, annotation_id, version = entry
                started = time.monotonic()
                response = save(client, annotation_id, version, f"{label} {annotation_id}")
                slowest = max(slowest, time.monotonic() - started)
                assert response.status_code == 200, (label, response.status_code, response.content[:300])
                entry[2] = response.json()["version"]
                acknowledged[annotation_id] = (f"{label} {annotation_id}", entry[2])

        round_of_saves("redis up")
        redis.kill()
        round_of_saves("redis down")
        round_of_saves("redis still down")
        redis.start()
        round_of_saves("redis back")
        for annotation_id, (note, version) in acknowledged.items():
            row = Annotation.objects.get(pk=annotation_id)
            assert (row.note, row.version) == (note, version)
        assert slowest < 10, f"a save took {slowest:.1f}s while Redis was away"
    finally:
        redis.kill()
        channel_layers.backends.clear()


# --- a worker SIGKILLed mid-import and mid-pre-scoring --------------------------------------------


def _archive(tmp_path: Path, count: int, steps: int) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for n in range(count):
            folder = native_trace_folder(tmp_path / f"t{n}", external_id=f"kill-{n}", steps=steps, size=(1280, 800))
            for file in folder.iterdir():
                zf.write(file, f"t{n}/{file.name}")
    buffer.seek(0)
    buffer.name = "many.zip"
    return buffer


@pytest.fixture
def redelivery_env(monkeypatch):
    # The replacement worker's watchdog finds the job's heartbeat stale and sends it again (any broker); Redis
    # may also redeliver the unacked message, which then finds the job taken over and does nothing.
    monkeypatch.setenv("STUDIO_REDIS_VISIBILITY_TIMEOUT_S", "3")
    monkeypatch.setenv("STUDIO_JOB_STALE_AFTER_S", "1")
    monkeypatch.setenv("STUDIO_JOB_WATCH_INTERVAL_S", "1")


def _data_dir_files() -> dict[Path, int]:
    """Every file under the parts of the data dir that jobs and requests write (stored files, scratch, spool)."""
    from django.conf import settings

    roots = [Path(settings.MEDIA_ROOT), Path(settings.JOB_WORK_DIR), Path(settings.FILE_UPLOAD_TEMP_DIR)]
    return {file: file.stat().st_size for root in roots if root.is_dir() for file in root.rglob("*") if file.is_file()}


@pytest.mark.worker
def test_worker_killed_mid_import_finishes_after_restart_without_duplicates(
    role_groups, project, lead, tmp_path, redelivery_env
):
    from django.conf import settings
    from django.db.models import Q

    from traces.models import ImportJob, Screenshot, Step, Trace

    count, steps = 40, 4
    data = _archive(tmp_path, count, steps)
    before = _data_dir_files()
    purge_broker()
    worker = WorkerProcess().start()
    client = Client()
    client.force_login(lead)
    try:
        response = client.post(f"/api/projects/{project.pk}/imports/", {"file": data})
        assert response.status_code == 202, response.content
        job_id = response.json()["id"]
        wait_for(lambda: ImportJob.objects.get(pk=job_id).progress_done >= 3, 120, 0.05, "import under way")
        worker.kill()
    finally:
        worker.kill()
    interrupted = ImportJob.objects.get(pk=job_id)
    assert interrupted.status == "running" and Trace.objects.filter(project=project).count() < count
    replacement = WorkerProcess().start()
    try:
        job = wait_for(lambda: (j := ImportJob.objects.get(pk=job_id)).is_finished and j, 180, message="import retried")
    finally:
        replacement.stop()
    assert job.status == "succeeded", job.message
    # The killed worker's shard was taken back by the replacement's shard watchdog and run again (the import is one
    # shard at the default shard size); the job itself was planned once.
    from studio.models import JobShard

    shards = JobShard.objects.filter(job_model="traces.ImportJob", job_id=job_id)
    assert max(shards.values_list("attempts", flat=True)) >= 2 and job.attempts == 1
    traces = Trace.objects.filter(project=project)
    assert traces.count() == count
    assert sorted(traces.values_list("external_id", flat=True)) == sorted(f"kill-{n}" for n in range(count))
    assert Step.objects.filter(trace__project=project).count() == count * steps
    assert all(t.steps.count() == steps for t in traces)
    # Disk: after the kill and the recovery, the data dir holds what it held before plus the stored screenshots and
    # thumbnails: the killed attempt's unpacked archive is swept and the upload deleted once the import succeeded.
    media = Path(settings.MEDIA_ROOT)
    stored = {
        media / name
        for shot in Screenshot.objects.filter(
            Q(steps__trace__project=project) | Q(pk__in=traces.values("final_screenshot"))
        ).distinct()
        for name in (shot.image.name, shot.thumbnail.name if shot.thumbnail else "")
        if name
    }
    grown = {file: size for file, size in _data_dir_files().items() if before.get(file) != size and file not in stored}
    assert grown == {}, grown


@pytest.mark.worker
def test_worker_killed_mid_prescoring_finishes_after_restart_without_duplicates(
    role_groups, project, lead, tmp_path, redelivery_env
):
    from prescoring.models import PrescoreJob, StepSuggestion, TraceSuggestion
    from prescoring.services import prescore_job_create
    from tests.fixtures_annotation import make_traces

    traces = make_traces(project, tmp_path, count=30, steps=6, size=(640, 400))
    total_steps = sum(t.step_count for t in traces)
    purge_broker()
    worker = WorkerProcess().start()
    try:
        job = prescore_job_create(project=project, user=lead, scorer="rules")
        wait_for(lambda: PrescoreJob.objects.get(pk=job.pk).status != "queued", 60, 0.01, "scoring started")
        worker.kill()
    finally:
        worker.kill()
    replacement = WorkerProcess().start()
    try:
        job = wait_for(
            lambda: (j := PrescoreJob.objects.get(pk=job.pk)).is_finished and j, 180, message="scoring retried"
        )
    finally:
        replacement.stop()
    assert job.status == "succeeded", job.message
    assert StepSuggestion.objects.filter(job=job).count() == total_steps
    assert StepSuggestion.objects.filter(job=job).values("step").distinct().count() == total_steps
    assert TraceSuggestion.objects.filter(job=job).count() == len(traces)
