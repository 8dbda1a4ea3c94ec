"""Pages of quality control, thin over ``annotation.quality`` (services and selectors): a lead marks an accepted
answer as its trace's gold reference (the review page) or removes it (the review page, the trace list, the quality
page); the project's quality page (settings, gold traces, each member's qualification attempts, another attempt
allowed); an annotator's qualification page (where they stand and what to do) and the feedback after each
qualification answer (the reference beside their answer, part by part)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotation.access import access_annotation
from annotation.models import GoldTrace
from annotation.quality import selectors, services
from annotation.quality.page_selectors import SETTING_FIELDS, feedback_rows, feedback_screen, settings_rows
from studio.access import can
from studio.errors import Conflict, Invalid
from studio.inputs import form_number
from studio.permissions import Role
from traces.access import access_project


@require_POST
def review_gold(request, annotation_id: int):
    """Mark the answer as its trace's gold reference, or (``action=remove``) make its trace gold no more; back to the
    page the lead came from (the review page, the trace list, the quality page)."""
    annotation = access_annotation(request.user, annotation_id, "gold.manage")
    back = _back(request, reverse("review-detail", args=[annotation.pk]))
    trace = annotation.trace
    name = trace.external_id or str(trace.pk)
    if request.POST.get("action") == "remove":
        gold = GoldTrace.objects.filter(trace=trace).first()
        if gold is None:
            messages.info(request, f"Trace {name} is not gold.")
            return redirect(back)
        kept = services.gold_remove(gold=gold, user=request.user)["scores_kept"]
        messages.success(
            request,
            f"Trace {name} is gold no more; the {kept} score{'s' if kept != 1 else ''} it gave stay, marked as removed.",
        )
        return redirect(back)
    try:
        _, outcome = services.gold_mark_answer(annotation_id=annotation.pk, user=request.user)
    except Invalid as exc:  # the answer cannot be a reference: said on the page the lead is on
        messages.error(request, exc.detail)
        return redirect(back)
    said = {
        "marked": f"Answer {annotation.pk} is now the gold reference of trace {name}.",
        "unchanged": f"Answer {annotation.pk} is already the gold reference of trace {name}.",
        "reference_changed": f"Answer {annotation.pk} is now the gold reference of trace {name}; its gold answers "
        "were scored again against it.",
    }[outcome]
    messages.success(request, said)
    return redirect(back)


def _back(request, default: str) -> str:
    """Where a form posted from another page of the studio goes back to: its ``next`` when it is a path of ours."""
    target = request.POST.get("next", "")
    return target if target.startswith("/") and not target.startswith("//") else default


def project_quality(request, project_id: int):
    """The lead's quality page: the settings (one form), the gold traces, each member's qualification attempts."""
    project = access_project(request.user, project_id, "quality.manage")
    values, problem, problem_field, status = None, "", "", 200
    if request.method == "POST":
        try:
            fields = {name: form_number(request.POST, name, kind, None) for name, _, kind in SETTING_FIELDS}
            missing = [name for name, value in fields.items() if value is None]
            if missing:
                raise Invalid(gettext("%(name)s is required") % {"name": missing[0]}, field=missing[0])
            services.quality_settings_save(project=project, user=request.user, fields=fields)
        except Invalid as exc:  # the form stays, with what was typed and the reason beside its field
            problem, problem_field, status = exc.detail, exc.extra.get("field", ""), exc.status
            values = {name: request.POST.get(name, "") for name, _, _ in SETTING_FIELDS}
        else:
            messages.success(request, "Quality settings saved.")
            # Back to the page the form was on: this page, or the project's settings page (its quality section).
            return redirect(_back(request, reverse("project-quality", args=[project.pk])))
    return _quality_page(request, project, values=values, problem=problem, problem_field=problem_field, status=status)


def _quality_page(request, project, *, values=None, problem="", problem_field="", status=200, **extra):
    settings = selectors.quality_settings(project)
    setting_rows = settings_rows(project, values)
    return render(
        request,
        "annotation/quality.html",
        {
            "project": project,
            "settings": setting_rows,
            "problem": problem,
            "problem_field": problem_field,
            "gold": selectors.gold_list(project),
            "members": selectors.qualification_overview(project),
            "qualification_size": settings.qualification_size,
            "gold_changes": selectors.gold_changes(project),
            **extra,
        },
        status=status,
    )


@require_POST
def gold_file(request, project_id: int):
    """A lead marks many traces gold from a CSV or JSONL file (``external_id``, optionally ``annotator``); the quality
    page then says how many were marked and each refused row with its line and reason."""
    project = access_project(request.user, project_id, "gold.manage")
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise Invalid(gettext("Choose a CSV or JSONL file with an external_id column (and optionally annotator)."))
        rows = services.gold_file_read(upload.read(), name=upload.name)
        report = services.gold_mark_rows(project=project, user=request.user, rows=rows)
    except Invalid as exc:
        return _quality_page(request, project, file_problem=exc.detail, status=exc.status)
    return _quality_page(request, project, file_report=report, file_name=upload.name)


@require_POST
def qualification_allow(request, project_id: int):
    """A lead allows a member who failed the qualification another attempt."""
    project = access_project(request.user, project_id, "quality.manage")
    annotator = _member(project, request.POST.get("annotator", ""))
    try:
        attempt = services.qualification_allow_retry(project=project, annotator=annotator, actor=request.user)
    except (Invalid, Conflict) as exc:  # an attempt open, passed already, too few gold traces: said on the page
        messages.error(request, exc.detail)
    else:
        messages.success(
            request,
            f"{annotator.username} may try the qualification again (attempt {attempt.number}, "
            f"{attempt.size} gold traces).",
        )
    return redirect("project-quality", project_id=project.pk)


def _member(project, username: str):
    member = get_user_model().objects.filter(username=username, memberships__project=project).first()
    if member is None:
        raise Invalid(
            gettext("annotator: %(user)s is no member of %(project)s")
            % {"user": repr(username), "project": project.name},
            field="annotator",
        )
    return member


def qualification(request, project_id: int):
    """An annotator's qualification page: where they stand in the project (not required, to start, in progress,
    passed, failed, paused), each attempt with its answers' feedback, and what to do next."""
    project = access_project(request.user, project_id, "qualification.view")
    state = selectors.qualification_state(user=request.user, project=project)
    return render(
        request,
        "annotation/qualification.html",
        {
            "project": project,
            "state": state,
            "can_manage": can(request.user, "quality.manage", project),
            # Who to ask for another attempt or a resumed queue.
            "leads": list(
                get_user_model()
                .objects.filter(memberships__project=project, groups__name=Role.LEAD.value)
                .order_by("username")
                .values_list("username", flat=True)
            ),
        },
    )


