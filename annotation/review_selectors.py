"""Reads for the leads' review pages: the queue, one annotation laid over its trace, the audit history, presence."""

from __future__ import annotations

import difflib
import re

from django.db.models import QuerySet

from annotation.models import Annotation, AnnotationStatus, AuditEvent
from annotation.selectors import open_leases
from studio.permissions import has_permission
from traces import actions as grammar
from traces.models import Project
from traces.selectors import projects_for_user

_WORDS = re.compile(r"\s+|[^\s]+")


def reviewable_projects(user) -> list[Project]:
    return [p for p in projects_for_user(user).order_by("name") if has_permission(user, "annotation.review", p)]


def annotations_for_reviewer(user) -> QuerySet[Annotation]:
    return Annotation.objects.filter(project__in=reviewable_projects(user)).select_related(
        "trace__project", "annotator", "reviewed_by"
    )


def review_queue(user, *, project: Project | None = None, status: str = AnnotationStatus.SUBMITTED) -> QuerySet[Annotation]:
    """Annotations waiting for (or past) a decision, oldest submission first."""
    queue = annotations_for_reviewer(user).filter(status=status)
    if project is not None:
        queue = queue.filter(project=project)
    return queue.order_by("submitted_at", "id")


def annotation_history(annotations) -> list[AuditEvent]:
    """Audit records of the given annotations, oldest first (the trace page's history)."""
    return list(
        AuditEvent.objects.filter(annotation__in=annotations).select_related("actor", "annotation__annotator")
        .order_by("at", "id")
    )


def trace_history(trace) -> list[AuditEvent]:
    return annotation_history(Annotation.objects.filter(trace=trace))


def word_diff(before: str, after: str) -> list[dict]:
    """Word-level diff of two thoughts as segments {op: equal|delete|insert, text}; whitespace kept."""
    a, b = _WORDS.findall(before or ""), _WORDS.findall(after or "")
    segments: list[dict] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append({"op": "equal", "text": "".join(a[i1:i2])})
            continue
        if i2 > i1:
            segments.append({"op": "delete", "text": "".join(a[i1:i2])})
        if j2 > j1:
            segments.append({"op": "insert", "text": "".join(b[j1:j2])})
    return segments


def _marker(action_text: str, *, label: str, kind: str, project: Project, shot) -> dict | None:
    """Where an action points on its screenshot, as fractions of the image (what the page draws)."""
    if not action_text or shot is None:
        return None
    try:
        action = grammar.parse_actions(action_text)[0]
    except (grammar.ActionSyntaxError, IndexError):
        return None
    marker = {"label": label, "kind": kind, "type": action.type, "text": grammar.render_action(action, box_tokens=False)}
    for arg, prefix in (("start_box", ""), ("end_box", "end_")):
        point = action.point(arg)
        if point is None:
            continue
        x, y = grammar.to_screen_pixels(point, convention=project.coordinate_convention, width=shot.width,
                                         height=shot.height, max_pixels=project.max_pixels)
        marker[prefix + "x"] = round(x / shot.width, 5)
        marker[prefix + "y"] = round(y / shot.height, 5)
    return marker


def review_context(annotation: Annotation) -> dict:
    """The annotation over its trace: o_τ with the original and corrected actions, o_{τ+1} with the
    post-reflection, thoughts word-diffed, every step for context, and the trace's history."""
    trace = annotation.trace
    project = trace.project
    steps = list(trace.steps.select_related("screenshot").order_by("index"))
    by_index = {s.index: s for s in steps}
    tau = annotation.tau
    context = {"annotation": annotation, "trace": trace, "project": project, "steps": steps, "tau": tau,
               "error_step": None, "reflection_shot": None, "error_markers": [], "reflection_markers": [],
               "thought_diff": [], "siblings": [], "history": trace_history(trace)}
    if tau and tau in by_index:
        step = by_index[tau]
        shot = step.screenshot
        context["error_step"] = step
        context["error_shot"] = shot
        markers = [
            _marker(step.action_text, label="original", kind="original", project=project, shot=shot),
            _marker(annotation.corrected_action, label="corrected", kind="corrected", project=project, shot=shot),
        ]
        context["error_markers"] = [m for m in markers if m]
        context["thought_diff"] = word_diff(step.thought, annotation.corrected_thought)
        after = by_index.get(tau + 1)
        reflection_shot = after.screenshot if after else (trace.final_screenshot if tau == trace.step_count else None)
        context["reflection_shot"] = reflection_shot
        marker = _marker(annotation.reflection_action, label="post-reflection", kind="reflection", project=project,
                         shot=reflection_shot)
        context["reflection_markers"] = [marker] if marker else []
    context["siblings"] = list(
        Annotation.objects.filter(trace=trace).exclude(pk=annotation.pk).select_related("annotator").order_by("id")
    )
    return context


def presence_snapshot(projects) -> list[dict]:
    """Who holds which trace open right now (open leases), for the live lists."""
    return [
        {"lease_id": lease.pk, "trace_id": lease.trace_id, "project_id": lease.trace.project_id,
         "external_id": lease.trace.external_id, "user": lease.user.username,
         "expires_at": lease.expires_at.isoformat()}
        for lease in open_leases().filter(trace__project__in=projects)
    ]
