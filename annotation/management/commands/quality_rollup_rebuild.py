"""``manage.py quality_rollup_rebuild [--project ID]``: recount the quality dashboard's rollup (each annotator's
counts per day, each double-annotated trace's pair) from the answers themselves, for rows written around the
services (bulk loads, repairs) or to check the kept counts against a recount."""

from django.core.management.base import BaseCommand, CommandError

from annotation.quality.rollup import quality_rollup_rebuild
from traces.models import Project


class Command(BaseCommand):
    help = "Recount the quality dashboard's per-annotator, per-day rollup from the answers."

    def add_arguments(self, parser):
        parser.add_argument("--project", type=int, help="only this project (its id)")

    def handle(self, *args, project=None, **options):
        if project is not None and not Project.objects.filter(pk=project).exists():
            raise CommandError(f"no project with id {project}")
        made = quality_rollup_rebuild(project_ids=None if project is None else [project])
        self.stdout.write(
            f"{made['entries']} answers counted into {made['rollups']} annotator-days; {made['pairs']} agreement pairs."
        )