def answer_feedback(request, annotation_id: int):
    """The feedback after a qualification answer: the reference beside the answer, part by part, what differed,
    the attempt's progress and the way on."""
    annotation = access_annotation(request.user, annotation_id, "gold.feedback")
    project = annotation.trace.project
    refusal = selectors.feedback_refusal(annotation, request.user)
    if refusal:  # not scored (yet): the page says why and where to go, answered as the API answers it (409)
        return render(
            request,
            "annotation/feedback.html",
            {
                "annotation": annotation,
                "trace": annotation.trace,
                "project": project,
                "refusal": refusal,
                "own": annotation.annotator_id == request.user.pk,
            },
            status=Conflict(refusal).status,
        )
    feedback = selectors.answer_feedback(annotation, reader=request.user)
    rows = feedback_rows(feedback["comparison"])
    return render(
        request,
        "annotation/feedback.html",
        {
            "annotation": annotation,
            "trace": annotation.trace,
            "project": project,
            "feedback": feedback,
            "rows": rows,
            "own": annotation.annotator_id == request.user.pk,  # the annotator's own answer, or a lead reading it
            "screen": feedback_screen(trace=annotation.trace, comparison=feedback["comparison"]),
            "wrong": sum(1 for row in rows if row["right"] is False),
            "attempt": feedback.get("attempt"),
            "state": selectors.qualification_state(user=request.user, project=project),
        },
    )
