"""Pages for leads: the review queue (live), one review, the quality dashboard. Thin over selectors/services."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from annotation import dashboards
from annotation.access import access_annotation
from annotation.agreement import agreement_report
from annotation.models import AnnotationStatus, GoldTrace, Verdict
from annotation.quality.selectors import gold_state
from annotation.review import selectors as review_selectors
from annotation.review import services as review
from studio.access import AccessRefused, can
from studio.errors import Conflict, Invalid, StudioError
from studio.inputs import id_from_text
from studio.middleware import refused_page
from traces.access import access_project, projects_for
from traces.extensions import review_panels


def review_queue(request):
    projects = review_selectors.reviewable_projects(request.user)
    sections = []
    for project in projects:
        report = agreement_report(project)
        sections.append(
            {
                "project": project,
                "submitted": list(review_selectors.review_queue(request.user, project=project)[:200]),
                "disagreements": report.disagreements[:50],
            }
        )
    # Projects with work waiting come first (by name within each group): a lead of many projects read past every
    # empty "Nothing waiting for review." table to find the one with work.
    sections.sort(key=lambda section: not (section["submitted"] or section["disagreements"]))
    return render(request, "review/queue.html", {"sections": sections})


def review_detail(request, annotation_id: int):
    annotation = access_annotation(request.user, annotation_id, "annotation.review")
    return render(request, "review/detail.html", _detail_context(request.user, annotation))


def _detail_context(user, annotation) -> dict:
    context = review_selectors.review_context(annotation)
    context.update(
        {
            "next_review": review_selectors.review_next(user, after=annotation),
            "verdicts": [v for v in Verdict if v.value],
            "can_decide": annotation.status == AnnotationStatus.SUBMITTED,
            "can_adjudicate": annotation.status in review.ADJUDICABLE and bool(context["siblings"]),
            # The trace's gold reference, if any, whether this answer may become it (and why not), and whether this
            # lead may mark or unmark it here.
            "gold": GoldTrace.objects.filter(trace_id=annotation.trace_id)
            .select_related("reference__annotator", "marked_by")
            .first(),
            "gold_state": gold_state(annotation),
            "can_mark_gold": can(user, "gold.manage", annotation.trace.project),
            # What other apps show of the trace here (traces.extensions: a replay's branch beside the trace).
            "panels": review_panels(user, annotation.trace),
        }
    )
    return context


EDIT_FORM_FIELDS = (*review.REVIEW_EDITABLE_FIELDS, *review.REVIEW_BOX_FIELDS)


@require_POST
def review_decide(request, annotation_id: int):
    annotation = access_annotation(request.user, annotation_id, "annotation.review")
    decision = request.POST.get("decision", "")
    comment = request.POST.get("comment", "")
    version = request.POST.get("version")
    expected = id_from_text(version or "")
    edits = {f: request.POST[f] for f in EDIT_FORM_FIELDS if f in request.POST}
    kwargs = {"annotation_id": annotation.pk, "actor": request.user, "comment": comment}
    try:
        if decision == "accept":
            review.review_accept(**kwargs, expected_version=expected)
        elif decision == "reject":
            review.review_reject(**kwargs, expected_version=expected)
        elif decision == "edit_accept":
            review.review_edit_and_accept(**kwargs, edits=edits, expected_version=expected)
        elif decision == "adjudicate":
            review.review_adjudicate(**kwargs, edits=edits)
        else:
            raise review.ReviewError(gettext("unknown decision %(decision)s") % {"decision": repr(decision)})
    except (Invalid, Conflict) as exc:
        # A refused decision stays on the annotation with the reason, answered with its kind's status (a stale
        # version: 409, as the review API and the workspace answer it); the lead's typed answer is kept.
        annotation.refresh_from_db()
        if decision in ("edit_accept", "adjudicate"):
            return _detail_with_refused_edit(request, annotation, edits, comment, exc)
        return refused_page(request, exc, "review/detail.html", _detail_context(request.user, annotation))
    # What happened, said as an outcome ("accept done", "edit and accept done" read as commands, not results).
    outcome = {
        "accept": "accepted",
        "reject": f"sent back to {annotation.annotator.username} with your comment",
        "edit_accept": "edited and accepted",
        "adjudicate": "adjudicated",
    }[decision]
    messages.success(request, f"Annotation {annotation.pk} of trace {annotation.trace.external_id}: {outcome}.")
    # Decide and go on: the next undecided annotation, or the queue when there is none.
    following = review_selectors.review_next(request.user, after=annotation)
    if following is not None:
        return redirect("review-detail", annotation_id=following.pk)
    return redirect("review-queue")


def _detail_with_refused_edit(request, annotation, edits: dict, comment: str, problem: StudioError):
    context = _detail_context(request.user, annotation)
    values = {**context["form_values"], **edits}
    context["form_values"] = values
    context["edit_data"] = review_selectors.review_edit_data(
        context["annotation"],
        error_shot=context.get("error_shot"),
        reflection_shot=context["reflection_shot"],
        values=values,
        given=review.actions_given(edits),
    )
    context["edit_error"] = problem.detail
    context["comment"] = comment
    return render(request, "review/detail.html", context, status=problem.status)


def dashboard_index(request):
    projects = list(projects_for(request.user, "dashboard.view").order_by("name"))
    if not projects:
        raise AccessRefused("dashboard.view")
    if len(projects) == 1:
        return redirect("project-dashboard", project_id=projects[0].pk)
    return render(request, "dashboard/index.html", {"projects": projects})


def project_dashboard(request, project_id: int):
    project = access_project(request.user, project_id, "dashboard.view")
    date_from, date_to, range_error = request.GET.get("from", ""), request.GET.get("to", ""), ""
    try:
        dashboards.DateRange.from_query(date_from, date_to)
    except Invalid as exc:  # said on the page, beside the dates; the figures show the default range
        range_error = f"{exc}. Showing the last {dashboards.DEFAULT_RANGE_DAYS} days instead."
        date_from = date_to = ""
    return render(
        request,
        "dashboard/project.html",
        {
            "project": project,
            "date_from": date_from,
            "date_to": date_to,
            "range_error": range_error,
        },
        status=400 if range_error else 200,
    )


def round_dashboard(request, project_id: int):
    """The project's rounds side by side; the figures come from the API (annotation.dashboards.round_dashboard)."""
    project = access_project(request.user, project_id, "dashboard.view")
    return render(
        request, "dashboard/rounds.html", {"project": project, "can_create": can(request.user, "round.create", project)}
    )
