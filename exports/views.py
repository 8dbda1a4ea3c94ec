"""Pages: exports of the user's projects (start one, follow it, download it)"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from exports import selectors, services
from exports.builders import OptionsError
from exports.models import ExportFormat
from studio.permissions import has_permission
from traces.selectors import projects_for_user


def _require(user, action: str, project=None) -> None:
    if not has_permission(user, action, project):
        raise PermissionDenied("Only engineers, leads and admins see exports.")


@login_required
@require_http_methods(["GET", "POST"])
def export_home(request):
    _require(request.user, "export.view")
    projects = projects_for_user(request.user).order_by("name")
    error = ""
    if request.method == "POST":
        project = get_object_or_404(projects, pk=request.POST.get("project"))
        _require(request.user, "export.create", project)
        options = {
            "include_valid_prefix": request.POST.get("include_valid_prefix") == "on",
            "include_error_free": request.POST.get("include_error_free") == "on",
            "unparsed_history": request.POST.get("unparsed_history") or "skip",
        }
        try:
            options["validation_fraction"] = float(request.POST.get("validation_fraction") or 0.1)
            options["split_seed"] = int(request.POST.get("split_seed") or 0)
            job = services.export_job_create(
                project=project, user=request.user, fmt=request.POST.get("format", ""), options=options
            )
        except (ValueError, OptionsError, services.ExportError) as exc:
            error = str(exc)
        else:
            return redirect("export-job", job_id=job.pk)
    return render(
        request,
        "exports/export_home.html",
        {
            "projects": projects,
            "formats": ExportFormat.choices,
            "error": error,
            "jobs": selectors.export_jobs_for_user(request.user)[:50],
            "can_create": has_permission(request.user, "export.create"),
        },
    )


@login_required
def export_job(request, job_id: int):
    _require(request.user, "export.view")
    job = get_object_or_404(selectors.export_jobs_for_user(request.user), pk=job_id)
    return render(request, "exports/export_job.html", {"job": job, "project": job.project})


@login_required
@require_POST
def export_job_cancel(request, job_id: int):
    job = get_object_or_404(selectors.export_jobs_for_user(request.user), pk=job_id)
    _require(request.user, "export.create", job.project)
    _, changed, said = services.export_job_cancel(job=job)
    (messages.success if changed else messages.info)(request, said)
    return redirect("export-job", job_id=job.pk)
