"""Reads for the leads' review pages: the queue, one annotation laid over its trace, the audit history, presence."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils.translation import gettext

from annotation.access import annotations_for, history_for
from annotation.alternatives.selectors import marked_alternatives
from annotation.models import Annotation, AnnotationKind, AnnotationStatus, AuditEvent
from annotation.review.services import REVIEW_EDITABLE_FIELDS
from annotation.selectors import (
    FIELD_LABELS,
    STEPS_MAX_SPAN,
    STEPS_WINDOW,
    action_target_box,
    field_label,
    model_extent,
    observations,
    open_leases,
    word_diff,
    workspace_opening_range,
)
from annotation.services import answer_for_verdict
from traces import grammar
from traces.access import projects_for
from traces.models import Project
from traces.selectors import trace_steps

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.models import Screenshot, Trace


def reviewable_projects(user: User) -> list[Project]:
    return list(projects_for(user, "annotation.review").order_by("name"))


def annotations_for_reviewer(user: User) -> QuerySet[Annotation]:
    return annotations_for(user, "annotation.review").select_related("trace__project", "annotator", "reviewed_by")


def review_queue(
    user: User, *, project: Project | None = None, status: str = AnnotationStatus.SUBMITTED
) -> QuerySet[Annotation]:
    """Annotations waiting for (or past) a decision, oldest submission first."""
    # Gold and qualification answers are scored against their reference at submit, not reviewed.
    queue = annotations_for_reviewer(user).filter(status=status, kind=AnnotationKind.PRODUCTION)
    if project is not None:
        queue = queue.filter(project=project)
    return queue.order_by("submitted_at", "id")


def review_next(user: User, *, after: Annotation) -> Annotation | None:
    """The next annotation waiting for this lead's decision after ``after``: same project first, oldest first."""
    waiting = review_queue(user).exclude(pk=after.pk)
    return waiting.filter(project_id=after.project_id).first() or waiting.first()


def annotation_history(annotations: QuerySet[Annotation] | Iterable[Annotation]) -> list[AuditEvent]:
    """Audit records of the given annotations, oldest first (the trace page's history)."""
    return list(
        AuditEvent.objects.filter(annotation__in=annotations)
        .select_related("actor", "annotation__annotator")
        .order_by("at", "id")
    )


def trace_history(trace: Trace) -> list[AuditEvent]:
    return annotation_history(Annotation.objects.filter(trace=trace))


def trace_history_visible(user: User, trace: Trace) -> list[AuditEvent]:
    """The trace's history as ``user`` may see it (annotation.history: leads all of it; others only their own
    annotations' events, as agreement needs independent readings)."""
    events = history_for(user, AuditEvent.objects.filter(annotation__trace=trace))
    return list(events.select_related("actor", "annotation__annotator").order_by("at", "id"))


# Autosaves closer together than this are one sitting.
SITTING_GAP = timedelta(minutes=20)


@dataclass
class HistoryRow:
    """One line of the history: a transition, or one sitting of edits by one person on one annotation."""

    kind: str  # "transition" | "edits"
    at: datetime
    until: datetime
    actor: object
    annotation: Annotation
    from_status: str = ""
    to_status: str = ""
    comment: str = ""
    fields: list[str] = field(default_factory=list)
    saves: int = 0

    # The statuses by their names (the pills of every other page), not their stored values.
    @property
    def from_status_display(self) -> str:
        return str(dict(AnnotationStatus.choices).get(self.from_status, self.from_status))

    @property
    def to_status_display(self) -> str:
        return str(dict(AnnotationStatus.choices).get(self.to_status, self.to_status))


