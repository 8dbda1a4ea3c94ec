"""``manage.py restore PATH``: a backup put back into an empty database and its storage, every checksum verified
before anything is written, every table's rows counted after (studio/backup.py; docs/deploy.md, "Restoring")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.core.management.base import BaseCommand, CommandError

from studio.backup import BackupProblem, backup_restore, backup_verify

if TYPE_CHECKING:
    from django.core.management.base import CommandParser


class Command(BaseCommand):
    help = "Restore a backup made by `manage.py backup` into an empty database and storage."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the backup archive")
        parser.add_argument(
            "--verify-only", action="store_true", help="check the archive against its manifest and write nothing"
        )

    def handle(self, path: Path, verify_only: bool, **options: Any) -> None:
        try:
            if verify_only:
                manifest = backup_verify(path)
                self.stdout.write(
                    f"{path}: whole ({sum(manifest['tables'].values())} rows, {len(manifest['files'])} files, "
                    f"made {manifest['created_at']})"
                )
                return
            summary = backup_restore(path=path)
        except BackupProblem as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"restored {summary.rows} rows in {summary.tables} tables and {summary.files} stored files from "
            f"{summary.path} ({summary.seconds:.1f} s); every count matches the backup's. Run `manage.py migrate` "
            "if this release is newer than the backup's"
        )
