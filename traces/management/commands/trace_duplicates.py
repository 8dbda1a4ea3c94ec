"""``manage.py trace_duplicates --project NAME``: the traces of a project that hold the same content.

A trace is known by its content (traces/identity.py): imports and pushes store a content once. Traces stored
before that rule (when a folder's name made the trace) may repeat one, and a runner's step-by-step push is only
known once it ends. This lists each repeated content with its traces, oldest first, and every annotation on them
(annotator, status, verdict), so a lead can merge the work onto one trace and delete the others (the trace page's
delete, which keeps an audit record). It changes nothing.
"""

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from traces.models import Project
from traces.selectors import trace_duplicate_groups


class Command(BaseCommand):
    help = "List the traces of a project that hold the same content (instruction, screenshots, actions)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project name or id")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print JSON")

    def handle(self, *args, project, as_json=False, **options):
        found = Project.objects.filter(name=project).first()
        if found is None and project.isascii() and project.isdigit() and len(project) < 19:
            found = Project.objects.filter(pk=int(project)).first()
        if found is None:
            raise CommandError(f"no project {project!r} (give its name or id)")
        groups = trace_duplicate_groups(found)
        rows: list[dict[str, Any]] = [
            {
                "content_hash": group.content_hash,
                "traces": [
                    {
                        "id": trace.pk,
                        "external_id": trace.external_id,
                        "source": trace.source,
                        "created_at": trace.created_at.isoformat(),
                        "round": trace.round.name if trace.round else None,
                        "import_job": trace.import_job_id,
                        "annotations": [
                            {
                                "id": annotation.pk,
                                "annotator": annotation.annotator.username,
                                "status": annotation.status,
                                "verdict": annotation.verdict,
                            }
                            for annotation in sorted(trace.annotations.all(), key=lambda a: a.pk)
                        ],
                    }
                    for trace in group.traces
                ],
            }
            for group in groups
        ]
        if as_json:
            self.stdout.write(json.dumps({"project": found.name, "duplicates": rows}, indent=2))
            return
        if not rows:
            self.stdout.write(f"{found.name}: no two traces hold the same content")
            return
        copies = sum(len(row["traces"]) for row in rows)
        self.stdout.write(
            f"{found.name}: {len(rows)} content{'s' if len(rows) != 1 else ''} held by more than one trace "
            f"({copies} traces); keep one of each, merge the annotations onto it, delete the others"
        )
        for row in rows:
            self.stdout.write(f"content {row['content_hash'][:12]}:")
            for trace in row["traces"]:
                where = f", round {trace['round']}" if trace["round"] else ""
                job = f", import {trace['import_job']}" if trace["import_job"] else ""
                self.stdout.write(
                    f"  trace {trace['id']} {trace['external_id']!r} ({trace['source']}, {trace['created_at']}"
                    f"{where}{job}): {len(trace['annotations'])} annotation"
                    + ("s" if len(trace["annotations"]) != 1 else "")
                )
                for annotation in trace["annotations"]:
                    verdict = f", {annotation['verdict']}" if annotation["verdict"] else ""
                    self.stdout.write(
                        f"    annotation {annotation['id']} by {annotation['annotator']}: {annotation['status']}{verdict}"
                    )
