"""The demo world of `make demo`: role users, two projects (the desktop one with double annotation) and generated
traces with answers, all through the studio's services."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from django.db import transaction

from demo.generate import write_demo_traces
from studio.demo import user_create_with_role
from studio.permissions import Role
from traces import services as trace_services
from traces.models import CoordinateConvention, Platform, Project

DEMO_USERS = {"annotator": Role.ANNOTATOR, "annotator2": Role.ANNOTATOR, "lead": Role.LEAD, "engineer": Role.ENGINEER}
DEMO_PROJECTS = {
    "desktop": ("Desktop & web demo", Platform.DESKTOP),
    "mobile": ("Phone demo", Platform.MOBILE),
}
# Double annotation in the desktop demo: every trace goes to two annotators (a share below 1 picks traces by a hash
# of their ids, which differ from one database to the next; the demo's few traces need the overlap to be sure), so
# the quality dashboard shows agreement out of the box.
DEMO_DOUBLE_ANNOTATION = {"desktop": 1.0, "mobile": 0.0}
# Seconds the demo answers took, in turn: the dashboards' median time is a real figure, not 0 s.
DEMO_SECONDS = (142, 96, 188, 121, 75, 163)


def demo_seed(*, password: str, seed: int = 7, stdout=None) -> dict:
    """Create demo users, projects and traces; safe to run again (nothing is duplicated)."""
    users = [
        user_create_with_role(username=name, password=password, role=role, demo=True)
        for name, role in DEMO_USERS.items()
    ]
    projects: dict[str, Project] = {}
    for key, (name, platform) in DEMO_PROJECTS.items():
        project, _ = Project.objects.get_or_create(
            name=name,
            defaults={
                "platform": platform,
                "coordinate_convention": CoordinateConvention.RELATIVE_1000,
                "double_annotation_share": DEMO_DOUBLE_ANNOTATION[key],
            },
        )
        for user in users:
            trace_services.membership_add(project=project, user=user)
        projects[key] = project

    imported = []
    with tempfile.TemporaryDirectory(prefix="demo-traces-") as tmp:
        for demo in write_demo_traces(Path(tmp), seed=seed):
            project = projects["mobile" if demo.platform == "mobile" else "desktop"]
            job = trace_services.import_job_create(
                project=project,
                user=None,
                upload_name=str(demo.folder),
                original_name=demo.folder.name,
                fmt="native",
                server_path=True,
                enqueue=False,
            )
            job = trace_services.import_job_run(job_id=job.pk)
            if job.errors or job.status != "succeeded":
                raise RuntimeError(f"demo trace {demo.folder.name} did not import: {job.message} {job.errors}")
            imported.append((project, _external_id(demo.folder), demo.annotation))
    annotations = _seed_annotations(imported, users)
    second_answers = _seed_second_answers(imported)
    summary = {
        "users": [u.username for u in users],
        "projects": [p.name for p in projects.values()],
        "traces": len(imported),
        "annotations": annotations,
        "second_answers": second_answers,
    }
    if stdout:
        stdout.write(f"demo: {summary}")
    return summary


def _seed_annotations(imported, users) -> int:
    """Accepted demo annotations on every other trace: an engineer can export a bundle at once, and the
    annotators still find traces (desktop and phone) waiting in their queue."""
    try:
        from annotation.services import annotation_seed_demo
    except ImportError:
        return 0
    count = 0
    with transaction.atomic():
        for position, (project, external_id, annotation) in enumerate(imported):
            if annotation and position % 2 == 0:
                count += annotation_seed_demo(
                    project=project,
                    external_id=external_id,
                    annotation=annotation,
                    time_spent_s=DEMO_SECONDS[position % len(DEMO_SECONDS)],
                )
    return count


def _seed_second_answers(imported) -> int:
    """annotator2's answers, submitted for review, on the shared traces the demo annotator answered
    (``annotation.overlap``): mostly the same reading, one error put in another category, so agreement is a figure
    between the extremes and the review queue holds work."""
    from annotation.overlap import trace_annotation_quota
    from annotation.services import annotation_seed_demo
    from traces.models import Trace

    count = 0
    with transaction.atomic():
        for position, (project, external_id, annotation) in enumerate(imported):
            trace = Trace.objects.get(project=project, external_id=external_id)
            if not annotation or position % 2 or trace_annotation_quota(trace_id=trace.pk, project=project) < 2:
                continue
            answer = dict(annotation)
            if count % 2 and answer.get("error_category"):
                others = [c for c in project.error_categories if c != answer["error_category"]]
                answer["error_category"] = others[0]
            count += annotation_seed_demo(
                project=project,
                external_id=external_id,
                annotation=answer,
                annotator_name="annotator2",
                accept=False,
                time_spent_s=DEMO_SECONDS[(position + 3) % len(DEMO_SECONDS)],
            )
    return count


def _external_id(folder: Path) -> str:
    return json.loads((folder / "trace.json").read_text())["external_id"]
