"""Pages: project list, trace list, trace view, import upload and job status. Thin over selectors/services."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.db.models import Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from prescoring.selectors import latest_prescore_job
from prescoring.services import configured_model_dir
from studio.access import NotInScope, can
from studio.errors import Invalid, StudioError
from studio.jobs import job_cancel
from studio.middleware import refused_page
from studio.storage import SHORT_LIVED, stored_file_response
from studio.words import counted
from traces import extensions, selectors, services
from traces.access import access_import_job, access_project, access_trace, projects_for
from traces.forms import ProjectForm, TraceInstructionForm
from traces.importers import IMPORTERS, importers_in_detect_order
from traces.instructions import instructions_read
from traces.models import Project, Screenshot, Step, Trace


def project_list(request):
    projects = projects_for(request.user).order_by("name")
    return render(request, "traces/project_list.html", {"projects": projects})


def _project_form_saved(request, form: ProjectForm, project: Project | None):
    """Save a valid form through the service; its refusals land on the form's fields. The project, or None."""
    if not form.is_valid():
        return None
    try:
        return services.project_save(
            actor=request.user, project=project, fields=form.settings(), members=form.cleaned_data["members"]
        )
    except services.ProjectRefused as exc:
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return None


@require_http_methods(["GET", "POST"])
def project_create(request):
    """A lead or admin sets up a new project (the permission table's project.manage, checked by the middleware)."""
    form = ProjectForm(request.POST or None, initial={"members": [request.user.pk]})
    if request.method == "POST":
        project = _project_form_saved(request, form, None)
        if project is not None:
            messages.success(request, f"Project {project.name} created. Import its traces next.")
            return redirect("trace-list", project_id=project.pk)
    return render(
        request, "traces/project_form.html", {"form": form, "project": None}, status=400 if form.errors else 200
    )


@require_http_methods(["GET", "POST"])
def project_settings(request, project_id: int):
    project = access_project(request.user, project_id, "project.manage")
    form = ProjectForm(request.POST or None, instance=project)
    trace_count = project.traces.count()
    if trace_count:  # project_save refuses the change; the page does not offer it
        form.fields["coordinate_convention"].disabled = True
    if request.method == "POST":
        saved = _project_form_saved(request, form, project)
        if saved is not None:
            messages.success(request, f"Settings of {saved.name} saved.")
            return redirect("project-settings", project_id=saved.pk)
        project.refresh_from_db()  # the form wrote its values onto the instance; the page names the stored project
    return render(
        request,
        "traces/project_form.html",
        {
            "form": form,
            "project": project,
            "trace_count": trace_count,
            "traces_in_words": counted(trace_count, Trace),
            # What other apps add to the page (traces.extensions), each with its own form: quality control's.
            "sections": extensions.project_settings_sections(request.user, project),
        },
        status=400 if form.errors else 200,
    )


def trace_list(request, project_id: int):
    project = access_project(request.user, project_id, "trace.view")
    query = request.GET.get("q", "")[:200]
    state = request.GET.get("state", "")
    state = state if state in selectors.TRACE_STATES else ""
    rounds = list(selectors.rounds_of(project).order_by("-ran_at", "-id"))
    chosen = next((r for r in rounds if str(r.pk) == request.GET.get("round", "")), None)
    traces = selectors.traces_for_user(request.user, project=project, search=query, state=state, round=chosen)
    page = Paginator(traces, 25).get_page(request.GET.get("page"))
    columns = extensions.trace_list_columns()  # what other apps show of each trace (annotation: its statuses)
    cells = extensions.trace_list_cells(request.user, columns, page)
    for trace in page:
        trace.extension_cells = cells[trace.pk]  # type: ignore[attr-defined]  # the row's cells, for the template
    return render(
        request,
        "traces/trace_list.html",
        {
            "project": project,
            "page": page,
            "columns": columns,
            "query": query,
            "state": state,
            "rounds": rounds,
            "chosen_round": chosen,
            "can_import": can(request.user, "trace.import", project),
            "can_prescore": can(request.user, "prescore.run", project),
            "prescore_model_dir": configured_model_dir(),
            "last_prescore": latest_prescore_job(project) if can(request.user, "prescore.run", project) else None,
        },
    )


