"""``manage.py tau_moved_points``: count and list the accepted answers whose action holds a point or element box
placed for another τ than the accepted one (a lead's edit moved τ and kept the click, before the τ rule). It reports;
it rewrites nothing: a lead re-opens each one (or rejects it back to its annotator) to place the point again."""

from django.core.management.base import BaseCommand, CommandError

from annotation.selectors import tau_moved_points
from traces.models import Project

SLOT_WORDS = {"corrected": "corrected action (on o_τ)", "reflection": "post-reflection action (on o_τ+1)"}


class Command(BaseCommand):
    help = "Report accepted annotations whose point or element box was drawn for another τ (reads only)."

    def add_arguments(self, parser):
        parser.add_argument("--project", type=int, help="only this project (its id)")

    def handle(self, *args, project=None, **options):
        scope = None
        if project is not None:
            scope = Project.objects.filter(pk=project).first()
            if scope is None:
                raise CommandError(f"no project with id {project}")
        report = tau_moved_points(project=scope)
        moved = report["moved"]
        annotations = len({row["annotation_id"] for row in moved})
        self.stdout.write(
            f"{annotations} of {report['checked']} accepted error annotations hold a point drawn for another τ "
            f"({len(moved)} actions)."
        )
        for row in moved:
            self.stdout.write(
                f"  annotation {row['annotation_id']} ({row['project']}, trace {row['trace']}): "
                f"{SLOT_WORDS[row['slot']]} drawn for τ={row['drawn_for_tau']}, accepted with τ={row['tau']}"
            )
        if report["unknown"]:
            self.stdout.write(
                f"{report['unknown']} actions have points no audited write placed (loaded around the services): "
                "their τ cannot be judged from the history."
            )
