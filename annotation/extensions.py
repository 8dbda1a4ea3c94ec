"""What annotation adds to the trace pages, the project settings page and a project's records (traces.extensions),
registered by ``AnnotationConfig.ready()``: the trace page's history and, for a lead, its gold reference; the trace
list's annotations by status (and, for a lead, which traces are gold); the settings page's quality control section
(for a lead); the annotations a project's deletion removes, and the error categories annotations still name."""

from __future__ import annotations

from django.db.models import Count
from django.utils.translation import gettext_lazy

from annotation.models import Annotation, AnnotationKind, AnnotationStatus, GoldTrace
from annotation.quality.page_selectors import settings_rows
from annotation.quality.selectors import reference_choice, reference_refusal
from annotation.review.selectors import history_rows, trace_history_visible
from annotation.selectors import annotation_status_counts, error_categories_in_use
from studio.access import can
from traces.extensions import (
    CategoryGuard,
    ProjectRecord,
    ProjectSettingsSection,
    TraceListColumn,
    TracePanel,
    category_guard_register,
    project_record_register,
    project_settings_section_register,
    trace_list_column_register,
    trace_panel_register,
)


def _history(user, trace) -> dict:
    return {
        "history": history_rows(trace_history_visible(user, trace)),
        # A lead reaches each annotation's review from the trace's history.
        "can_review": can(user, "annotation.review", trace.project),
    }


def _statuses(user, traces) -> dict:
    """Per trace: its annotations by status and, for a lead (``gold.manage``), whether it is gold (its reference) or
    which accepted answer would be its reference. Nobody else sees which traces are gold: an annotator meets them
    in the queue like any other."""
    ids = [trace.pk for trace in traces]
    counts = annotation_status_counts(ids, viewer=user)
    gold: dict[int, GoldTrace] = {}
    accepted: dict[int, int] = {}
    leads = bool(traces) and can(user, "gold.manage", traces[0].project)
    scored: dict[int, int] = {}
    if leads:
        gold = {g.trace_id: g for g in GoldTrace.objects.filter(trace_id__in=ids)}
        # The gold and qualification answers handed in on each gold trace: no work, so not in the counts; a lead
        # sees them beside the gold mark.
        scored = dict(
            Annotation.objects.filter(trace_id__in=list(gold))
            .exclude(kind=AnnotationKind.PRODUCTION)
            .exclude(status=AnnotationStatus.DRAFT)
            .values_list("trace_id")
            .annotate(n=Count("id"))
        )
        with_accepted = set(
            Annotation.objects.filter(
                trace_id__in=[pk for pk in ids if pk not in gold],
                status=AnnotationStatus.ACCEPTED,
                kind=AnnotationKind.PRODUCTION,
            ).values_list("trace_id", flat=True)
        )
        for trace in traces:
            if trace.pk in with_accepted:
                # The answer a file's row would make the reference (the one an export takes), if it may be one.
                reference = reference_choice(trace=trace)
                if not reference_refusal(reference):
                    accepted[trace.pk] = reference.pk
    return {
        pk: {
            "counts": counts.get(pk, []),
            "leads": leads,
            "gold": gold.get(pk),
            "gold_answers": scored.get(pk, 0),
            "accepted": accepted.get(pk),
        }
        for pk in ids
    }


def _categories_named(project, categories: list[str]) -> str:
    in_use = error_categories_in_use(project=project, categories=categories)
    return "Annotations use these categories; keep them: " + ", ".join(in_use) + "." if in_use else ""


def _gold(user, trace) -> dict:
    """The trace page's gold panel, for a lead only (nobody else learns which traces are gold): the reference, with
    "Unmark", or the answer that would become it."""
    if not can(user, "gold.manage", trace.project):
        return {"gold_panel": None}
    gold = GoldTrace.objects.filter(trace=trace).select_related("reference__annotator", "marked_by").first()
    offer = None
    if (
        gold is None
        and trace.annotations.filter(status=AnnotationStatus.ACCEPTED, kind=AnnotationKind.PRODUCTION).exists()
    ):
        reference = reference_choice(trace=trace)
        offer = None if reference_refusal(reference) else reference
    return {"gold_panel": {"gold": gold, "offer": offer}}


def _quality_settings(user, project) -> dict | None:
    """The settings page's quality control section: the quality settings' form, for those who may change them."""
    if not can(user, "quality.manage", project):
        return None
    return {"settings": settings_rows(project), "problem": "", "problem_field": ""}


def register() -> None:
    trace_panel_register(TracePanel(name="annotation-history", template="review/_history.html", context=_history))
    # Before the history: the trace's gold reference, for a lead.
    trace_panel_register(TracePanel(name="gold", template="annotation/_trace_gold.html", context=_gold, order=50))
    trace_list_column_register(
        TraceListColumn(
            name="annotation-statuses",
            heading=gettext_lazy("Annotations"),
            template="annotation/_trace_list_statuses.html",
            values=_statuses,
        )
    )
    project_record_register(
        ProjectRecord(
            name="annotations",
            model=Annotation,
            count=lambda project: Annotation.objects.filter(project=project).count(),
        )
    )
    category_guard_register(CategoryGuard(name="annotations", refusal=_categories_named))
    project_settings_section_register(
        ProjectSettingsSection(name="quality", template="annotation/_settings_quality.html", context=_quality_settings)
    )
