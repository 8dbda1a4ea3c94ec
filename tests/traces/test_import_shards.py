"""Sharded imports (traces.services over studio.shards): an archive's trace folders are cut into shards that any
number of workers import at once, each from its own part of the upload in storage; one ImportJob row reports them.

Worker tests run real `celery worker` processes on whichever broker the run uses (REDIS_URL: Redis; otherwise
kombu's filesystem broker on SQLite). Shards are tiny (two trace folders each) and each folder pauses, so both
workers hold a shard when one is SIGKILLed or the import is cancelled."""

from __future__ import annotations

import io
import re
import time
import zipfile
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client

from studio.models import JobShard
from tests.conftest import WorkerProcess, purge_broker, wait_for
from tests.factories import native_trace_folder
from traces import services
from traces.models import ImportJob, Screenshot, Step, Trace
from traces.services import import_shards

TRACES, STEPS, SHARD = 8, 2, 2  # eight good traces and a broken one: nine folders, five shards


def archive_bytes(tmp_path: Path) -> bytes:
    """``batch/`` holding TRACES native trace folders with tiny screenshots, and one whose trace.json is broken."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for n in range(TRACES):
            folder = native_trace_folder(tmp_path / "src" / f"t{n}", external_id=f"sh-{n}", steps=STEPS, size=(48, 32))
            for file in sorted(folder.iterdir()):
                zf.write(file, f"batch/t{n}/{file.name}")
        zf.writestr("batch/broken/trace.json", "{not json")
    return buffer.getvalue()


def _shards(job) -> list[JobShard]:
    return list(JobShard.objects.filter(job_model="traces.ImportJob", job_id=job.pk).order_by("index"))


def _stored_parts(job) -> set[str]:
    found: set[str] = set()

    def walk(folder: str) -> None:
        try:
            folders, files = default_storage.listdir(folder)
        except FileNotFoundError:
            return
        found.update(f"{folder}/{name}" for name in files)
        for sub in folders:
            walk(f"{folder}/{sub}")

    walk(services.import_parts_prefix(job))
    return found


def _without_screenshots(message: str) -> str:
    # Screenshots are stored once across projects (by hash): a second project's import stores none of them anew.
    return re.sub(r"\d+ screenshots stored", "N screenshots stored", message)


def _rows(project) -> tuple[list[str], int]:
    traces = Trace.objects.filter(project=project)
    return sorted(traces.values_list("external_id", flat=True)), Step.objects.filter(trace__project=project).count()


def _in_process(project, user, data: bytes) -> ImportJob:
    name = services.import_upload_store(uploaded_file=ContentFile(data, name="batch.zip"))
    job = services.import_job_create(
        project=project, user=user, upload_name=name, original_name="batch.zip", enqueue=False
    )
    return services.import_job_run(job_id=job.pk)


def _other_project(lead):
    return services.project_create(name="Reference", members=[lead])


EXPECTED_IDS = sorted(f"sh-{n}" for n in range(TRACES))


# --- in one process --------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_sharded_import_ends_with_the_summary_of_one_shard(
    project, lead, settings, tmp_path, django_capture_on_commit_callbacks
):
    data = archive_bytes(tmp_path)
    settings.IMPORT_SHARD_TRACES = SHARD
    with django_capture_on_commit_callbacks(execute=True):
        sharded = _in_process(project, lead, data)
    # Ended: the parts and (it succeeded) the upload are gone from storage.
    sharded.refresh_from_db()
    assert not _stored_parts(sharded) and not default_storage.exists(sharded.upload) and sharded.upload_removed_at
    settings.IMPORT_SHARD_TRACES = 1000
    other = _other_project(lead)
    whole = _in_process(other, lead, data)
    assert sharded.status == whole.status == "succeeded", (sharded.message, whole.message)
    assert [shard.items for shard in _shards(sharded)] == [
        ["broken", "t0"],
        ["t1", "t2"],
        ["t3", "t4"],
        ["t5", "t6"],
        ["t7"],
    ]
    assert len(_shards(whole)) == 1 and sharded.plan["format"] == "native" and len(sharded.plan["parts"]) == 5
    assert _rows(project) == (EXPECTED_IDS, TRACES * STEPS) and _rows(other) == _rows(project)
    assert (sharded.traces_imported, sharded.steps_imported, sharded.traces_failed) == (TRACES, TRACES * STEPS, 1)
    assert sharded.screenshots_stored == Screenshot.objects.count() > TRACES  # every screen stored, each once
    assert _without_screenshots(sharded.message) == _without_screenshots(whole.message)
    assert sharded.message.startswith(
        f"1 of {TRACES + 1} traces failed. {TRACES} traces, {TRACES * STEPS} steps, "
        f"{sharded.screenshots_stored} screenshots"
    )
    assert sharded.errors == whole.errors and [e["file"] for e in sharded.errors] == ["broken/trace.json"]
    assert "invalid JSON" in sharded.errors[0]["error"]
    assert sharded.progress_done == sharded.progress_total == TRACES + 1


@pytest.mark.django_db
def test_a_shard_reads_its_screenshots_from_its_part_without_writing_them(
    project, lead, settings, tmp_path, monkeypatch
):
    data = archive_bytes(tmp_path)
    settings.IMPORT_SHARD_TRACES = SHARD
    unpacked: list[tuple[int, int]] = []  # each shard's (screenshot files made, bytes written into them)
    real = import_shards.safe_extract

    def watched(archive, dest, **kwargs):
        report = real(archive, dest, **kwargs)
        shots = [path for path in dest.rglob("*.png")]
        unpacked.append((len(shots), sum(path.stat().st_size for path in shots)))
        return report

    monkeypatch.setattr(import_shards, "safe_extract", watched)
    job = _in_process(project, lead, data)
    assert job.status == "succeeded", job.message
    # Every shard found its screenshots where the importer looks, empty: their bytes came from the part.
    assert len(unpacked) == 5 and all(count > 0 and size == 0 for count, size in unpacked), unpacked
    assert _rows(project) == (EXPECTED_IDS, TRACES * STEPS)
    steps = Step.objects.filter(trace__project=project).select_related("screenshot", "trace")
    for step in steps:
        source = tmp_path / "src" / step.trace.source_path.removeprefix("batch/") / f"step_{step.index:03d}.png"
        assert step.screenshot.image.read() == source.read_bytes() and step.screenshot.thumbnail.name


@pytest.mark.django_db
def test_a_failed_shard_is_run_again_without_a_duplicate_trace(project, lead, settings, tmp_path, monkeypatch):
    data = archive_bytes(tmp_path)
    settings.IMPORT_SHARD_TRACES = SHARD
    real = services.trace_import_one
    broken = {"left": 1}

    def fails_once_mid_shard(**kwargs):
        # sh-4 is the second trace of shard 3: the shard stored sh-3 when it breaks.
        if broken["left"] and kwargs["imported"].external_id == "sh-4":
            broken["left"] -= 1
            raise OSError("storage hiccup")
        return real(**kwargs)

    monkeypatch.setattr(import_shards, "trace_import_one", fails_once_mid_shard)
    job = _in_process(project, lead, data)
    assert job.status == "succeeded", job.message
    assert [shard.attempts for shard in _shards(job)] == [1, 1, 2, 1, 1] and not broken["left"]
    assert _rows(project) == (EXPECTED_IDS, TRACES * STEPS)
    assert (job.traces_imported, job.traces_skipped, job.traces_failed) == (TRACES, 0, 1)
    assert job.screenshots_stored == Screenshot.objects.count()
    assert [e["file"] for e in job.errors] == ["broken/trace.json"]  # the re-run's report replaced the first one's


@pytest.mark.django_db
def test_a_server_folder_is_read_in_place_by_every_shard(project, lead, settings, tmp_path):
    for n in range(3):
        native_trace_folder(tmp_path / "batch" / f"t{n}", external_id=f"srv-{n}", steps=1, size=(48, 32))
    settings.IMPORT_SHARD_TRACES = 1
    job = services.import_job_create(
        project=project, user=lead, upload_name=str(tmp_path / "batch"), server_path=True, enqueue=False
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded" and job.traces_imported == 3, job.message
    assert job.plan["parts"] == [] and [shard.items for shard in _shards(job)] == [["t0"], ["t1"], ["t2"]]


# --- real workers -----------------------------------------------------------------------------------------------


@pytest.fixture
def shard_env(monkeypatch, settings):
    monkeypatch.setenv("STUDIO_IMPORT_SHARD_TRACES", str(SHARD))
    monkeypatch.setenv("STUDIO_IMPORT_THROTTLE_S", "0.5")  # a pause per trace folder, so shards overlap
    # A killed worker's shard is taken back within seconds (its watchdog looks every stale/3 s).
    monkeypatch.setenv("STUDIO_JOB_STALE_AFTER_S", "2")
    monkeypatch.setenv("STUDIO_REDIS_VISIBILITY_TIMEOUT_S", "3600")  # recovery must not wait for the broker
    settings.IMPORT_SHARD_TRACES = SHARD  # the undisturbed run in this process plans the same shards


def _upload(project, lead, data: bytes) -> ImportJob:
    client = Client()
    client.force_login(lead)
    upload = io.BytesIO(data)
    upload.name = "batch.zip"
    response = client.post(f"/api/projects/{project.pk}/imports/", {"file": upload})
    assert response.status_code == 202, response.content
    return ImportJob.objects.get(pk=response.json()["id"])


def _running(job) -> int:
    return JobShard.objects.filter(job_model="traces.ImportJob", job_id=job.pk, status="running").count()


def _finished(job, timeout=120) -> ImportJob:
    return wait_for(lambda: (j := ImportJob.objects.get(pk=job.pk)).is_finished and j, timeout, 0.1, "import ended")


@pytest.mark.worker
def test_a_worker_killed_mid_shard_leaves_the_rows_of_an_undisturbed_run(
    role_groups, project, lead, tmp_path, shard_env
):
    data = archive_bytes(tmp_path)
    other = _other_project(lead)
    reference = _in_process(other, lead, data)
    assert reference.status == "succeeded", reference.message
    purge_broker()
    victim, survivor = WorkerProcess().start(), WorkerProcess().start()
    try:
        job = _upload(project, lead, data)
        wait_for(lambda: _running(job) >= 2, 60, 0.05, "two shards running")
        victim.kill()
        assert _running(job) and Trace.objects.filter(project=project).count() < TRACES
        job = _finished(job)
    finally:
        victim.kill()
        survivor.stop()
    log = "".join(survivor.log)
    assert job.status == "succeeded", (job.message, log[-3000:])
    assert max(shard.attempts for shard in _shards(job)) >= 2, "the killed worker's shard was run again"
    assert "shard watchdog" in log and "JobTransitionError" not in log
    assert job.attempts == 1 and job.finished_at  # planned once, ended once by the last shard
    assert _rows(project) == _rows(other) == (EXPECTED_IDS, TRACES * STEPS)
    assert (job.traces_imported, job.steps_imported, job.traces_skipped, job.traces_failed) == (
        TRACES,
        TRACES * STEPS,
        0,
        1,
    )
    assert job.errors == reference.errors
    assert _without_screenshots(job.message) == _without_screenshots(reference.message)
    wait_for(lambda: ImportJob.objects.get(pk=job.pk).upload_removed_at, 10, 0.1, "upload deleted")
    assert not _stored_parts(job)


@pytest.mark.worker
def test_cancel_while_shards_run_writes_no_trace_after_it(role_groups, project, lead, tmp_path, shard_env):
    from studio.jobs import job_cancel

    data = archive_bytes(tmp_path)
    purge_broker()
    workers = [WorkerProcess().start(), WorkerProcess().start()]
    try:
        job = _upload(project, lead, data)
        wait_for(lambda: _running(job) >= 2, 60, 0.05, "two shards running")
        changed, said = job_cancel(job)  # committed: the cancel is acknowledged
        assert changed, said
        written = set(Trace.objects.filter(project=project).values_list("pk", flat=True))
        job = _finished(job, 60)
        wait_for(lambda: not _running(job), 30, 0.1, "every shard stopped")
        time.sleep(2)  # longer than a folder takes: a shard that ignored the cancel would have written a trace
        assert set(Trace.objects.filter(project=project).values_list("pk", flat=True)) == written
        assert len(written) < TRACES
    finally:
        for worker in workers:
            worker.stop()
    assert job.status == "cancelled" and job.message == "Cancelled on request.", job.message
    assert job.traces_imported == len(written)
    assert {shard.status for shard in _shards(job)} <= {"done", "cancelled"}
    assert not _stored_parts(job) and default_storage.exists(job.upload)  # a cancelled import's upload is kept
