from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from traces import services
from traces.importers import IMPORTERS
from traces.models import Project


class Command(BaseCommand):
    help = "Import agent traces from a folder, a .zip or a .jsonl (format detected unless --format is given)."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--format", default="", choices=["", *sorted(IMPORTERS)])
        parser.add_argument("--async", dest="run_async", action="store_true", help="queue it for a worker instead")

    def handle(self, path, project, format, run_async, **options):
        source = Path(path).resolve()
        if not source.exists():
            raise CommandError(f"{path}: no such file or folder")
        try:
            project_obj = Project.objects.get(name=project)
        except Project.DoesNotExist:
            raise CommandError(f"no project named {project!r}") from None
        job = services.import_job_create(
            project=project_obj, user=None, upload_name=str(source), original_name=source.name, fmt=format,
            server_path=True, enqueue=run_async,
        )
        if run_async:
            self.stdout.write(f"queued import job {job.pk}")
            return
        job = services.import_job_run(job_id=job.pk)
        for error in job.errors:
            self.stderr.write(f"error: {error['error']}")
        self.stdout.write(
            f"import job {job.pk} {job.status}: {job.traces_imported} traces, {job.steps_imported} steps, "
            f"{job.screenshots_stored} screenshots stored, {job.traces_skipped} skipped, "
            f"{job.traces_failed} failed, {job.unparsed_actions} unparsed actions, {len(job.errors)} errors"
        )
        if job.status == "failed":
            raise CommandError(job.message)