def history_rows(events: list[AuditEvent]) -> list[HistoryRow]:
    """Transitions one per row; consecutive edits by the same person on the same annotation, with no gap longer
    than ``SITTING_GAP``, folded into one row naming the fields they touched."""
    rows: list[HistoryRow] = []
    for event in events:
        if event.kind == "transition":
            rows.append(
                HistoryRow(
                    "transition",
                    event.at,
                    event.at,
                    event.actor,
                    event.annotation,
                    from_status=event.from_status,
                    to_status=event.to_status,
                    comment=event.comment,
                )
            )
            continue
        # In the order of the form (a JSON object's keys come back in another order from PostgreSQL's jsonb).
        order = list(FIELD_LABELS)
        names = sorted(event.changes, key=lambda name: (order.index(name) if name in order else len(order), name))
        labels = [field_label(name) for name in names]
        last = rows[-1] if rows else None
        if (
            last is not None
            and last.kind == "edits"
            and last.actor == event.actor
            and last.annotation.pk == event.annotation_id
            and event.at - last.until <= SITTING_GAP
        ):
            last.until = event.at
            last.saves += 1
            last.fields += [label for label in labels if label not in last.fields]
            if event.comment:
                last.comment = event.comment
            continue
        rows.append(
            HistoryRow(
                "edits",
                event.at,
                event.at,
                event.actor,
                event.annotation,
                comment=event.comment,
                fields=labels,
                saves=1,
            )
        )
    return rows


def _marker(
    action_text: str,
    *,
    label: str,
    kind: str,
    project: Project,
    shot: Screenshot | None,
    convention: str | None = None,
    box: list | None = None,
) -> dict | None:
    """Where an action points on its screenshot, in the one form every page gets: points (``start``, ``end``) and the
    element box drawn for it (``box``, ``[x1, y1, x2, y2]``) in the project's convention, with the screenshot's
    ``extent`` (the convention's range that spans it; static/js/lib/geometry.js converts). The recorded action is
    read in the trace's ``convention`` and converted here, as the workspace's recorded actions are."""
    if not action_text or shot is None:
        return None
    try:
        action = grammar.parse_actions(action_text)[0]
        if convention and convention != project.coordinate_convention:
            action = grammar.convert_action(
                action,
                src=convention,
                dst=project.coordinate_convention,
                width=shot.width,
                height=shot.height,
                max_pixels=project.max_pixels,
            )
    except (grammar.ActionSyntaxError, IndexError, ValueError):
        return None
    marker = {
        "label": label,
        "kind": kind,
        "type": action.type,
        "text": grammar.render_action(action, box_tokens=False),
        "extent": model_extent(project, shot.width, shot.height),
    }
    for arg, key in ((grammar.START_BOX, "start"), (grammar.END_BOX, "end")):
        point = action.point(arg)
        if point is not None:
            marker[key] = list(point)
    if box is not None:
        marker["box"] = list(box)
    return marker


def _size(project: Project, shot: Screenshot | None) -> dict | None:
    """A screenshot's pixel size and extent (the convention's range that spans it): what a point placed on it needs
    (the lead's edit places the action on the screens of the τ typed, which the viewer's screens carry)."""
    if shot is None:
        return None
    return {"width": shot.width, "height": shot.height, "extent": model_extent(project, shot.width, shot.height)}


def trace_viewer_screens(trace: Trace, first: int, last: int, *, tau: int | None) -> list[dict]:
    """The screens of steps ``first``..``last`` for the review page's filmstrip and viewer: each step's screenshot with
    its recorded action marked (in the trace's convention, placed by the one grammar), then the final screen when
    ``last`` is the trace's last step and the final screen was kept."""
    project = trace.project
    screens = []
    for step in trace_steps(trace).filter(index__gte=first, index__lte=last):
        shot = step.screenshot
        marker = _marker(
            step.action_text,
            label=gettext("recorded"),
            kind="original",
            project=project,
            shot=shot,
            convention=trace.coordinate_convention,
        )
        screens.append(
            {
                "index": step.index,
                "title": gettext("step %(step)s") % {"step": step.index},
                "image": shot.image_url if shot else None,
                "thumb": shot.thumbnail_url if shot else None,
                "size": _size(project, shot),
                "thought": step.thought,
                "action": step.action_text,
                "markers": [marker] if marker else [],
                "is_tau": step.index == tau,
            }
        )
    final = trace.final_screenshot
    if final is not None and last >= trace.step_count:
        screens.append(
            {
                "index": trace.step_count + 1,
                "title": gettext("final screen"),
                "image": final.image_url,
                "thumb": final.thumbnail_url,
                "size": _size(project, final),
                "thought": "",
                "action": "",
                "markers": [],
                "is_tau": False,
            }
        )
    return screens


