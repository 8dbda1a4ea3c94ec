"""A backup of a SQLite studio with local storage (one machine, `make demo`'s kind), restored after its database
file and data folder are gone: `manage.py backup` / `restore` as docs/deploy.md runs them, in processes of their own
(the PostgreSQL and S3 drill: tests/serving/test_backup_drill.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import REPO, TEST_PASSWORD
from tests.factories import native_trace_folder

pytestmark = [pytest.mark.subprocess]


def files_by_hash(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def rows(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as connection:
        tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            table: connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]  # noqa: S608
            for table in tables
            if not table.startswith("sqlite_")
        }


def test_a_sqlite_studio_comes_back_whole_from_its_backup(tmp_path):
    data = tmp_path / "data"
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "STUDIO_MODE": "dev",
        "STUDIO_DATA_DIR": str(data),
        "STUDIO_STORAGE": "local",
        "FIRST_PASSWORD": TEST_PASSWORD,
    }

    def manage(*args: str, ok: bool = True) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
        assert (done.returncode == 0) == ok, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout + done.stderr

    for n in range(2):
        native_trace_folder(tmp_path / "traces" / f"sq-{n}", external_id=f"sq-{n}", steps=2, size=(800, 600))
    manage("migrate", "--noinput")
    manage("create_user", "lead", "--role", "lead", "--password-from-env", "FIRST_PASSWORD")
    manage("create_project", "Local", "--member", "lead")
    manage("import_traces", str(tmp_path / "traces"), "--project", "Local")
    # A failed backup first: the archive below holds its record, the newest outcome in it.
    assert "nothing was kept" in manage("backup", str(tmp_path / "not-mounted" / "local.tar"), ok=False)
    database, media = data / "studio.sqlite3", data / "media"
    rows_before, files_before = rows(database), files_by_hash(media)
    assert rows_before["traces_trace"] == 2 and len(files_before) >= 4  # screenshots and their thumbnails

    archive = tmp_path / "backups" / "local.tar"
    archive.parent.mkdir()
    assert "stored files to" in manage("backup", str(archive))
    assert "whole" in manage("restore", "--verify-only", str(archive))

    for leftover in (database, database.with_name("studio.sqlite3-wal"), database.with_name("studio.sqlite3-shm")):
        leftover.unlink(missing_ok=True)
    shutil.rmtree(media)
    assert "every count matches the backup's" in manage("restore", str(archive))
    assert rows(database) == rows_before
    assert files_by_hash(media) == files_before
    # The restored studio's last backup is the one restored, not the failure its database held.
    with tarfile.open(archive) as tar:
        made = datetime.fromisoformat(json.loads(tar.extractfile("manifest.json").read())["created_at"])
    with sqlite3.connect(database) as connection:
        success, failure, message = connection.execute(
            "SELECT last_success_at, last_failure_at, last_failure_message FROM studio_backupoutcome"
        ).fetchone()
    assert (datetime.fromisoformat(success).replace(tzinfo=UTC), failure, message) == (made, None, "")
    assert "a backup is restored into an empty database" in manage("restore", str(archive), ok=False)
