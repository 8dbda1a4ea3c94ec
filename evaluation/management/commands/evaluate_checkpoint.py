import json
import time

from django.core.management.base import BaseCommand, CommandError

from evaluation import services
from evaluation.models import EvaluationJob
from studio.errors import Invalid
from studio.inputs import id_from_text
from traces.models import Project


class Command(BaseCommand):
    help = (
        "Evaluate a local Qwen2-VL / Qwen2.5-VL checkpoint on a project's accepted corrections: DPO preference "
        "accuracy, mean margin and NLL of the corrected and post-reflection targets (overall, by category, by round). "
        "Runs here, or with --async on the gpu workers."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project name (or id)")
        parser.add_argument("--checkpoint", required=True, help="the checkpoint's name, e.g. agent-r2")
        parser.add_argument("--model-dir", dest="model_dir", required=True, help="the checkpoint's directory")
        parser.add_argument(
            "--split",
            choices=services.SPLITS,
            default=None,
            help="validation (the bundle's split) or all; default: all with --round, else validation",
        )
        parser.add_argument("--round", dest="round_ref", default=None, help="only this round's traces (name or id)")
        parser.add_argument("--validation-fraction", dest="validation_fraction", type=float, default=None)
        parser.add_argument("--split-seed", dest="split_seed", type=int, default=None)
        parser.add_argument("--export", dest="export_id", type=int, default=None, help="take the split of this export")
        parser.add_argument(
            "--scoring-settings", dest="scoring_settings", default="{}", help='JSON, e.g. {"max_batch": 8}'
        )
        parser.add_argument("--async", dest="run_async", action="store_true", help="queue it for a gpu worker")

    def handle(self, project, checkpoint, model_dir, scoring_settings, run_async, **options):
        found = Project.objects.filter(name=project).first()
        if found is None and (pk := id_from_text(str(project))) is not None:
            found = Project.objects.filter(pk=pk).first()
        if found is None:
            raise CommandError(f"no project named {project!r}")
        try:
            overrides = json.loads(scoring_settings)
        except ValueError as exc:
            raise CommandError(f"--scoring-settings is not JSON: {exc}") from None
        try:
            job = services.evaluation_job_create(
                project=found,
                user=None,
                model_dir=model_dir,
                checkpoint=checkpoint,
                split=options["split"],
                round_ref=options["round_ref"],
                validation_fraction=options["validation_fraction"],
                split_seed=options["split_seed"],
                export_id=options["export_id"],
                settings=overrides,
                enqueue=run_async,
            )
        except Invalid as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(f"evaluation {job.pk} of {job.checkpoint} on {found.name}")
        job = self._follow(job) if run_async else services.evaluation_job_run(job_id=job.pk)
        job.refresh_from_db()
        for error in job.errors:
            self.stderr.write(f"error: annotation {error.get('annotation')} {error.get('kind')}: {error['error']}")
        self.stdout.write(f"evaluation {job.pk} {job.status}: {job.message}")
        if job.status != "succeeded":
            raise CommandError(job.message)
        self.stdout.write(json.dumps(job.metrics["overall"], indent=2))

    def _follow(self, job: EvaluationJob) -> EvaluationJob:
        last = None
        while not job.is_finished:
            time.sleep(1)
            job.refresh_from_db()
            if (job.status, job.progress_done) != last:
                last = (job.status, job.progress_done)
                self.stdout.write(f"  {job.status}: {job.progress_done}/{job.progress_total} samples")
        return job
