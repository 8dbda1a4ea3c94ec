import shlex
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studio.errors import Invalid
from traces import services
from traces.forms import form_errors_text, project_form_for_new
from traces.importers import IMPORTERS
from traces.models import CoordinateConvention, Project
from traces.selectors import round_resolve


class Command(BaseCommand):
    help = "Import agent traces from a folder, a .zip or a .jsonl (format detected unless --format is given)."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--format", default="", choices=["", *sorted(IMPORTERS)])
        parser.add_argument(
            "--coordinates",
            default="",
            choices=["", *CoordinateConvention.values],
            help="the convention of the traces' points, when the source does not say it "
            "(default: the source's, else the project's)",
        )
        parser.add_argument("--round", dest="round_ref", default="", help="the round (name or id) the new traces go in")
        parser.add_argument("--async", dest="run_async", action="store_true", help="queue it for a worker instead")
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the project (with the default settings) when there is none of that name",
        )

    def handle(self, path, project, format, run_async, create=False, coordinates="", round_ref="", **options):
        source = Path(path).resolve()
        if not source.exists():
            raise CommandError(f"{path}: no such file or folder")
        project_obj = Project.objects.filter(name=project).first()
        if project_obj is None and create:
            form = project_form_for_new(name=project)
            if not form.is_valid():
                raise CommandError(f"cannot create project {project!r}: {form_errors_text(form)}")
            project_obj = services.project_save(actor=None, fields=form.settings())
            self.stdout.write(
                f"created project {project!r} (id {project_obj.pk}): {project_obj.platform}, "
                f"{project_obj.coordinate_convention}, history window {project_obj.history_window}"
            )
        elif project_obj is None:
            known = ", ".join(
                repr(name) for name in Project.objects.order_by("name").values_list("name", flat=True)[:10]
            )
            raise CommandError(
                f"no project named {project!r}"
                + (f" (projects: {known})" if known else " (there are no projects yet)")
                + f". Create it with `manage.py create_project {shlex.quote(project)} [--platform desktop|web|mobile] "
                "[--coordinates relative-1000|smart-resize-pixels|screen-pixels]`, or add --create to make it with "
                "the default settings."
            )
        try:
            into = round_resolve(project_obj, round_ref)
        except Invalid as exc:
            raise CommandError(exc.detail) from None
        job = services.import_job_create(
            project=project_obj,
            round=into,
            user=None,
            upload_name=str(source),
            original_name=source.name,
            fmt=format,
            server_path=True,
            enqueue=run_async,
            coordinates=coordinates,
        )
        if run_async:
            self.stdout.write(f"queued import job {job.pk}")
            return
        job = services.import_job_run(job_id=job.pk)
        for error in job.errors:
            self.stderr.write(f"{error.get('kind', 'error')}: {error['error']}")
        self.stdout.write(
            f"import job {job.pk} {job.status}"
            + (f" into round {into.name}" if into else "")
            + f": {services.import_job_summary(job)}"
        )
        if job.status == "failed":
            raise CommandError(job.message)
