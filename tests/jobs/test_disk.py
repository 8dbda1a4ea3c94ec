"""Disk is given back: scratch work lives in per-attempt folders under the data dir and is removed when
the attempt or the job ends; uploads follow the documented retention; what a killed process left is swept.
(The kill + recovery cycle on a real worker is tests/jobs/test_faults.py::test_worker_killed_mid_import_...)"""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from studio.jobs import job_cancel, job_run, job_workdir, jobs_sweep_files
from tests.traces.test_import_api import archive
from traces.models import ImportJob
from traces.services import import_job_create, import_job_run, import_upload_store


@pytest.fixture
def private_disk(settings, tmp_path):
    settings.JOB_WORK_DIR = tmp_path / "work"
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "spool")
    Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir()
    return tmp_path


def stored_upload(project, lead) -> ImportJob:
    name = import_upload_store(uploaded_file=ContentFile(archive("a", "b").getvalue(), name="upload.zip"))
    return import_job_create(project=project, user=lead, upload_name=name, original_name="upload.zip", enqueue=False)


def test_an_import_works_in_its_attempt_folder_and_leaves_nothing(project, lead, private_disk, monkeypatch):
    from traces import importers

    seen: list[Path] = []
    real_opened_source = importers.opened_source

    def watching(path, *, scratch=None, **options):
        seen.append(scratch)
        return real_opened_source(path, scratch=scratch, **options)

    monkeypatch.setattr("traces.services.import_shards.opened_source", watching)
    job = stored_upload(project, lead)
    with_captured = import_job_run(job_id=job.pk)
    assert with_captured.status == "succeeded", with_captured.message
    # The archive was unpacked under the data dir, in the folder named for this job and attempt (not /tmp) ...
    assert seen == [job_workdir(with_captured)]
    assert seen[0].parent == private_disk / "work" and seen[0].name == f"traces-importjob-{job.pk}-1"
    # ... and nothing of the attempt is left.
    assert list((private_disk / "work").iterdir()) == []


def test_a_succeeded_import_deletes_its_upload_a_failed_one_keeps_it_for_a_while(
    project, lead, private_disk, settings, django_capture_on_commit_callbacks
):
    done = stored_upload(project, lead)
    assert default_storage.exists(done.upload)
    with django_capture_on_commit_callbacks(execute=True):
        done = import_job_run(job_id=done.pk)
    assert done.status == "succeeded"
    done.refresh_from_db()
    assert not default_storage.exists(done.upload) and done.upload_removed_at is not None

    failed = stored_upload(project, lead)
    with django_capture_on_commit_callbacks(execute=True):
        job_run(failed, lambda job: (_ for _ in ()).throw(RuntimeError("boom")))
    failed.refresh_from_db()
    assert failed.status == "failed" and default_storage.exists(failed.upload)
    # Kept for IMPORT_FAILED_UPLOAD_DAYS, then the sweep deletes it (once).
    assert jobs_sweep_files(now=timezone.now())["job_files"] == 0
    later = timezone.now() + timedelta(days=settings.IMPORT_FAILED_UPLOAD_DAYS, minutes=1)
    assert jobs_sweep_files(now=later)["job_files"] == 1
    failed.refresh_from_db()
    assert not default_storage.exists(failed.upload) and failed.upload_removed_at is not None
    assert jobs_sweep_files(now=later)["job_files"] == 0


def test_kept_uploads_stay_within_their_cap_the_oldest_going_first(
    project, lead, private_disk, settings, django_capture_on_commit_callbacks
):
    """51 cancels of a 43 MB upload kept 2.2 GB for a week: what failed or cancelled imports keep is capped."""
    jobs = [stored_upload(project, lead) for _ in range(5)]
    size = default_storage.size(jobs[0].upload)
    settings.IMPORT_FAILED_UPLOADS_MAX_BYTES = 3 * size + size // 2  # room for three
    for job in jobs:
        with django_capture_on_commit_callbacks(execute=True):
            job_cancel(job)  # each end gives back what is past the cap
    for job in jobs:
        job.refresh_from_db()
    assert [default_storage.exists(job.upload) for job in jobs] == [False, False, True, True, True]
    assert [job.upload_removed_at is not None for job in jobs] == [True, True, False, False, False]

    settings.IMPORT_KEEP_UPLOADS = True  # keeps every upload, whatever the cap
    kept = stored_upload(project, lead)
    with django_capture_on_commit_callbacks(execute=True):
        job_cancel(kept)
    assert all(default_storage.exists(job.upload) for job in [*jobs[2:], kept])
    for job in [*jobs, kept]:
        default_storage.delete(job.upload)


def test_keep_uploads_setting_keeps_them(project, lead, private_disk, settings, django_capture_on_commit_callbacks):
    settings.IMPORT_KEEP_UPLOADS = True
    job = stored_upload(project, lead)
    with django_capture_on_commit_callbacks(execute=True):
        job = import_job_run(job_id=job.pk)
    assert job.status == "succeeded" and default_storage.exists(job.upload)
    assert jobs_sweep_files(now=timezone.now() + timedelta(days=365))["job_files"] == 0
    default_storage.delete(job.upload)


def test_a_server_path_is_never_deleted(project, lead, private_disk, tmp_path, django_capture_on_commit_callbacks):
    source = tmp_path / "source.zip"
    source.write_bytes(archive("a").getvalue())
    job = import_job_create(project=project, user=lead, upload_name=str(source), server_path=True, enqueue=False)
    with django_capture_on_commit_callbacks(execute=True):
        job = import_job_run(job_id=job.pk)
    assert job.status == "succeeded" and source.exists()
    jobs_sweep_files(now=timezone.now() + timedelta(days=365))
    assert source.exists()


