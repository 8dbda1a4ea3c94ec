import json
import time

from django.core.management.base import BaseCommand, CommandError

from prescoring import services
from prescoring.models import PrescoreJob, Scorer
from traces.models import Project


class Command(BaseCommand):
    help = (
        "Pre-score a project's traces: rule flags (rules) or a local Qwen2-VL checkpoint (qwen2vl). Runs here "
        "with progress, or with --async on the workers (rules: default queue, qwen2vl: gpu queue)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--scorer", required=True, choices=Scorer.values)
        parser.add_argument("--model", default="", help="checkpoint directory (default: STUDIO_PRESCORE_MODEL_DIR)")
        parser.add_argument("--trace", type=int, action="append", default=[], help="only this trace id (repeatable)")
        parser.add_argument(
            "--scoring-settings", dest="scoring_settings", default="{}", help='JSON overrides, e.g. {"generate": false}'
        )
        parser.add_argument(
            "--async", dest="run_async", action="store_true", help="queue it for a worker and follow its progress"
        )

    def handle(self, project, scorer, model, trace, scoring_settings, run_async, **options):
        try:
            project_obj = Project.objects.get(name=project)
        except Project.DoesNotExist:
            raise CommandError(f"no project named {project!r}") from None
        try:
            overrides = json.loads(scoring_settings)
        except ValueError as exc:
            raise CommandError(f"--scoring-settings is not JSON: {exc}") from None
        try:
            job = services.prescore_job_create(
                project=project_obj,
                user=None,
                scorer=scorer,
                model_path=model,
                settings=overrides,
                trace_ids=trace,
                enqueue=run_async,
            )
        except services.PrescoreError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"prescore job {job.pk} ({scorer}) on {project_obj.name}")
        if run_async:
            job = self._follow(job)
        else:
            job = services.prescore_job_run(job_id=job.pk, on_progress=self._report)
        job.refresh_from_db()
        for error in job.errors:
            where = f"trace {error.get('trace')} step {error.get('step')}: " if "trace" in error else ""
            self.stderr.write(f"error: {where}{error['error']}")
        self.stdout.write(f"prescore job {job.pk} {job.status}: {job.message}")
        if job.status == "failed":
            raise CommandError(job.message)

    def _report(self, job: PrescoreJob) -> None:
        self.stdout.write(
            f"  {job.progress_done}/{job.progress_total} steps ({job.steps_scored} scored, {job.steps_failed} failed)"
        )

    def _follow(self, job: PrescoreJob) -> PrescoreJob:
        last = None
        while not job.is_finished:
            time.sleep(1)
            job.refresh_from_db()
            if (job.status, job.progress_done) != last:
                last = (job.status, job.progress_done)
                self.stdout.write(f"  {job.status}: {job.progress_done}/{job.progress_total} steps")
        return job
