"""``manage.py search_index_rebuild [--project ID|NAME]``: make the search index of every project (or one) again from
its annotations. The index follows each save of a handed-in answer; run this once after upgrading to a version with
search (answers handed in before it have no entry until their next save) or after a change of the index's rules."""

from django.core.management.base import BaseCommand, CommandError

from insights.services import search_index_rebuild
from studio.inputs import id_from_text
from traces.models import Project


class Command(BaseCommand):
    help = "Make the search index of every project (or of --project) again from its annotations."

    def add_arguments(self, parser):
        parser.add_argument("--project", default="", help="a project's id or name (default: every project)")

    def handle(self, *args, project: str, **options):
        projects = Project.objects.order_by("pk")
        if project:
            pk = id_from_text(project)
            projects = projects.filter(pk=pk) if pk is not None else projects.filter(name=project)
            if not projects.exists():
                raise CommandError(f"no project {project!r}")
        for each in projects:
            made = search_index_rebuild(project=each)
            self.stdout.write(f"{each.name}: {made} search entr{'y' if made == 1 else 'ies'}")
