"""Backups of a whole studio, database and stored files together, and their restore (``manage.py backup`` /
``manage.py restore``; docs/deploy.md, "Backups").

A backup is one uncompressed tar (screenshots and bundles are compressed already): the database (PostgreSQL:
``pg_dump``'s custom format; SQLite: a copy made by SQLite's backup API), then every stored file under ``files/``,
then ``manifest.json``: each member's size and sha256, the rows of every table and the migrations applied.

Consistency: the rows are counted and dumped from one snapshot (PostgreSQL: a repeatable-read transaction whose
snapshot ``pg_dump --snapshot`` shares), and the files are listed after it. A screenshot or bundle is stored before
the row that names it commits, so every file a dumped row names is in storage when the files are copied; a file
stored after the dump is a harmless extra. The archive is written under a temporary name beside the target and
renamed onto it at the end, so a full disk or a killed backup leaves no file that looks like a backup.

A restore checks everything it can before it writes anything: the manifest, every member's sha256, the database's
kind, that this code knows every migration the backup's database had, that the database is empty and that no
stored file of the same name differs. Then it puts the files back (a file already there with the same bytes is
kept), then the database in one transaction, then counts every table's rows against the manifest.

Each backup's outcome is written to the database (``BackupOutcome``), for ``/metrics`` to publish on whichever host
Prometheus scrapes: a success once the archive is renamed onto its name, a failure with its message. A restored
database's row says that the restored archive is its last successful backup.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import psycopg
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DatabaseError, connection, transaction
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from studio.errors import Invalid
from studio.storage import stored_file_put, stored_files

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

BACKUP_FORMAT = 1
MANIFEST = "manifest.json"
FILES = "files/"
DATABASE_MEMBERS = {"postgresql": "database.pgdump", "sqlite": "database.sqlite3"}
CHUNK = 1024 * 1024


class BackupProblem(Invalid):
    """A backup that cannot be written, or an archive that cannot be restored: the message says why."""


@dataclass(frozen=True)
class BackupSummary:
    path: Path
    tables: int
    rows: int
    files: int
    bytes: int
    seconds: float


# --- what the database holds ---------------------------------------------------------------------------------------


def _vendor() -> str:
    if connection.vendor not in DATABASE_MEMBERS:
        raise BackupProblem(f"backups know PostgreSQL and SQLite, not {connection.vendor}")
    return connection.vendor


def _quoted(name: str) -> str:
    return connection.ops.quote_name(name)


def table_rows(cursor: Any, tables: list[str]) -> dict[str, int]:
    counts = {}
    for table in sorted(tables):
        cursor.execute(f"SELECT count(*) FROM {_quoted(table)}")  # noqa: S608 (names from the catalogue, quoted)
        counts[table] = cursor.fetchone()[0]
    return counts


def _pg_tables(cursor: Any) -> list[str]:
    # The tables Django's introspection lists (``table_names``), read by a connection of any kind.
    cursor.execute(
        "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p', 'f') AND NOT c.relispartition AND n.nspname NOT IN ('pg_catalog', 'pg_toast') "
        "AND pg_catalog.pg_table_is_visible(c.oid)"
    )
    return [name for (name,) in cursor.fetchall()]


def database_rows() -> dict[str, int]:
    """Rows of every table of the configured database, now."""
    with connection.cursor() as cursor:
        tables = (
            _pg_tables(cursor) if connection.vendor == "postgresql" else connection.introspection.table_names(cursor)
        )
        return table_rows(cursor, tables)


def _applied_migrations(cursor: Any) -> list[str]:
    cursor.execute("SELECT app, name FROM django_migrations ORDER BY app, name")
    return [f"{app}.{name}" for app, name in cursor.fetchall()]


def _pg_command(program: str) -> tuple[list[str], dict[str, str]]:
    db = settings.DATABASES["default"]
    argv = [program, "--no-password", "-d", db["NAME"]]
    for flag, value in (("-h", db.get("HOST")), ("-p", db.get("PORT")), ("-U", db.get("USER"))):
        if value:
            argv += [flag, str(value)]
    env = {**os.environ}
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = db["PASSWORD"]
    return argv, env


def _stored_files() -> list[tuple[str, int]]:
    try:
        return stored_files()
    except (BotoCoreError, ClientError) as exc:
        raise BackupProblem(
            f"storage cannot be listed ({exc}): is the bucket {getattr(settings, 'AWS_STORAGE_BUCKET_NAME', '')} there "
            "and reachable with these credentials?"
        ) from None


def _database_dump(dump: Path) -> tuple[dict[str, int], list[str]]:
    """Write the database to ``dump``; answer its tables' rows and its applied migrations, read from the same
    snapshot."""
    if _vendor() == "sqlite":
        source = sqlite3.connect(settings.DATABASES["default"]["NAME"])
        target = sqlite3.connect(dump)
        try:
            source.backup(target)
            copy = target.cursor()
            copy.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            tables = [row[0] for row in copy.fetchall()]
            return table_rows(copy, tables), _applied_migrations(copy)
        finally:
            target.close()
            source.close()
    # A connection of its own (the caller may be inside a transaction already) in one repeatable-read transaction,
    # whose snapshot pg_dump shares: the counts are the dump's.
    db = settings.DATABASES["default"]
    with psycopg.connect(
        dbname=db["NAME"],
        host=db.get("HOST") or None,
        port=db.get("PORT") or None,
        user=db.get("USER") or None,
        password=db.get("PASSWORD") or None,
    ) as snapshot_connection:
        snapshot_connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        snapshot_connection.read_only = True
        with snapshot_connection.cursor() as cursor:
            snapshot = cursor.execute("SELECT pg_export_snapshot()").fetchall()[0][0]
            argv, env = _pg_command("pg_dump")
            done = subprocess.run(
                [*argv, "--format=custom", f"--snapshot={snapshot}", "-f", str(dump)],
                env=env,
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise BackupProblem(f"pg_dump failed ({done.stderr.strip()[-500:]}); nothing was kept")
            return table_rows(cursor, _pg_tables(cursor)), _applied_migrations(cursor)


# --- writing -------------------------------------------------------------------------------------------------------


class _Hashing(io.RawIOBase):
    """A reader that hashes what passes through it (tarfile reads a member's bytes from it)."""

    def __init__(self, source: IO[bytes], first: bytes = b""):
        self.source, self.first, self.digest, self.size = source, first, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.first:
            data, self.first = (
                (self.first, b"") if size < 0 or size >= len(self.first) else (self.first[:size], self.first[size:])
            )
        else:
            data = self.source.read(size)
        self.digest.update(data)
        self.size += len(data)
        return data


def _member_add(
    archive: tarfile.TarFile, name: str, source: IO[bytes], size: int, first: bytes = b""
) -> dict[str, Any]:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, int(time.time()), 0o600
    hashing = _Hashing(source, first)
    archive.addfile(info, hashing)
    return {"size": size, "sha256": hashing.digest.hexdigest()}


def _write_problem(target: Path, exc: OSError | sqlite3.Error) -> BackupProblem:
    reason = getattr(exc, "strerror", None) or str(exc)
    return BackupProblem(f"the backup could not be written to {target}: {reason}; nothing was kept")


def _outcome_record(**fields: Any) -> None:
    """Write the latest backup's outcome in a transaction of its own; a database that cannot take it is logged, and
    the backup's own outcome (an archive written, or the reason it was not) stands."""
    from studio.models import BackupOutcome

    try:
        with transaction.atomic():
            BackupOutcome.objects.update_or_create(pk=BackupOutcome.ROW, defaults=fields)
    except DatabaseError as exc:
        log.warning("the backup's outcome could not be recorded in the database: %s", exc)


def backup_make(*, target: Path) -> BackupSummary:
    """Write a backup of the database and every stored file to ``target`` (a new file), and record its outcome for
    ``/metrics``: its time once the archive is in place, or the time and reason it failed."""
    try:
        summary = _backup_write(target=target)
    except Exception as exc:
        message = str(exc) if isinstance(exc, BackupProblem) else f"{exc.__class__.__name__}: {exc}"
        _outcome_record(last_failure_at=timezone.now(), last_failure_message=message[:2000])
        raise
    _outcome_record(last_success_at=timezone.now())
    return summary


def _backup_write(*, target: Path) -> BackupSummary:
    started = time.monotonic()
    target = Path(target).absolute()
    if target.exists():
        raise BackupProblem(f"{target} already exists: name a new file (a backup never overwrites one)")
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    dump = target.with_name(f".{target.name}.database-{os.getpid()}")
    try:
        partial.open("xb").close()  # an unwritable or missing folder is said before the database is read
    except OSError as exc:
        raise _write_problem(target, exc) from None
    try:
        rows, migrations = _database_dump(dump)
        files = _stored_files()
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as archive:
            database_member = DATABASE_MEMBERS[_vendor()]
            with dump.open("rb") as handle:
                database = {
                    "member": database_member,
                    **_member_add(archive, database_member, handle, dump.stat().st_size),
                }
            dump.unlink()
            listed: list[dict[str, Any]] = []
            gone: list[str] = []
            for name, size in files:
                # Its first bytes read before its entry is written: a file deleted since the listing (an ended
                # job's part) is left out whole. Once read, it stays readable: an open local file, an S3 GET begun.
                try:
                    stored = default_storage.open(name, "rb")
                    first = stored.read(min(size, CHUNK))
                except (FileNotFoundError, ClientError):
                    gone.append(name)
                    continue
                with stored:
                    listed.append({"name": name, **_member_add(archive, FILES + name, stored, size, first)})
            manifest = {
                "format": BACKUP_FORMAT,
                "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "database": {"vendor": _vendor(), **database},
                "migrations": migrations,
                "tables": rows,
                "storage": settings.STUDIO_STORAGE,
                "files": listed,
                "files_gone_during_backup": gone,
            }
            body = json.dumps(manifest, indent=1, sort_keys=True).encode()
            _member_add(archive, MANIFEST, io.BytesIO(body), len(body))
        with partial.open("rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except (OSError, sqlite3.Error) as exc:
        raise _write_problem(target, exc) from None
    finally:
        for leftover in (partial, dump):
            leftover.unlink(missing_ok=True)
    return BackupSummary(
        path=target,
        tables=len(rows),
        rows=sum(rows.values()),
        files=len(listed),
        bytes=target.stat().st_size,
        seconds=time.monotonic() - started,
    )


# --- reading -------------------------------------------------------------------------------------------------------


@contextmanager
def _archive_open(path: Path) -> Iterator[tarfile.TarFile]:
    try:
        archive = tarfile.open(path, "r:")
    except FileNotFoundError:
        raise BackupProblem(f"no backup at {path}") from None
    except (tarfile.TarError, OSError) as exc:
        raise BackupProblem(f"{path} is not a studio backup (not a readable tar: {exc})") from None
    with archive:
        yield archive


def _manifest_read(archive: tarfile.TarFile, path: Path) -> dict[str, Any]:
    try:
        member = archive.getmember(MANIFEST)
        handle = archive.extractfile(member)
        manifest = json.loads(handle.read()) if handle else None
    except KeyError:
        raise BackupProblem(f"{path} has no {MANIFEST}: it is not a whole studio backup (cut short?)") from None
    except (tarfile.TarError, OSError, ValueError) as exc:
        raise BackupProblem(f"{path}'s {MANIFEST} cannot be read: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BACKUP_FORMAT:
        raise BackupProblem(
            f"{path} is not a backup of format {BACKUP_FORMAT} (its manifest says {manifest.get('format') if isinstance(manifest, dict) else manifest!r})"
        )
    return manifest


def _expected_members(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    expected = {manifest["database"]["member"]: manifest["database"]}
    expected.update({FILES + entry["name"]: entry for entry in manifest["files"]})
    return expected


def backup_verify(path: Path) -> dict[str, Any]:
    """The manifest of the backup at ``path`` once every member's bytes match it; a ``BackupProblem`` naming what
    differs otherwise. Reads the whole archive, writes nothing."""
    path = Path(path)
    with _archive_open(path) as archive:
        manifest = _manifest_read(archive, path)
        expected = _expected_members(manifest)
        seen: set[str] = set()
        wrong: list[str] = []
        try:
            for member in archive:
                if member.name == MANIFEST:
                    continue
                entry = expected.get(member.name)
                if entry is None:
                    wrong.append(f"{member.name} is not in the manifest")
                    continue
                seen.add(member.name)
                handle = archive.extractfile(member)
                digest = hashlib.sha256()
                size = 0
                while handle is not None and (chunk := handle.read(CHUNK)):
                    digest.update(chunk)
                    size += len(chunk)
                if size != entry["size"] or digest.hexdigest() != entry["sha256"]:
                    wrong.append(f"{member.name}'s bytes differ from the manifest's sha256")
        except (tarfile.TarError, OSError) as exc:
            raise BackupProblem(f"{path} is damaged: {exc}") from None
        missing = sorted(set(expected) - seen)
        wrong += [f"{name} is missing" for name in missing]
        if wrong:
            more = f" (and {len(wrong) - 5} more)" if len(wrong) > 5 else ""
            raise BackupProblem(
                f"{path} does not match its manifest: {'; '.join(wrong[:5])}{more}; nothing was restored"
            )
    return manifest


def _restorable(manifest: dict[str, Any], path: Path) -> None:
    vendor = _vendor()
    if manifest["database"]["vendor"] != vendor:
        raise BackupProblem(
            f"{path} holds a {manifest['database']['vendor']} database; this studio runs on {vendor}: restore it "
            "into the kind of database it came from"
        )
    known = {f"{app}.{name}" for app, name in MigrationLoader(None, ignore_no_migrations=True).disk_migrations}
    unknown = sorted(set(manifest["migrations"]) - known)
    if unknown:
        raise BackupProblem(
            f"{path} was made by a newer release (migrations this code lacks: {', '.join(unknown[:5])}): restore it "
            "with the release that made it"
        )
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
    if tables:
        raise BackupProblem(
            f"the database {settings.DATABASES['default']['NAME']} already has {len(tables)} tables: a backup is "
            'restored into an empty database (docs/deploy.md, "Restoring")'
        )


def _files_in_the_way(manifest: dict[str, Any]) -> tuple[set[str], list[str]]:
    """The backup's files storage already holds with the same bytes (kept), and those it holds with others."""
    wanted = {entry["name"]: entry for entry in manifest["files"]}
    same, differing = set(), []
    for name, size in _stored_files():
        entry = wanted.get(name)
        if entry is None:
            continue
        digest = hashlib.sha256()
        with default_storage.open(name, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
        (same.add(name) if size == entry["size"] and digest.hexdigest() == entry["sha256"] else differing.append(name))
    return same, differing


def _database_load(archive: tarfile.TarFile, manifest: dict[str, Any]) -> None:
    member = archive.extractfile(manifest["database"]["member"])
    assert member is not None
    connection.close()
    if manifest["database"]["vendor"] == "sqlite":
        destination = Path(settings.DATABASES["default"]["NAME"])
        partial = destination.with_name(f".{destination.name}.restoring-{os.getpid()}")
        try:
            with partial.open("wb") as out:
                shutil.copyfileobj(member, out, CHUNK)
                out.flush()
                os.fsync(out.fileno())
            for stale in (
                destination.with_name(destination.name + "-wal"),
                destination.with_name(destination.name + "-shm"),
            ):
                stale.unlink(missing_ok=True)
            os.replace(partial, destination)
        finally:
            partial.unlink(missing_ok=True)
        return
    argv, env = _pg_command("pg_restore")
    # One transaction: a restore that fails leaves the database as empty as it was.
    process = subprocess.Popen(
        [*argv, "--single-transaction", "--exit-on-error", "--no-owner", "--no-privileges"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    try:
        shutil.copyfileobj(member, process.stdin, CHUNK)
    except BrokenPipeError:
        pass
    finally:
        process.stdin.close()
    errors = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if process.wait() != 0:
        raise BackupProblem(f"pg_restore refused the backup's database: {errors.strip()[-500:]}")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner's statistics are not in a dump


def backup_restore(*, path: Path) -> BackupSummary:
    """Restore the backup at ``path`` into this studio's empty database and its storage."""
    started = time.monotonic()
    path = Path(path).absolute()
    manifest = backup_verify(path)
    _restorable(manifest, path)
    with _archive_open(path) as archive:
        same, differing = _files_in_the_way(manifest)
        if differing:
            raise BackupProblem(
                f"storage already holds {len(differing)} of the backup's files with other bytes (first: "
                f"{differing[0]}): restore into an empty bucket or folder; nothing was restored"
            )
        for entry in manifest["files"]:
            if entry["name"] in same:
                continue
            handle = archive.extractfile(FILES + entry["name"])
            assert handle is not None
            stored_file_put(entry["name"], handle)
        _database_load(archive, manifest)
    rows = database_rows()
    differ = {
        table: (count, rows.get(table)) for table, count in manifest["tables"].items() if rows.get(table) != count
    }
    if differ:
        table, (wanted, found) = next(iter(differ.items()))
        raise BackupProblem(
            f"the restored database's rows differ from the backup's in {len(differ)} tables (first: {table}, "
            f"{found} rows where the backup had {wanted})"
        )
    # The dump holds the outcome of the backups before this one (a failure among them would read as the latest):
    # the newest successful backup of this data is the archive just restored.
    _outcome_record(
        last_success_at=datetime.fromisoformat(manifest["created_at"]), last_failure_at=None, last_failure_message=""
    )
    return BackupSummary(
        path=path,
        tables=len(rows),
        rows=sum(rows.values()),
        files=len(manifest["files"]),
        bytes=path.stat().st_size,
        seconds=time.monotonic() - started,
    )