def trace_detail(request, trace_id: int):
    trace = access_trace(request.user, trace_id, "trace.view")
    return render(request, "traces/trace_detail.html", _trace_page(request.user, trace, query=request.GET))


# The trace page lists this many steps at a time: a trace of thousands of steps is not one page of megabytes.
TRACE_PAGE_STEPS = 100


def _steps_page(trace: Trace, query) -> Page:
    """The page of the trace's steps that ``query`` asks for: the one holding ``?step=N``, else ``?page=N``."""
    paginator = Paginator(selectors.trace_steps(trace), TRACE_PAGE_STEPS)
    step = query.get("step", "") if query else ""
    if step.isdigit() and 1 <= len(step) <= 9:
        return paginator.get_page((int(step) - 1) // TRACE_PAGE_STEPS + 1)
    return paginator.get_page(query.get("page") if query else None)


def _trace_page(user, trace: Trace, *, instruction_form: TraceInstructionForm | None = None, query=None) -> dict:
    can_edit = can(user, "trace.edit", trace)
    if can_edit and instruction_form is None:
        instruction_form = TraceInstructionForm(initial={"instruction": trace.instruction})
    return {
        "trace": trace,
        "project": trace.project,
        "steps": _steps_page(trace, query),
        "panels": extensions.trace_panels(user, trace),  # what other apps show below the steps
        "awaits_instruction": selectors.awaits_instruction(trace),
        "instruction_form": instruction_form if can_edit else None,
        "can_delete": can(user, "trace.delete", trace),
    }


@require_POST
def trace_delete(request, trace_id: int):
    trace = access_trace(request.user, trace_id, "trace.delete")
    try:
        services.trace_delete(trace=trace, user=request.user, reason=request.POST.get("reason", ""))
    except services.TraceDeleteRefused as exc:
        return refused_page(request, exc, "traces/trace_detail.html", _trace_page(request.user, trace))
    messages.success(request, f"Trace {trace.external_id} deleted (recorded with your reason).")
    return redirect("trace-list", project_id=trace.project_id)


@require_http_methods(["GET", "POST"])
def instructions_upload(request, project_id: int):
    """A lead fills (or replaces) many traces' instructions from one CSV or JSONL file; the page then shows what was
    set, refused and left (``services.trace_instructions_fill``)."""
    project = access_project(request.user, project_id, "trace.edit")
    report, problem, status = None, "", 200
    if request.method == "POST":
        upload = request.FILES.get("file")
        try:
            if upload is None:
                raise Invalid(gettext("Choose a CSV or JSONL file of external_id,instruction rows."))
            rows = instructions_read(upload.read(), name=upload.name)
            report = services.trace_instructions_fill(
                project=project, actor=request.user, rows=rows, replace=request.POST.get("replace") == "on"
            )
        except Invalid as exc:
            problem, status = exc.detail, exc.status
    awaiting = selectors.traces_awaiting_instruction(project.traces.all()).count()
    return render(
        request,
        "traces/instructions_upload.html",
        {
            "project": project,
            "report": report,
            "problem": problem,
            "awaiting_words": counted(awaiting, Trace),
            "awaiting": awaiting,
            "replace": request.POST.get("replace") == "on",
        },
        status=status,
    )


@require_POST
def trace_instruction(request, trace_id: int):
    """A lead writes the instruction an import could not find (or mends it); the trace then enters the queue."""
    trace = access_trace(request.user, trace_id, "trace.edit")
    form = TraceInstructionForm(request.POST)
    status = 400  # an invalid form; a refusal by the service answers with its kind's status
    if form.is_valid():
        try:
            services.trace_instruction_set(
                trace_id=trace.pk, actor=request.user, instruction=form.cleaned_data["instruction"]
            )
        except services.TraceEditRefused as exc:
            form.add_error("instruction", exc.detail)
            status = exc.status
        else:
            messages.success(
                request,
                "Instruction saved: the trace is open to annotators."
                if selectors.awaits_instruction(trace)
                else "Instruction saved.",
            )
            return redirect("trace-detail", trace_id=trace.pk)
    return render(
        request, "traces/trace_detail.html", _trace_page(request.user, trace, instruction_form=form), status=status
    )


@require_http_methods(["GET", "POST"])
def import_upload(request, project_id: int):
    project = access_project(request.user, project_id, "trace.import")
    error, status = "", 200
    if request.method == "POST":
        upload = request.FILES.get("file")
        fmt = request.POST.get("format", "")
        try:
            if upload is None:
                raise Invalid(gettext("Choose a .zip or .jsonl file to upload."))
            if not upload.name.lower().endswith((".zip", ".jsonl")):
                raise Invalid(gettext("%(file)s: upload a .zip archive or a .jsonl file.") % {"file": upload.name})
            if fmt and fmt not in IMPORTERS:
                raise Invalid(gettext("Unknown format %(format)s.") % {"format": repr(fmt)})
            into = selectors.round_resolve(project, request.POST.get("round", ""))  # an unknown round: Invalid
            stored = services.import_upload_store(uploaded_file=upload)  # over the limit: TooLarge, 413
        except StudioError as exc:
            error, status = exc.detail, exc.status
        else:
            job = services.import_job_create(
                project=project,
                user=request.user,
                upload_name=stored,
                original_name=upload.name,
                fmt=fmt,
                round=into,
            )
            return redirect("import-job", job_id=job.pk)
    return render(
        request,
        "traces/import_upload.html",
        {
            "project": project,
            "formats": [(i.format_name, i.label) for i in importers_in_detect_order()],
            "rounds": list(selectors.rounds_of(project).order_by("-ran_at", "-id")),
            "chosen_round": request.POST.get("round", ""),
            "error": error,
        },
        status=status,
    )


def import_job(request, job_id: int):
    job = access_import_job(request.user, job_id, "job.view")
    return render(
        request,
        "traces/import_job.html",
        {
            "job": job,
            "report": selectors.import_job_report(job),
            "project": job.project,
            "can_cancel": can(request.user, "trace.import", job),
        },
    )


@require_POST
def import_job_cancel(request, job_id: int):
    job = access_import_job(request.user, job_id, "trace.import")
    changed, said = job_cancel(job)
    (messages.success if changed else messages.info)(request, said)
    return redirect("import-job", job_id=job.pk)


def screenshot_file(request, sha256: str, kind: str):
    """Serve a screenshot or its thumbnail to members of a project that uses it."""
    if kind not in ("image", "thumbnail"):
        raise Http404("unknown screenshot kind")
    shot = Screenshot.objects.filter(sha256=sha256).first()
    projects = projects_for(request.user, "trace.view")
    used = shot is not None and (
        Step.objects.filter(screenshot=shot, trace__project__in=projects).exists()
        or Trace.objects.filter(Q(final_screenshot=shot), project__in=projects).exists()
    )
    image = shot.image.name if shot is not None else None
    if shot is None or not used or not image:
        raise NotInScope("screenshot")  # none, or none in the user's projects: one answer
    if kind == "thumbnail":
        thumbnail = shot.thumbnail.name
        if thumbnail:
            return stored_file_response(thumbnail, content_type="image/webp", etag=f"{shot.sha256}-thumb")
        # Stored before imports made thumbnails: a worker makes it; meanwhile the page gets the image itself, sent
        # as stored (decoding it here is what took the web process to 1.6 GB).
        services.screenshot_thumbnail_request(screenshot=shot)
        return stored_file_response(
            image, content_type=f"image/{shot.format.lower()}", etag=None, cache_control=SHORT_LIVED
        )
    return stored_file_response(image, content_type=f"image/{shot.format.lower()}", etag=shot.sha256)


@require_POST
def round_create(request, project_id: int):
    """A lead starts a round from the round dashboard's form; a refusal re-shows the page with what was typed."""
    from studio.errors import StudioError

    project = access_project(request.user, project_id, "round.create")
    typed = {name: request.POST.get(name, "") for name in ("name", "checkpoint", "weights_hash")}
    try:
        made = services.round_create(project=project, actor=request.user, **typed)
    except StudioError as exc:
        return render(
            request,
            "dashboard/rounds.html",
            {"project": project, "can_create": True, "typed": typed, "round_error": exc.detail},
            status=exc.status,
        )
    messages.success(request, f"Round {made.name} ({made.checkpoint}) created: import its traces into it.")
    return redirect("round-dashboard", project_id=project.pk)
