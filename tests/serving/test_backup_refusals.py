"""Backups and restores that cannot go through say why and write nothing (studio/backup.py): a target folder that
is not there, a disk that fills up, an archive cut short, bytes that differ from the manifest, a database of
another kind, a backup of a newer release, a database that is not empty. The whole drill (back up, destroy,
restore, compare) runs on the full stack: tests/serving/test_backup_drill.py."""

from __future__ import annotations

import io
import json
import resource
import signal
import tarfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection

from studio.backup import MANIFEST, BackupProblem, backup_make, backup_restore, backup_verify, database_rows
from studio.storage import stored_files

SHOT = bytes(range(256)) * 256  # 64 KiB, the size of a small screenshot


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {**settings.STORAGES["default"], "OPTIONS": {"location": str(tmp_path / "media")}},
    }
    default_storage.save("screenshots/ab/abcdef.png", ContentFile(SHOT))
    default_storage.save("exports/1/bundle.zip", ContentFile(b"a bundle"))
    return tmp_path / "media"


@pytest.fixture
def backup(db, storage, tmp_path) -> Path:
    target = tmp_path / "backups" / "studio.tar"
    target.parent.mkdir()
    summary = backup_make(target=target)
    assert summary.files == 2 and summary.rows > 0
    return target


def rewritten(
    source: Path, target: Path, *, manifest=None, member: str | None = None, data: bytes | None = None
) -> Path:
    """A copy of the archive ``source`` with its manifest changed by ``manifest`` or one member's bytes replaced."""
    with tarfile.open(source) as old, tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as new:
        for info in old.getmembers():
            body = old.extractfile(info).read()
            if info.name == MANIFEST and manifest is not None:
                document = json.loads(body)
                manifest(document)
                body = json.dumps(document).encode()
            if info.name == member:
                body = data
            info.size = len(body)
            new.addfile(info, io.BytesIO(body))
    return target


def restore_refused(path: Path, storage: Path) -> str:
    rows_before, files_before = database_rows(), stored_files()
    with pytest.raises(BackupProblem) as refused:
        backup_restore(path=path)
    assert database_rows() == rows_before and stored_files() == files_before  # nothing written
    return str(refused.value)


def test_a_backup_into_a_folder_that_is_not_there_says_so_and_leaves_nothing(db, storage, tmp_path):
    (tmp_path / "a-file").write_text("")
    for target, reason in (
        (tmp_path / "missing" / "b.tar", "No such file or directory"),
        (tmp_path / "a-file" / "b.tar", "Not a directory"),
    ):
        with pytest.raises(BackupProblem) as refused:
            backup_make(target=target)
        assert str(refused.value) == f"the backup could not be written to {target}: {reason}; nothing was kept"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file", "media"]


@contextmanager
def disk_full_past(size: int):
    """Writes past ``size`` bytes of any file fail (RLIMIT_FSIZE: EFBIG, as a full disk fails them with ENOSPC)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_a_backup_that_fills_the_disk_says_so_and_leaves_no_partial_archive(backup, tmp_path):
    # Room for the database's copy but not for the archive that holds it and the files.
    target = backup.with_name("second.tar")
    with tarfile.open(backup) as archive:
        database_size = next(info.size for info in archive if info.name.startswith("database."))
    with disk_full_past(database_size + 16 * 1024), pytest.raises(BackupProblem) as refused:
        backup_make(target=target)
    assert str(refused.value) == f"the backup could not be written to {target}: File too large; nothing was kept"
    assert sorted(path.name for path in backup.parent.iterdir()) == ["studio.tar"]


def test_an_existing_file_is_never_overwritten(backup):
    before = backup.read_bytes()
    with pytest.raises(BackupProblem, match="already exists: name a new file"):
        backup_make(target=backup)
    assert backup.read_bytes() == before


def test_an_archive_cut_short_is_refused_before_anything_is_written(backup, storage):
    cut = backup.with_name("cut.tar")
    cut.write_bytes(backup.read_bytes()[: backup.stat().st_size // 2])
    assert restore_refused(cut, storage) in (
        f"{cut} has no {MANIFEST}: it is not a whole studio backup (cut short?)",
        f"{cut}'s {MANIFEST} cannot be read: unexpected end of data",
    )
    not_a_tar = backup.with_name("notes.tar")
    not_a_tar.write_text("not an archive")
    assert restore_refused(not_a_tar, storage).startswith(f"{not_a_tar} is not a studio backup (not a readable tar")


def test_a_file_whose_bytes_differ_from_the_manifest_is_refused_before_anything_is_written(backup, storage):
    tampered = rewritten(backup, backup.with_name("t.tar"), member="files/screenshots/ab/abcdef.png", data=SHOT[::-1])
    assert restore_refused(tampered, storage) == (
        f"{tampered} does not match its manifest: files/screenshots/ab/abcdef.png's bytes differ from the "
        "manifest's sha256; nothing was restored"
    )

    def file_left_out(manifest):
        manifest["files"].append({"name": "screenshots/cd/gone.png", "size": 1, "sha256": "0" * 64})

    missing = rewritten(backup, backup.with_name("m.tar"), manifest=file_left_out)
    assert "files/screenshots/cd/gone.png is missing" in restore_refused(missing, storage)


def test_a_backup_of_another_database_kind_or_a_newer_release_is_refused(backup, storage):
    here = connection.vendor
    there = "sqlite" if here == "postgresql" else "postgresql"

    def from_the_other_kind(manifest):
        manifest["database"]["vendor"] = there

    other = rewritten(backup, backup.with_name("other.tar"), manifest=from_the_other_kind)
    assert restore_refused(other, storage).startswith(f"{other} holds a {there} database; this studio runs on {here}")

    def from_a_newer_release(manifest):
        manifest["migrations"].append("traces.9999_from_the_future")

    newer = rewritten(backup, backup.with_name("new.tar"), manifest=from_a_newer_release)
    assert restore_refused(newer, storage) == (
        f"{newer} was made by a newer release (migrations this code lacks: traces.9999_from_the_future): restore it "
        "with the release that made it"
    )


def test_a_restore_into_a_database_that_has_tables_is_refused(backup, storage):
    assert "already has" in restore_refused(backup, storage)
    assert "tables: a backup is restored into an empty database" in restore_refused(backup, storage)


def test_a_file_deleted_between_the_listing_and_its_copy_is_left_out_whole(db, storage, tmp_path, monkeypatch):
    # The race made certain: the listing names a file that is gone by the time it is copied (an ended job's part).
    listing = stored_files()
    monkeypatch.setattr("studio.backup.stored_files", lambda: [*listing, ("imports/job-7-parts/1/0.zip", 512)])
    target = tmp_path / "backup.tar"
    assert backup_make(target=target).files == 2
    manifest = backup_verify(target)  # every entry whole: no header of a file that never came
    assert [entry["name"] for entry in manifest["files"]] == [name for name, _ in listing]
    assert manifest["files_gone_during_backup"] == ["imports/job-7-parts/1/0.zip"]