# The review page's step list shows this many steps (the hundred holding τ, as the trace page pages them); its viewer
# is carried whole for a trace of at most STEPS_MAX_SPAN steps, else the step windows around τ, and asks
# GET /api/reviews/<id>/steps/ for the others: a 5,000-step trace is not a page of megabytes.
REVIEW_LIST_STEPS = 100


def review_viewer_range(trace: Trace, annotation: Annotation) -> tuple[int, int]:
    """The steps whose screens the review page carries itself (the viewer opens on τ, else on step 1)."""
    if trace.step_count <= STEPS_MAX_SPAN:
        return 1, trace.step_count
    return workspace_opening_range(trace, annotation)


def review_viewer(trace: Trace, annotation: Annotation, *, tau: int | None) -> dict:
    """What the review page's viewer starts from: how many screens the trace has (its steps, and the final screen when
    kept), the carried screens, and where the others are read (``steps_url``, ``window`` steps at a time)."""
    first, last = review_viewer_range(trace, annotation)
    return {
        "step_count": trace.step_count,
        "has_final": trace.final_screenshot_id is not None,
        "tau": tau,
        "steps_url": reverse("api-review-steps", args=[annotation.pk]),
        "window": STEPS_WINDOW,
        "screens": trace_viewer_screens(trace, first, last, tau=tau),
    }


def review_step_list(trace: Trace, tau: int | None) -> dict:
    """The hundred steps of the review page's list (those holding τ, else the first), and where the trace page lists
    the ones before and after them."""
    count = trace.step_count
    first = ((tau or 1) - 1) // REVIEW_LIST_STEPS * REVIEW_LIST_STEPS + 1
    last = min(count, first + REVIEW_LIST_STEPS - 1)
    trace_url = reverse("trace-detail", args=[trace.pk])
    return {
        "steps": list(trace_steps(trace).filter(index__gte=first, index__lte=last)),
        "first": first,
        "last": last,
        "is_whole": first == 1 and last >= count,
        "previous_url": f"{trace_url}?step={first - 1}" if first > 1 else "",
        "next_url": f"{trace_url}?step={last + 1}" if last < count else "",
    }


def _editor_action(action_text: str, project: Project) -> dict | None:
    """A stored action as the structured editor holds it (the project's convention, as stored)."""
    if not action_text:
        return None
    try:
        return grammar.parse_actions(action_text)[0].to_json()
    except (grammar.ActionSyntaxError, IndexError):
        return None


def review_edit_data(
    annotation: Annotation,
    *,
    error_shot: Screenshot | None,
    reflection_shot: Screenshot | None,
    values: dict,
    given: frozenset | set = frozenset(),
) -> dict:
    """What the lead's edit-then-accept editor starts from: the answer's actions (or what the lead typed, kept after
    a refused edit: ``given``, the slots whose action it gave, are sent again), the screens their points are placed
    on, and where the server checks an action."""
    project = annotation.trace.project

    def slot_action(slot: str, field: str) -> dict | None:
        action = _editor_action(values.get(field, ""), project)
        # The stored action keeps its element box in the editor (the check applies it; the lead may take it off).
        box = action_target_box(annotation, slot, box_tokens=project.box_tokens)
        if action is not None and box is not None and values.get(field, "") == getattr(annotation, field):
            action[grammar.TARGET_BOX] = box
        return action

    return {
        "check_url": reverse("api-review-check-action", args=[annotation.pk]),
        "table_url": reverse("api-action-table"),
        "platform": project.platform,
        "tau": annotation.tau,
        "slots": {
            slot: {"action": slot_action(slot, field), "canonical": values.get(field, ""), "given": slot in given}
            for slot, field in (("corrected", "corrected_action"), ("reflection", "reflection_action"))
        },
        "screens": {"corrected": _size(project, error_shot), "reflection": _size(project, reflection_shot)},
    }


