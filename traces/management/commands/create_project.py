"""``manage.py create_project NAME``: set up a project from the command line, through the same form and service as
the project page (so the same rules hold: a unique name, a history window in range, known choices)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from traces import services
from traces.forms import form_errors_text, project_default, project_form_for_new
from traces.models import CoordinateConvention, Platform, Project
from traces.selectors import double_annotation_words


class Command(BaseCommand):
    help = (
        "Create a project with a platform, a coordinate convention, a history window and its double annotation "
        "(the share of traces several annotators answer)."
    )

    def add_arguments(self, parser):
        def default(field: str):
            return project_default(field)

        parser.add_argument("name")
        parser.add_argument("--platform", choices=Platform.values, default=default("platform"))
        parser.add_argument(
            "--coordinates",
            choices=CoordinateConvention.values,
            default=default("coordinate_convention"),
            help="the point convention of the project's prompts and exports",
        )
        parser.add_argument(
            "--history-window",
            type=int,
            default=default("history_window"),
            help="screenshots sent as images per prompt",
        )
        parser.add_argument(
            "--double-annotation-share",
            type=float,
            default=default("double_annotation_share"),
            metavar="SHARE",
            help="0 to 1: the share of traces answered by several annotators, for agreement (default 0: off)",
        )
        parser.add_argument(
            "--double-annotation-annotators",
            type=int,
            default=default("double_annotation_annotators"),
            metavar="N",
            help="distinct annotators per shared trace (2 or more; default 2)",
        )
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--member",
            action="append",
            default=[],
            metavar="USERNAME",
            help="a user who works in the project (repeatable)",
        )

    def handle(self, name, platform, coordinates, history_window, description, member, **options):
        share, annotators = options["double_annotation_share"], options["double_annotation_annotators"]
        existing = Project.objects.filter(name=name.strip()).first()
        if existing is not None:
            raise CommandError(
                f"a project named {existing.name!r} already exists (id {existing.pk}); change its "
                f"settings on /projects/{existing.pk}/settings/"
            )
        users = get_user_model().objects.filter(username__in=member, is_active=True)
        missing = sorted(set(member) - set(users.values_list("username", flat=True)))
        if missing:
            raise CommandError(f"no active user named {', '.join(missing)}")
        form = project_form_for_new(
            name=name,
            description=description,
            platform=platform,
            coordinate_convention=coordinates,
            history_window=history_window,
            double_annotation_share=share,
            double_annotation_annotators=annotators,
            members=users,
        )
        if not form.is_valid():
            raise CommandError(form_errors_text(form))
        project = services.project_save(actor=None, fields=form.settings(), members=form.cleaned_data["members"])
        self.stdout.write(
            f"created project {project.name!r} (id {project.pk}): {project.platform}, {project.coordinate_convention}, "
            f"history window {project.history_window}, {project.memberships.count()} members, "
            f"{double_annotation_words(project)}"
        )
