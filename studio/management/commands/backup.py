"""``manage.py backup PATH``: the database and every stored file in one archive, with a manifest of their sha256
and the rows of every table (studio/backup.py; docs/deploy.md, "Backups")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.core.management.base import BaseCommand, CommandError

from studio.backup import BackupProblem, backup_make

if TYPE_CHECKING:
    from django.core.management.base import CommandParser


class Command(BaseCommand):
    help = "Back up the database and the stored files into one new archive (a .tar)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the archive to write (a new file; never overwritten)")

    def handle(self, path: Path, **options: Any) -> None:
        try:
            summary = backup_make(target=path)
        except BackupProblem as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"backed up {summary.rows} rows in {summary.tables} tables and {summary.files} stored files to "
            f"{summary.path} ({summary.bytes} bytes, {summary.seconds:.1f} s)"
        )
