"""Pages: project list, trace list, trace view, import upload and job status. Thin over selectors/services."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from studio.permissions import has_permission
from traces import selectors, services
from traces.importers import IMPORTERS
from traces.models import Screenshot, Step, Trace


def _project_or_404(user, project_id):
    return get_object_or_404(selectors.projects_for_user(user), pk=project_id)


@login_required
def project_list(request):
    projects = selectors.projects_for_user(request.user).order_by("name")
    return render(request, "traces/project_list.html", {"projects": projects})


@login_required
def trace_list(request, project_id: int):
    project = _project_or_404(request.user, project_id)
    query = request.GET.get("q", "")[:200]
    page = Paginator(selectors.traces_for_user(request.user, project=project, search=query), 25).get_page(request.GET.get("page"))
    return render(request, "traces/trace_list.html", {
        "project": project, "page": page, "query": query,
        "can_import": has_permission(request.user, "trace.import", project),
        "can_prescore": has_permission(request.user, "prescore.run", project),
    })


@login_required
def trace_detail(request, trace_id: int):
    trace = get_object_or_404(selectors.traces_for_user(request.user), pk=trace_id)
    steps = list(selectors.trace_steps(trace))
    from annotation.review_selectors import trace_history

    history = trace_history(trace)
    if not has_permission(request.user, "annotation.review", trace.project):
        # Annotators see only their own work: agreement needs independent readings.
        history = [event for event in history if event.annotation.annotator_id == request.user.pk]
    return render(request, "traces/trace_detail.html", {
        "trace": trace, "project": trace.project, "steps": steps, "history": history,
    })


@login_required
@require_http_methods(["GET", "POST"])
def import_upload(request, project_id: int):
    project = _project_or_404(request.user, project_id)
    if not has_permission(request.user, "trace.import", project):
        raise PermissionDenied("Only leads and admins of this project import traces.")
    error = ""
    if request.method == "POST":
        upload = request.FILES.get("file")
        fmt = request.POST.get("format", "")
        if upload is None:
            error = "Choose a .zip or .jsonl file to upload."
        elif not upload.name.lower().endswith((".zip", ".jsonl")):
            error = f"{upload.name}: upload a .zip archive or a .jsonl file."
        elif fmt and fmt not in IMPORTERS:
            error = f"Unknown format {fmt!r}."
        else:
            try:
                stored = services.import_upload_store(uploaded_file=upload)
            except ValueError as exc:
                error = str(exc)
            else:
                job = services.import_job_create(project=project, user=request.user, upload_name=stored,
                                                 original_name=upload.name, fmt=fmt)
                return redirect("import-job", job_id=job.pk)
    return render(request, "traces/import_upload.html", {
        "project": project, "formats": sorted(IMPORTERS), "error": error,
    }, status=400 if error else 200)


@login_required
def import_job(request, job_id: int):
    job = get_object_or_404(selectors.import_jobs_for_user(request.user), pk=job_id)
    return render(request, "traces/import_job.html", {"job": job, "project": job.project})


@login_required
def screenshot_file(request, sha256: str, kind: str):
    """Serve a screenshot or its thumbnail to members of a project that uses it."""
    if kind not in ("image", "thumbnail"):
        raise Http404("unknown screenshot kind")
    shot = get_object_or_404(Screenshot, sha256=sha256)
    projects = selectors.projects_for_user(request.user)
    used = Step.objects.filter(screenshot=shot, trace__project__in=projects).exists() or Trace.objects.filter(
        Q(final_screenshot=shot), project__in=projects
    ).exists()
    if not used:
        raise Http404("no such screenshot in your projects")
    if kind == "thumbnail":
        shot = services.screenshot_ensure_thumbnail(screenshot=shot)
        handle, content_type = shot.thumbnail.open("rb"), "image/webp"
    else:
        handle, content_type = shot.image.open("rb"), f"image/{shot.format.lower()}"
    response = FileResponse(handle, content_type=content_type)
    # Content-addressed: the bytes behind this URL never change.
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    response["ETag"] = f'"{shot.sha256}"'
    return response