def review_context(annotation: Annotation) -> dict:
    """The annotation over its trace: o_τ with the original and corrected actions, o_{τ+1} with the
    post-reflection, thoughts word-diffed, the trace's screens and steps around τ for context (the viewer reads the
    others from the review step API), and the trace's history."""
    trace = annotation.trace
    project = trace.project
    if trace.final_screenshot_id:
        trace = type(trace).objects.select_related("final_screenshot", "project").get(pk=trace.pk)
    # The page shows the answer as its verdict allows it (no τ, category or correction on "no error" or
    # "unusable", whatever an old row holds): exactly what review_accept stores.
    annotation = copy.copy(annotation)
    for name, value in answer_for_verdict(annotation.verdict).items():
        setattr(annotation, name, value)
    tau = annotation.tau
    # o_τ and o_{τ+1}: the steps at τ and after it.
    steps = list(trace_steps(trace).filter(index__gte=tau, index__lte=tau + 1)) if tau else []
    by_index = {s.index: s for s in steps}
    context: dict[str, Any] = {
        "annotation": annotation,
        "trace": trace,
        "project": project,
        "step_list": review_step_list(trace, tau),
        "tau": tau,
        "error_step": None,
        "reflection_shot": None,
        "error_markers": [],
        "reflection_markers": [],
        "without_point": [],
        "thought_diff": [],
        "siblings": [],
        "history": history_rows(trace_history(trace)),
        "trace_viewer": review_viewer(trace, annotation, tau=tau),
        "alternatives_marked": marked_alternatives(annotation),
    }
    if tau and tau in by_index:
        step = by_index[tau]
        shot = step.screenshot
        context["error_step"] = step
        context["error_shot"] = shot
        markers = [
            # The recorded action is in the trace's convention; corrections are in the project's.
            _marker(
                step.action_text,
                label=gettext("original"),
                kind="original",
                project=project,
                shot=shot,
                convention=trace.coordinate_convention,
            ),
            _marker(
                annotation.corrected_action,
                label=gettext("corrected"),
                kind="corrected",
                project=project,
                shot=shot,
                box=action_target_box(annotation, "corrected", box_tokens=project.box_tokens),
            ),
        ]
        # The checkpoint's replies the annotator marked wrong at τ (the on-policy DPO rejected sides), beside them.
        markers += [
            _marker(
                alt["action"],
                label=gettext("wrong alternative %(number)s") % {"number": alt["number"]},
                kind="alt-wrong",
                project=project,
                shot=shot,
            )
            for alt in context["alternatives_marked"]
            if alt["verdict"] == "wrong" and alt["step"] == tau
        ]
        context["error_markers"] = [m for m in markers if m]
        context["thought_diff"] = word_diff(step.thought, annotation.corrected_thought)
        reflection_shot = observations(trace, steps).get(tau + 1)
        context["reflection_shot"] = reflection_shot
        marker = _marker(
            annotation.reflection_action,
            label=gettext("post-reflection"),
            kind="reflection",
            project=project,
            shot=reflection_shot,
            box=action_target_box(annotation, "reflection", box_tokens=project.box_tokens),
        )
        context["reflection_markers"] = [marker] if marker else []
        # An action with no point (a hotkey, a wait, finished) has nothing to draw on its screenshot: the legend says
        # so beside its text, and the screenshot stays clear.
        context["without_point"] = [
            m["kind"] for m in context["error_markers"] + context["reflection_markers"] if "start" not in m
        ]
    context["form_values"] = {field: getattr(annotation, field) for field in REVIEW_EDITABLE_FIELDS}
    context["edit_data"] = review_edit_data(
        annotation,
        error_shot=context.get("error_shot"),
        reflection_shot=context["reflection_shot"],
        values=context["form_values"],
    )
    context["siblings"] = list(
        Annotation.objects.filter(trace=trace).exclude(pk=annotation.pk).select_related("annotator").order_by("id")
    )
    return context


def presence_snapshot(projects: Iterable[Project | int], *, gold_seen_in: Iterable[int] = ()) -> list[dict]:
    """Who holds which trace open right now (open leases), for the live lists; a gold trace's leases only in the
    projects of ``gold_seen_in`` (where the reader may know which traces are gold: ``events.GOLD_SEEN_BY``)."""
    leases = (
        open_leases()
        .filter(trace__project__in=projects)
        .exclude(Q(trace__gold__isnull=False) & ~Q(trace__project__in=list(gold_seen_in)))
    )
    return [
        {
            "lease_id": lease.pk,
            "trace_id": lease.trace_id,
            "project_id": lease.trace.project_id,
            "external_id": lease.trace.external_id,
            "user": lease.user.username,
            "expires_at": lease.expires_at.isoformat(),
            "heartbeat_at": lease.heartbeat_at.isoformat(),
        }
        for lease in leases
    ]
