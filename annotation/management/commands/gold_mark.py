"""``manage.py gold_mark --project P --file F --by LEAD``: mark many traces gold from a lead's file (CSV with the
header ``external_id[,annotator]``, or JSONL), each trace's accepted answer as its reference (the named annotator's,
else the one an export takes). The same rules as the page and ``POST /api/projects/<id>/gold/``: a refused row is
reported with its line and reason, and the others are marked. ``--remove`` lists the gold traces named instead and
removes them (their scores stay, marked as removed)."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import GoldTrace
from annotation.quality.services import gold_file_read, gold_mark_rows, gold_remove
from studio.access import can
from studio.errors import StudioError
from traces.models import Project


class Command(BaseCommand):
    help = "Mark traces gold (their accepted answer as the reference) from a CSV or JSONL file of external ids."

    def add_arguments(self, parser):
        parser.add_argument("--project", type=int, required=True, help="the project's id")
        parser.add_argument("--file", required=True, help="CSV (external_id[,annotator]) or JSONL")
        parser.add_argument("--by", required=True, help="the lead who marks them (a user name)")
        parser.add_argument("--remove", action="store_true", help="remove the named traces' gold instead")

    def handle(self, *args, project, file, by, remove=False, **options):
        target = Project.objects.filter(pk=project).first()
        if target is None:
            raise CommandError(f"no project with id {project}")
        user = get_user_model().objects.filter(username=by).first()
        if user is None or not can(user, "gold.manage", target):
            raise CommandError(f"{by} is no lead of {target.name}: only they mark gold traces")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"no file {file}")
        try:
            rows = gold_file_read(path.read_bytes(), name=path.name)
        except StudioError as exc:
            raise CommandError(exc.detail) from None
        if remove:
            golds = GoldTrace.objects.filter(project=target, trace__external_id__in=[r.external_id for r in rows])
            kept = sum(gold_remove(gold=gold, user=user)["scores_kept"] for gold in golds)
            self.stdout.write(f"{len(golds)} gold traces removed; {kept} scores kept, marked as removed.")
            return
        report = gold_mark_rows(project=target, user=user, rows=rows)
        self.stdout.write(
            f"{report['marked']} marked, {report['reference_changed']} with a new reference, "
            f"{report['unchanged']} unchanged, {len(report['refused'])} refused."
        )
        for row in report["refused"]:
            self.stdout.write(f"  line {row['line']} ({row['external_id'] or 'no id'}): {row['reason']}")
