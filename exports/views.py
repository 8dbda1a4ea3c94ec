"""Pages: exports of the user's projects (start one, follow it, download it)"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from exports import selectors, services
from exports.access import access_export_job
from exports.formats import format_choices
from exports.models import ExportJob
from studio.access import can
from studio.errors import Invalid
from studio.inputs import form_number, id_from_text
from traces.access import access_project


@require_http_methods(["GET", "POST"])
def export_home(request):
    projects, chosen = selectors.export_projects_for_user(request.user)
    error, status = "", 200
    if request.method == "POST":
        project = access_project(request.user, request.POST.get("project"), "export.create")
        options = {
            "include_valid_prefix": request.POST.get("include_valid_prefix") == "on",
            "include_error_free": request.POST.get("include_error_free") == "on",
            "unparsed_history": request.POST.get("unparsed_history") or "skip",
        }
        try:
            options["validation_fraction"] = form_number(request.POST, "validation_fraction", float, 0.1)
            options["split_seed"] = form_number(request.POST, "split_seed", int, 0)
            since_export = form_number(request.POST, "since_export", int, None)
            if since_export is not None:
                options["since_export"] = since_export
            if (slice_id := form_number(request.POST, "slice", int, None)) is not None:
                options["slice"] = slice_id
            if (bar := form_number(request.POST, "min_gold_accuracy", float, None)) is not None:
                options["min_gold_accuracy"] = bar
            job = services.export_job_create(
                project=project, user=request.user, fmt=request.POST.get("format", ""), options=options
            )
        except Invalid as exc:  # OptionsError, ExportError and the numbers above
            error, status = exc.detail, exc.status
        else:
            return redirect("export-job", job_id=job.pk)
    return render(
        request,
        "exports/export_home.html",
        {
            "projects": projects,
            # The project the form shows chosen: the one posted (a refused form keeps it), else the busiest.
            "chosen_project": id_from_text(request.POST.get("project", "") or request.GET.get("project", "")) or chosen,
            "chosen_slice": id_from_text(request.POST.get("slice", "") or request.GET.get("slice", "")),
            # A refused form keeps the bar typed.
            "chosen_min_gold_accuracy": request.POST.get("min_gold_accuracy", "")[:20] or None,
            "formats": format_choices(),
            "error": error,
            "jobs": selectors.export_jobs_for_user(request.user)[:50],
            "can_create": can(request.user, "export.create"),
        },
        status=status,
    )


def export_job(request, job_id: int):
    job = access_export_job(request.user, job_id, "export.view")
    return render(request, "exports/export_job.html", {"job": job, "project": job.project})


@require_POST
def export_job_cancel(request, job_id: int):
    job = access_export_job(request.user, job_id, "export.create")
    _, changed, said = services.export_job_cancel(job=job)
    (messages.success if changed else messages.info)(request, said)
    return redirect("export-job", job_id=job.pk)


def export_diff(request, job_id: int):
    """What changed between an export's bundle and an earlier one (``?against=<id>``, by default the project's
    previous finished export): annotations added, removed and moved to another version."""
    job = access_export_job(request.user, job_id, "export.view")
    against_id = request.GET.get("against")
    against: ExportJob | None
    if against_id:
        against = access_export_job(request.user, against_id, "export.view")
    else:
        against = selectors.export_previous(job)
    context: dict[str, Any] = {
        "job": job,
        "against": against,
        "project": job.project,
        "error": "",
        "rows": None,
        "diff": None,
    }
    status = 200
    if against is not None:
        try:
            diff = selectors.export_diff(against, job)
        except Invalid as exc:  # said on the page, which still names both exports
            context["error"], status = exc.detail, exc.status
        else:
            context["diff"], context["rows"] = diff, selectors.export_diff_rows(diff)
    return render(request, "exports/export_diff.html", context, status=status)
