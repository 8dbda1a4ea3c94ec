"""Reads for the annotator's queue, the workspace page and the leads' lease list, scoped to the user."""

from __future__ import annotations

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.access import annotations_for
from annotation.models import Annotation, AnnotationStatus, Lease, Verdict
from annotation.overlap import project_max_quota, trace_annotation_quota
from annotation.workflow import EDITABLE_BY_ANNOTATOR
from studio.access import can
from studio.words import in_words
from traces import grammar, prompting
from traces.access import projects_for
from traces.models import Trace
from traces.selectors import (
    step_elements_json,
    trace_steps,
    traces_awaiting_instruction,
    traces_ready_to_annotate,
)


def open_leases(*, project=None, user=None) -> QuerySet[Lease]:
    leases = Lease.objects.filter(released_at__isnull=True, expires_at__gt=timezone.now()).select_related(
        "trace__project", "user"
    )
    if project is not None:
        leases = leases.filter(trace__project=project)
    if user is not None:
        leases = leases.filter(user=user)
    return leases.order_by("expires_at")


def traces_awaiting_more_answers(*, project, limit: int = 50) -> tuple[list[dict], int]:
    """Shared traces (``annotation.overlap``) that some annotators answered but fewer than the project asks: each with
    who answered and how many answers it needs; the first ``limit`` by trace id, and how many there are in all.

    An answer is a finished one (submitted, accepted or rejected: a rejected one comes back to its annotator), as
    the hand-out counts it."""
    if project_max_quota(project) < 2:
        return [], 0
    answered: dict[int, list[str]] = {}
    rows = (
        Annotation.objects.filter(project=project)
        .exclude(status=AnnotationStatus.DRAFT)
        .order_by("trace_id", "annotator__username")
        .values_list("trace_id", "annotator__username")
    )
    for trace_id, username in rows:
        answered.setdefault(trace_id, []).append(username)
    waiting = []
    for trace_id, names in answered.items():
        need = trace_annotation_quota(trace_id=trace_id, project=project)
        if len(names) < need:
            waiting.append((trace_id, names, need))
    shown = {t.pk: t for t in Trace.objects.filter(pk__in=[w[0] for w in waiting[:limit]])}
    return [
        {
            "trace": shown[trace_id],
            "answered_by": names,
            "needed": need,
            "words": f"{len(names)} of {need} answers",
        }
        for trace_id, names, need in waiting[:limit]
    ], len(waiting)


def annotation_status_counts(trace_ids) -> dict[int, list[tuple[str, str, int]]]:
    """Per trace: (status, label, how many annotations are in it), in the workflow's order; one grouped read."""
    counts: dict[int, dict[str, int]] = {}
    rows = Annotation.objects.filter(trace_id__in=list(trace_ids)).values("trace_id", "status").annotate(n=Count("id"))
    for row in rows:
        counts.setdefault(row["trace_id"], {})[row["status"]] = row["n"]
    return {
        trace_id: [
            (status, label, by_status[status]) for status, label in AnnotationStatus.choices if status in by_status
        ]
        for trace_id, by_status in counts.items()
    }


def _open_trace_count(*, project, user, now) -> int:
    """Traces the hand-out could give ``user``: ready, not theirs yet, and held (leased or answered) by fewer other
    annotators than the trace's quota (``annotation.overlap``: a shared trace stays open for its next annotator)."""
    held = Subquery(
        Lease.objects.filter(trace=OuterRef("pk"), released_at__isnull=True, expires_at__gt=now)
        .exclude(user=user)
        .values("trace")
        .annotate(n=Count("user", distinct=True))
        .values("n")[:1]
    )
    finished = Subquery(
        Annotation.objects.filter(trace=OuterRef("pk"))
        .exclude(status=AnnotationStatus.DRAFT)
        .values("trace")
        .annotate(n=Count("annotator", distinct=True))
        .values("n")[:1]
    )
    candidates = (
        traces_ready_to_annotate(project.traces.all())
        .exclude(annotations__annotator=user)
        .annotate(held_by=Coalesce(held, 0) + Coalesce(finished, 0))
    )
    free = candidates.filter(held_by=0).count()
    max_quota = project_max_quota(project)
    if max_quota < 2:
        return free
    partly = candidates.filter(held_by__gt=0, held_by__lt=max_quota).values_list("pk", "held_by")
    return free + sum(1 for pk, n in partly if n < trace_annotation_quota(trace_id=pk, project=project))


