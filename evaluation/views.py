"""Pages: a project's checkpoint evaluations (the table across checkpoints, its CSV, starting one)."""

from __future__ import annotations

import csv
from pathlib import Path

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from evaluation import selectors, services
from evaluation.access import evaluation_jobs_for
from studio.access import can
from studio.errors import Invalid
from studio.inputs import form_number
from traces.access import access_project
from traces.selectors import rounds_of


def _checkpoint_choices() -> list[str]:
    """The configured checkpoints folder's sub-folders that hold a config.json (what the form offers)."""
    root = services.checkpoints_dir()
    if not root or not Path(root).is_dir():
        return []
    return sorted(p.name for p in Path(root).iterdir() if (p / "config.json").is_file())


@require_http_methods(["GET", "POST"])
def project_evaluations(request, project_id: int):
    project = access_project(request.user, project_id, "evaluation.view")
    error, status = "", 200
    if request.method == "POST":
        project = access_project(request.user, project_id, "evaluation.run")
        try:
            fraction = form_number(request.POST, "validation_fraction", float, None)
            seed = form_number(request.POST, "split_seed", int, None)
            services.evaluation_job_create(
                project=project,
                user=request.user,
                model_dir=request.POST.get("model_dir", ""),
                checkpoint=request.POST.get("checkpoint", ""),
                split=request.POST.get("split") or None,
                round_ref=request.POST.get("round") or None,
                validation_fraction=fraction,
                split_seed=seed,
            )
        except Invalid as exc:
            error, status = exc.detail, exc.status
        else:
            return redirect("project-evaluations", project_id=project.pk)
    jobs = selectors.evaluation_jobs_of(project, evaluation_jobs_for(request.user))
    context = {
        "project": project,
        "table": selectors.evaluation_table(jobs),
        "jobs": jobs,
        "error": error,
        "can_run": can(request.user, "evaluation.run", project),
        "checkpoints_dir": services.checkpoints_dir(),
        "checkpoints": _checkpoint_choices(),
        "rounds": rounds_of(project),
    }
    return render(request, "evaluation/project.html", context, status=status)


def project_evaluations_csv(request, project_id: int):
    project = access_project(request.user, project_id, "evaluation.view")
    jobs = selectors.evaluation_jobs_of(project, evaluation_jobs_for(request.user))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="evaluations-project-{project.pk}.csv"'
    writer = csv.writer(response)
    writer.writerows(selectors.evaluation_csv_rows(jobs))
    return response
