"""The demo world of `make demo`: role users, two projects and generated traces, all through the studio's services."""

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


def demo_seed(*, password: str, seed: int = 7, stdout=None) -> dict:
    """Create demo users, projects and traces; safe to run again (nothing is duplicated)."""
    users = [
        user_create_with_role(username=name, password=password, role=role, demo=True)
        for name, role in DEMO_USERS.items()
    ]
    projects: dict[str, Project] = {}
    for key, (name, platform) in DEMO_PROJECTS.items():
        project, _ = Project.objects.get_or_create(
            name=name, defaults={"platform": platform, "coordinate_convention": CoordinateConvention.RELATIVE_1000}
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
    summary = {
        "users": [u.username for u in users],
        "projects": [p.name for p in projects.values()],
        "traces": len(imported),
        "annotations": annotations,
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
                count += annotation_seed_demo(project=project, external_id=external_id, annotation=annotation)
    return count


def _external_id(folder: Path) -> str:
    return json.loads((folder / "trace.json").read_text())["external_id"]