def queue_for_user(user) -> list[dict]:
    """Per project the user annotates in: their work in progress, work sent back, and how much is open."""
    rows = []
    now = timezone.now()
    for project in projects_for(user, "annotation.work").order_by("name"):
        may_manage_leases = can(user, "lease.manage", project)
        awaiting_more, awaiting_more_count = (
            traces_awaiting_more_answers(project=project) if may_manage_leases else ([], 0)
        )
        mine = annotations_for(user, "annotation.work").filter(project=project)
        open_count = _open_trace_count(project=project, user=user, now=now)
        rows.append(
            {
                "project": project,
                "drafts": list(mine.filter(status=AnnotationStatus.DRAFT).order_by("-updated_at")[:50]),
                "returned": list(mine.filter(status=AnnotationStatus.REJECTED).order_by("-updated_at")[:50]),
                "submitted_count": mine.filter(
                    status__in=[AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED]
                ).count(),
                "open_count": open_count,
                "open_words": in_words(open_count, "open trace", "open traces"),
                "awaiting_instruction": (
                    traces_awaiting_instruction(project.traces.all()).count() if can(user, "trace.edit", project) else 0
                ),
                "can_manage_leases": may_manage_leases,
                "leases": list(open_leases(project=project)) if may_manage_leases else [],
                # Leads see which shared traces still wait for another annotator's answer (double annotation).
                "awaiting_more": awaiting_more,
                "awaiting_more_count": awaiting_more_count,
                # The hand-out may order by pre-scoring suspicion only where the user sees pre-scoring (the one
                # rule, prescore.view: not for annotators of a blind project); the page offers it from this flag.
                "suspicion_order": can(user, "prescore.view", project),
            }
        )
    return rows


def _gap(step) -> dict:
    """How many steps the source dropped right before ``step``, as a number and in words (the page says it)."""
    dropped = int((step.context or {}).get("missing_before") or 0)
    return {"missing_before": dropped, "missing_before_words": in_words(dropped, "step", "steps")}


def model_extent(project, width: int, height: int) -> list[int]:
    """The model coordinate range that spans the screenshot (the page converts with it, both ways)."""
    if project.coordinate_convention == grammar.RELATIVE_1000:
        return [1000, 1000]
    if project.coordinate_convention == grammar.SMART_RESIZE_PIXELS:
        h, w = grammar.smart_resize(height, width, max_pixels=project.max_pixels)
        return [w, h]
    return [width, height]


def _display_actions(step, trace) -> list[dict]:
    """The recorded actions in the project's convention, the one the page draws and edits in (converted from the
    trace's, server-side: the page never converts)."""
    try:
        return [
            a.to_json()
            for a in prompting.step_actions(step, project=trace.project, convention=trace.coordinate_convention)
        ]
    except (prompting.PromptError, ValueError, TypeError):
        return []


def observations(trace, steps) -> dict:
    """The screens o_i of ``steps`` (each step's screenshot) and o_{n+1}, the trace's final screenshot when it was kept:
    the one rule of which screen follows a step (a post-reflection is written on o_{τ+1})."""
    screens = {step.index: step.screenshot for step in steps}
    screens[trace.step_count + 1] = trace.final_screenshot
    return screens


def server_no_reflection_reason(tau: int, after) -> str:
    """The reason the server records itself on submit for a first error at step ``tau`` whose o_{τ+1} (``after``: that
    screen, or None) was not kept — no post-reflection can be given, so the annotator is not asked why; "" when o_{τ+1}
    was kept (then a post-reflection, or the annotator's own reason, is asked for)."""
    if after is not None:
        return ""
    return (
        f"The trace has no screenshot after step {tau} (o_{tau + 1} was not kept), "
        "so no post-reflection step can be given."
    )


def _shot(project, screenshot) -> dict | None:
    if screenshot is None:
        return None
    return {
        "url": screenshot.image_url,
        "thumb": screenshot.thumbnail_url,
        "width": screenshot.width,
        "height": screenshot.height,
        "extent": model_extent(project, screenshot.width, screenshot.height),
    }


def _human_edit(step) -> dict | None:
    if not step.human_edited_response:
        return None
    try:
        parsed = grammar.parse_response(step.human_edited_response)
    except grammar.ActionSyntaxError as exc:
        return {"raw": step.human_edited_response, "thought": "", "action": None, "error": str(exc)}
    return {
        "raw": step.human_edited_response,
        "thought": parsed.thought or "",
        "action": parsed.actions[0].to_json() if parsed.actions else None,
        "error": "",
    }


