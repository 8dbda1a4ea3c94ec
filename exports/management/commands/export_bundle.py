"""Build an export bundle in this process: python manage.py export_bundle --project NAME --format trl --out PATH"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exports import services
from exports.builders import OptionsError
from exports.formats import format_names
from traces.models import Project


class Command(BaseCommand):
    help = "Export accepted annotations of a project as an SFT/DPO bundle (zip)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project name")
        parser.add_argument("--format", required=True, choices=format_names())
        parser.add_argument("--out", required=True, help="Path of the .zip to write")
        parser.add_argument("--valid-prefix", action="store_true", help="Add steps 1..τ-1 as plain SFT samples")
        parser.add_argument("--error-free", action="store_true", help="Add error-free traces as plain SFT samples")
        parser.add_argument("--validation-fraction", type=float, default=0.1)
        parser.add_argument("--seed", type=int, default=0, help="Train/validation split seed")

    def handle(self, *args, **opts):
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        options = {
            "include_valid_prefix": opts["valid_prefix"],
            "include_error_free": opts["error_free"],
            "validation_fraction": opts["validation_fraction"],
            "split_seed": opts["seed"],
        }
        try:
            job = services.export_to_path(
                project=project, user=None, fmt=opts["format"], options=options, out=Path(opts["out"])
            )
        except (OptionsError, services.ExportError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{opts['out']}: {job.bundle_size} bytes, sha256 {job.bundle_sha256}\n"
            f"{services.export_summary(job.counts)}\n{json.dumps(job.counts['by_file'])}"
        )