def test_sweep_removes_what_killed_processes_left_and_nothing_live(project, lead, private_disk, settings):
    work = private_disk / "work"
    ended = stored_upload(project, lead)
    ImportJob.objects.filter(pk=ended.pk).update(status="cancelled", attempts=1, finished_at=timezone.now())
    live = stored_upload(project, lead)
    ImportJob.objects.filter(pk=live.pk).update(status="running", attempts=2, heartbeat_at=timezone.now())
    folders = {
        "ended job's": work / f"traces-importjob-{ended.pk}-1",
        "superseded attempt's": work / f"traces-importjob-{live.pk}-1",
        "vanished job's": work / "exports-exportjob-999999-1",
        "live attempt's": work / f"traces-importjob-{live.pk}-2",
        "not a job's": work / "someone-elses",
    }
    for folder in folders.values():
        (folder / "deep").mkdir(parents=True)
        (folder / "deep" / "part.bin").write_bytes(b"x" * 1000)
    spool = Path(settings.FILE_UPLOAD_TEMP_DIR)
    old_body, new_body = spool / "old.upload", spool / "new.upload"
    old_body.write_bytes(b"y")
    new_body.write_bytes(b"y")
    day_old = (timezone.now() - timedelta(days=1, minutes=5)).timestamp()
    import os

    os.utime(old_body, (day_old, day_old))

    swept = jobs_sweep_files()
    assert swept["workdirs"] == 3 and swept["spooled_bodies"] == 1
    assert sorted(p.name for p in work.iterdir()) == sorted(
        [folders["live attempt's"].name, folders["not a job's"].name]
    )
    assert not old_body.exists() and new_body.exists()


def test_cancelling_an_orphaned_job_removes_its_folder(
    project, lead, private_disk, settings, django_capture_on_commit_callbacks
):
    job = stored_upload(project, lead)
    stale = timezone.now() - timedelta(seconds=settings.JOB_STALE_AFTER_S + 5)
    ImportJob.objects.filter(pk=job.pk).update(status="running", attempts=1, heartbeat_at=stale)
    job.refresh_from_db()
    left = job_workdir(job)
    (left / "trace-import-x").mkdir(parents=True)
    (left / "trace-import-x" / "image.png").write_bytes(b"z" * 5000)
    with django_capture_on_commit_callbacks(execute=True):
        changed, said = job_cancel(job)
    assert changed and "stopped" in said
    assert not left.exists()


def test_a_stored_folder_goes_with_its_files_and_leaves_its_neighbours(tmp_path):
    """An ended job's stored files (an export's or an import's parts) go with the folders they were in; a name that
    only starts like the prefix, and a folder that still holds a file the deletion did not list, stay."""
    from studio.storage import stored_folder_delete

    prefix = f"exports/{tmp_path.name}/export-1-parts"
    names = [f"{prefix}/00000-1/data.jsonl", f"{prefix}/00000-2/data.jsonl", f"{prefix}/00001-1/sub/images.parquet"]
    neighbours = [f"exports/{tmp_path.name}/export-1-parts-kept/a.txt", f"exports/{tmp_path.name}/export-1-trl.zip"]
    for name in names + neighbours:
        assert default_storage.save(name, ContentFile(b"x")) == name
    try:
        assert stored_folder_delete(prefix) == 3
        assert not Path(default_storage.path(prefix)).exists()
        assert all(default_storage.exists(name) for name in neighbours)
        # A folder with a file in it is not removed (os.rmdir refuses), whatever else goes.
        default_storage.save(f"{prefix}/00002-1/late.jsonl", ContentFile(b"x"))
        kept = Path(default_storage.path(f"{prefix}/00002-1"))
        (kept / "sub").mkdir()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(default_storage, "listdir", lambda folder: ([], []))  # the listing saw nothing
            assert stored_folder_delete(prefix) == 0
        assert (kept / "late.jsonl").exists() and not (kept / "sub").exists()
        assert stored_folder_delete("exports/never-stored") == 0
    finally:
        shutil.rmtree(default_storage.path(f"exports/{tmp_path.name}"), ignore_errors=True)


def test_local_storage_takes_a_file_by_moving_it_and_lends_one_by_a_link(settings, tmp_path):
    """An import's plan stores its shards' parts and reads the upload through these: on local storage an archive of
    gigabytes is not written once more for either (S3: tests/serving/test_fullstack.py imports through them)."""
    from studio.storage import stored_file_fetch, stored_file_save_moved

    # Beside the stored files, as jobs' work folders are by default (STUDIO_JOB_WORK_DIR): a move within one
    # filesystem is a rename (across two, Django copies).
    settings.JOB_WORK_DIR = Path(settings.DATA_DIR) / f"work-{tmp_path.name}"
    work = Path(settings.JOB_WORK_DIR)
    work.mkdir(parents=True)
    local = work / "part.zip"
    local.write_bytes(b"PK" + bytes(range(256)) * 64)
    made = local.stat().st_ino
    name = stored_file_save_moved("imports/test-parts/00000.zip", local)
    try:
        assert not local.exists()
        assert Path(default_storage.path(name)).stat().st_ino == made  # moved, not copied
        lent = work / "upload.zip"
        stored_file_fetch(name, lent)
        assert lent.is_symlink() and lent.read_bytes() == b"PK" + bytes(range(256)) * 64
    finally:
        default_storage.delete(name)
        shutil.rmtree(work)