def workspace_payload(*, annotation: Annotation, lease: Lease | None) -> dict:
    """Everything the workspace page needs in one document (rendered as JSON data, never as HTML)."""
    trace = annotation.trace
    project = trace.project
    rows = list(trace_steps(trace))
    screens = observations(trace, rows)
    steps = [
        {
            "index": step.index,
            "thought": step.thought,
            "reflection": step.reflection,
            "action_text": step.action_text,
            "actions": _display_actions(step, trace),
            "parse_error": step.parse_error,
            "off_screen": step.off_screen_point,
            "shot": _shot(project, step.screenshot),
            "human_edit": _human_edit(step),
            **_gap(step),
            # The source's element boxes on o_i, in the project's convention: the editor's snap targets.
            "elements": step_elements_json(step, convention=trace.coordinate_convention, project=project),
            # Where a post-reflection for a first error here is written (o_{i+1}), or None when that screen was not
            # kept: the page reads it, it has no copy of the rule.
            "reflection_screen": step.index + 1 if screens.get(step.index + 1) is not None else None,
            # What the server records as the reason there is no post-reflection for a first error here ("" when it
            # records none): the page hides the annotator's reason field then, it has no copy of the rule.
            "server_no_reflection_reason": server_no_reflection_reason(step.index, screens.get(step.index + 1)),
        }
        for step in rows
    ]
    return {
        "annotation": annotation_json(annotation),
        "lease": {"id": lease.pk, "expires_at": lease.expires_at.isoformat(), "page": lease.page} if lease else None,
        "trace": {
            "id": trace.pk,
            "external_id": trace.external_id,
            "instruction": trace.instruction,
            "outcome": trace.outcome,
            "step_count": trace.step_count,
            "final_shot": _shot(project, trace.final_screenshot),
        },
        "project": {
            "id": project.pk,
            "name": project.name,
            "platform": project.platform,
            "convention": project.coordinate_convention,
            "error_categories": project.error_categories,
            "lease_idle_minutes": project.lease_idle_minutes,
        },
        "steps": steps,
    }


# What every view of an annotation shows: the workspace API (annotation_json) and the review API
# (annotation.review.api.annotation_summary) both start from annotation_fields_json and only add their own keys,
# so a field renamed or added here reaches both.
ANNOTATION_FIELDS = (
    "id",
    "trace_id",
    "status",
    "version",
    "verdict",
    "tau",
    "error_category",
    "note",
    "corrected_thought",
    "corrected_action",
    "reflection_thought",
    "reflection_action",
    "no_reflection_reason",
    "time_spent_s",
    "review_comment",
)


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None


def annotation_fields_json(annotation: Annotation) -> dict:
    """The shared fields of an annotation, in the one JSON shape every API answers with."""
    data = {name: getattr(annotation, name) for name in ANNOTATION_FIELDS}
    data["submitted_at"] = _iso(annotation.submitted_at)
    return data


def verdict_words(verdict: str, tau: int | None) -> str:
    """A verdict as the lists of answers show it (the review queue, its disagreements, an annotation's siblings): in
    the words the review page uses, never the stored value ("no_error"); an error with its step."""
    if not verdict:
        return "—"
    if verdict == Verdict.ERROR:
        return f"First error at step {tau}" if tau else "First error"
    return dict(Verdict.choices).get(verdict, verdict)


ACTION_FIELD_OF_SLOT = {"corrected": "corrected_action", "reflection": "reflection_action"}


def action_target_box(annotation: Annotation, slot: str, *, box_tokens: bool) -> list | None:
    """The element box of the stored ``slot`` action's target ([x1, y1, x2, y2] in the project's convention), or
    None. A box belongs to the action it was drawn for: it counts only while the editor's action (box centre
    filled in) renders to the stored action text."""
    return target_box_of(
        annotation.editor_state, getattr(annotation, ACTION_FIELD_OF_SLOT[slot]), slot, box_tokens=box_tokens
    )


def target_box_of(editor_state: dict | None, text: str, slot: str, *, box_tokens: bool) -> list | None:
    """``action_target_box`` from the stored values (an editor state and the slot's action text), for reads that
    fetch rows rather than annotations (agreement)."""
    data = (editor_state or {}).get(slot) or {}
    box = data.get(grammar.TARGET_BOX)
    if box is None or not text.strip():
        return None
    try:
        action = grammar.Action.from_json(data)
        rendered = grammar.render_action(action, box_tokens=box_tokens)
        return list(grammar.box_of(box)) if rendered == text.strip() else None
    except (TypeError, ValueError):
        return None


def annotation_json(annotation: Annotation) -> dict:
    """The annotator's own view: the shared fields, the unusable reason, the editor state and the save time."""
    return {
        **annotation_fields_json(annotation),
        "unusable_reason": annotation.unusable_reason,
        "editor_state": annotation.editor_state,
        "updated_at": _iso(annotation.updated_at),
        # What the page shows after an answer (a submit): the status in words, and whether the annotator may still
        # edit, save, skip or submit it (the workflow's rule, not the page's).
        "status_display": annotation.get_status_display(),
        "editable": annotation.status in EDITABLE_BY_ANNOTATOR,
    }
