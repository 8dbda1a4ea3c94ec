"""Reads for the annotator's queue, the workspace page and the leads' lease list, scoped to the user."""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, ngettext

from annotation.access import annotations_for
from annotation.models import Annotation, AnnotationKind, AnnotationStatus, AuditEvent, Lease, QueueRequest, Verdict
from annotation.overlap import quota_bound, trace_annotation_quota
from annotation.workflow import EDITABLE_BY_ANNOTATOR
from studio.access import can
from studio.catalog import gettext_noop
from studio.errors import Invalid
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

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.models import Project, Screenshot, Step


def open_leases(*, project: Project | None = None, user: User | None = None) -> QuerySet[Lease]:
    leases = Lease.objects.filter(released_at__isnull=True, expires_at__gt=timezone.now()).select_related(
        "trace__project", "user"
    )
    if project is not None:
        leases = leases.filter(trace__project=project)
    if user is not None:
        leases = leases.filter(user=user)
    return leases.order_by("expires_at")


def traces_awaiting_more_answers(*, project: Project, limit: int = 50) -> tuple[list[dict], int]:
    """Shared traces (``annotation.overlap``) that some annotators answered but fewer than the project asks: each with
    who answered and how many answers it needs; the first ``limit`` by trace id, and how many there are in all.

    An answer is a finished one (submitted, accepted or rejected: a rejected one comes back to its annotator), as
    the hand-out counts it."""
    if project.double_annotation_share <= 0 and not QueueRequest.objects.filter(project=project).exists():
        return [], 0
    answered: dict[int, list[str]] = {}
    rows = (
        Annotation.objects.filter(project=project, kind=AnnotationKind.PRODUCTION)
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


def annotation_status_counts(trace_ids: Iterable[int], *, viewer: User) -> dict[int, list[tuple[str, str, int]]]:
    """Per trace: (status, label, how many annotations are in it), in the workflow's order; one grouped read.

    The trace's work (production answers) and ``viewer``'s own answers of any kind: other people's gold and
    qualification answers are no work, and a gold trace answered by every annotator it was handed to would stand out
    by its count, so nobody reading the list learns which traces are gold; the viewer's own gold answer counts as
    their answer on any other trace would."""
    counts: dict[int, dict[str, int]] = {}
    rows = (
        Annotation.objects.filter(trace_id__in=list(trace_ids))
        .filter(Q(kind=AnnotationKind.PRODUCTION) | Q(annotator_id=viewer.pk))
        .values("trace_id", "status")
        .annotate(n=Count("id"))
    )
    for row in rows:
        counts.setdefault(row["trace_id"], {})[row["status"]] = row["n"]
    return {
        trace_id: [
            (status, str(label), by_status[status]) for status, label in AnnotationStatus.choices if status in by_status
        ]
        for trace_id, by_status in counts.items()
    }


def error_categories_in_use(*, project: Project, categories: Iterable[str]) -> list[str]:
    """Which of ``categories`` the project's annotations name as their error category, sorted: those a project's
    settings cannot drop (``traces.services.project_save``)."""
    return sorted(
        Annotation.objects.filter(project=project, error_category__in=categories)
        .values_list("error_category", flat=True)
        .distinct()
    )


def _open_trace_count(*, project: Project, user: User, now: datetime) -> int:
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
    partly = (
        candidates.annotate(quota_bound=quota_bound(project))
        .filter(held_by__gt=0, held_by__lt=F("quota_bound"))
        .values_list("pk", "held_by")
    )
    return free + sum(1 for pk, n in partly if n < trace_annotation_quota(trace_id=pk, project=project))


def queue_for_user(user: User) -> list[dict]:
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
                # What the annotator handed in of the queue: a gold answer counts as any other (its trace looks like
                # any other, and a count that stood still after its submit would say it was gold); the
                # qualification's answers, which they answered as such, do not.
                "submitted_count": mine.filter(status__in=[AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED])
                .exclude(kind=AnnotationKind.QUALIFICATION)
                .count(),
                "open_count": open_count,
                "open_words": ngettext("%(count)s open trace", "%(count)s open traces", open_count)
                % {"count": open_count},
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


class WithContext(Protocol):
    """A step as a model instance or as the exports' column tuple (exports.builders.StepRow): its native context."""

    @property
    def context(self) -> Any: ...


def steps_dropped_before(step: WithContext | None) -> int:
    """How many recorded steps the source dropped right before ``step`` (native format ``missing_before``; ``true``, an
    unknown number, counts as 1): the one reading of a gap, for the pages, the post-reflection rule and exports."""
    return int((step.context or {}).get("missing_before") or 0) if step is not None else 0


def _gap(step: Step) -> dict:
    """How many steps the source dropped right before ``step``, as a number and in words (the page says it)."""
    dropped = steps_dropped_before(step)
    return {"missing_before": dropped, "missing_before_words": in_words(dropped, "step", "steps")}


def model_extent(project: Project, width: int, height: int) -> list[int]:
    """The model coordinate range that spans the screenshot (the page converts with it, both ways)."""
    if project.coordinate_convention == grammar.RELATIVE_1000:
        return [1000, 1000]
    if project.coordinate_convention == grammar.SMART_RESIZE_PIXELS:
        h, w = grammar.smart_resize(height, width, max_pixels=project.max_pixels)
        return [w, h]
    return [width, height]


def _display_actions(step: Step, trace: Trace) -> list[dict]:
    """The recorded actions in the project's convention, the one the page draws and edits in (converted from the
    trace's, server-side: the page never converts)."""
    try:
        return [
            a.to_json()
            for a in prompting.step_actions(step, project=trace.project, convention=trace.coordinate_convention)
        ]
    except (prompting.PromptError, ValueError, TypeError):
        return []


def observations(trace: Trace, steps: Iterable[Step]) -> dict:
    """The screens o_i of ``steps`` (each step's screenshot) and o_{n+1}, the trace's final screenshot when it was kept:
    the one rule of which screen follows a step (a post-reflection is written on o_{τ+1})."""
    screens = {step.index: step.screenshot for step in steps}
    screens[trace.step_count + 1] = trace.final_screenshot
    return screens


def gap_after_reason(tau: int, dropped: int) -> str:
    """Why no post-reflection can be given for a first error at step ``tau`` when the source dropped ``dropped`` steps
    right after it: the next recorded screen is not o_{τ+1}, so a post-reflection written there would be trained on
    the wrong screen (the export's ``gap_after_tau``). "" without a gap."""
    if not dropped:
        return ""
    return (
        f"The source dropped {in_words(dropped, 'step', 'steps')} between step {tau} and step {tau + 1}: step "
        f"{tau + 1}'s screen is not the one right after step {tau} (o_{tau + 1} was not kept), so no post-reflection "
        "step can be given."
    )


def server_no_reflection_reason(tau: int, after: Screenshot | None, dropped: int = 0) -> str:
    """The reason the server records itself on submit for a first error at step ``tau`` whose o_{τ+1} (``after``: that
    screen, or None) was not kept, or whose next recorded step follows ``dropped`` steps the source dropped — no
    post-reflection can be given, so the annotator is not asked why; "" when o_{τ+1} was kept (then a
    post-reflection, or the annotator's own reason, is asked for)."""
    if dropped:
        return gap_after_reason(tau, dropped)
    if after is not None:
        return ""
    return (
        f"The trace has no screenshot after step {tau} (o_{tau + 1} was not kept), "
        "so no post-reflection step can be given."
    )


def _shot(project: Project, screenshot: Screenshot | None) -> dict | None:
    if screenshot is None:
        return None
    return {
        "url": screenshot.image_url,
        "thumb": screenshot.thumbnail_url,
        "width": screenshot.width,
        "height": screenshot.height,
        "extent": model_extent(project, screenshot.width, screenshot.height),
    }


def _human_edit(step: Step) -> dict | None:
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


# The workspace's step data comes in windows of this many steps (aligned: steps 1-50, 51-100, …): the page carries
# the windows around the step it opens on and asks GET /api/annotations/<id>/steps/ for the others as the annotator
# moves, so a 5,000-step trace is not one multi-megabyte page. The API answers at most STEPS_MAX_SPAN steps at once.
STEPS_WINDOW = 50
STEPS_MAX_SPAN = 200


def _workspace_step_json(step: Step, trace: Trace, project: Project, screens: dict, dropped_after: int = 0) -> dict:
    return {
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
        # Where a post-reflection for a first error here is written (o_{i+1}), or None when none can be given: that
        # screen was not kept, or the source dropped steps right after this one (the next screen is not o_{i+1}).
        # The page reads it, it has no copy of the rule.
        "reflection_screen": (
            step.index + 1 if screens.get(step.index + 1) is not None and not dropped_after else None
        ),
        # What the server records as the reason there is no post-reflection for a first error here ("" when it
        # records none): the page hides the annotator's reason field then, it has no copy of the rule.
        "server_no_reflection_reason": server_no_reflection_reason(
            step.index, screens.get(step.index + 1), dropped_after
        ),
    }


def workspace_steps(trace: Trace, first: int, last: int) -> list[dict]:
    """The workspace's data of steps ``first``..``last`` (1-based, inclusive, within the trace)."""
    project = trace.project
    # The step after the last one is read too: whether its screen was kept says where a first error at ``last``
    # has its post-reflection.
    rows = list(trace_steps(trace).filter(index__gte=first, index__lte=last + 1))
    screens = observations(trace, rows)
    dropped = {step.index: steps_dropped_before(step) for step in rows}
    return [
        _workspace_step_json(step, trace, project, screens, dropped.get(step.index + 1, 0))
        for step in rows
        if step.index <= last
    ]


def workspace_steps_range(trace: Trace, first_text: str | None, last_text: str | None) -> tuple[int, int]:
    """The steps a request for ``first``..``last`` names (query texts; none given: the first window), or Invalid
    saying what is wrong with them."""
    count = trace.step_count
    if first_text in (None, "") and last_text in (None, ""):
        return (1, min(count, STEPS_WINDOW)) if count else (1, 0)
    try:
        first, last = int(str(first_text)), int(str(last_text))
    except ValueError:
        raise Invalid(
            gettext("first and last must be step numbers (whole numbers)"),
            first=str(first_text)[:40],
            last=str(last_text)[:40],
        ) from None
    if not 1 <= first <= last <= count:
        raise Invalid(
            gettext("first and last must satisfy 1 ≤ first ≤ last ≤ %(count)s (the trace's steps)") % {"count": count},
            step_count=count,
        )
    if last - first + 1 > STEPS_MAX_SPAN:
        raise Invalid(gettext("at most %(span)s steps at a time") % {"span": STEPS_MAX_SPAN}, max_span=STEPS_MAX_SPAN)
    return first, last


def _window_of(index: int) -> tuple[int, int]:
    start = (index - 1) // STEPS_WINDOW * STEPS_WINDOW + 1
    return start, start + STEPS_WINDOW - 1


def workspace_opening_range(trace: Trace, annotation: Annotation) -> tuple[int, int]:
    """The steps the page carries itself: the windows around the step it opens on (τ when marked, else the first),
    so that step and its neighbours on either side show without a request."""
    count = trace.step_count
    opening = annotation.tau if annotation.verdict == Verdict.ERROR and annotation.tau else 1
    opening = max(1, min(opening, count or 1))
    first = _window_of(max(1, opening - STEPS_WINDOW // 2))[0]
    last = _window_of(min(count or 1, opening + STEPS_WINDOW // 2))[1]
    return first, min(last, count)


def workspace_strip(trace: Trace) -> dict:
    """What the step strip marks on every step, for the whole trace in a few bytes (the steps' own data comes in
    windows): the steps without a screenshot, those with a recorded point off the screen, and the gaps the source
    left before a step (with the words the page shows)."""
    without_shot: list[int] = []
    off_screen: list[int] = []
    gaps: dict[int, dict] = {}
    rows = trace.steps.order_by("index").values_list(
        "index", "screenshot_id", "off_screen_point", "context__missing_before"
    )
    for index, screenshot_id, off_screen_point, missing_before in rows:
        if screenshot_id is None:
            without_shot.append(index)
        if off_screen_point:
            off_screen.append(index)
        try:
            dropped = int(missing_before or 0)
        except (TypeError, ValueError):
            dropped = 0
        if dropped:
            gaps[index] = {"missing_before": dropped, "missing_before_words": in_words(dropped, "step", "steps")}
    return {"without_shot": without_shot, "off_screen": off_screen, "gaps": gaps}


def workspace_payload(*, annotation: Annotation, lease: Lease | None) -> dict:
    """What the workspace page carries (rendered as JSON data, never as HTML): the answer, the trace's strip marks and
    the data of the steps around the one it opens on; the others come from the step window API."""
    trace = annotation.trace
    project = trace.project
    first, last = workspace_opening_range(trace, annotation)
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
        "strip": workspace_strip(trace),
        "steps": workspace_steps(trace, first, last) if last >= first else [],
        "steps_url": reverse("api-annotation-steps", args=[annotation.pk]),
        "steps_window": STEPS_WINDOW,
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


def _iso(moment: datetime | None) -> str | None:
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
        return gettext("First error at step %(tau)s") % {"tau": tau} if tau else gettext("First error")
    return str(dict(Verdict.choices).get(verdict, verdict))


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
        # A qualification answer, once submitted, has its comparison with the reference to show (a gold answer of the
        # real queue has none: it looks like any other trace, before and after).
        "feedback_url": (
            reverse("api-annotation-feedback", args=[annotation.pk])
            if annotation.kind == AnnotationKind.QUALIFICATION and annotation.status not in EDITABLE_BY_ANNOTATOR
            else None
        ),
    }


# --- Versions: every saved state of an annotation, from its audit rows -------------------------------------

# What people call the fields an edit changed (the history and the Versions panel show these, not column names;
# translated where shown: ``field_label``).
FIELD_LABELS = {
    "verdict": gettext_noop("verdict"),
    "tau": gettext_noop("first error (τ)"),
    "error_category": gettext_noop("category"),
    "note": gettext_noop("note"),
    "unusable_reason": gettext_noop("unusable reason"),
    "corrected_thought": gettext_noop("corrected thought"),
    "corrected_action": gettext_noop("corrected action"),
    "reflection_thought": gettext_noop("post-reflection thought"),
    "reflection_action": gettext_noop("post-reflection action"),
    "no_reflection_reason": gettext_noop("no post-reflection reason"),
    "editor_state": gettext_noop("action editor"),
    "time_spent_s": gettext_noop("time spent"),
}


def field_label(name: str) -> str:
    """What people call field ``name``, in the request's language."""
    return gettext(FIELD_LABELS[name]) if name in FIELD_LABELS else name.replace("_", " ")


# The answer a version holds and a restore writes back (the draft's fields; the action texts follow the editor).
VERSION_FIELDS = (
    "verdict",
    "tau",
    "error_category",
    "note",
    "unusable_reason",
    "corrected_thought",
    "reflection_thought",
    "no_reflection_reason",
    "editor_state",
    "corrected_action",
    "reflection_action",
)
# Edits that make no version: an alternative's mark is its own row and leaves the version alone.
_UNVERSIONED_CHANGES = frozenset({"alternative_marks"})
_SLOT_LABELS = {"corrected": "corrected", "reflection": "post-reflection"}


def _makes_version(event: AuditEvent) -> bool:
    return event.kind == "transition" or not set(event.changes or {}) <= _UNVERSIONED_CHANGES


def _numbered(annotation: Annotation, events: list[AuditEvent]) -> list[tuple[int, AuditEvent]]:
    """(version, event) for each event that made a version, oldest first. Rows that carry no version (recorded before
    it was kept) are counted back from the next known one: each such row made exactly one version."""
    numbered: list[tuple[int, AuditEvent]] = []
    current = annotation.version
    for event in reversed(events):
        if not _makes_version(event):
            continue
        if event.version is not None:
            current = event.version
        numbered.append((current, event))
        current -= 1
    return numbered[::-1]


_CUT_AT = 60  # a value's words are cut beyond this many characters


def _value_words(name: str, value: Any) -> str:
    if name == "verdict":
        return str(dict(Verdict.choices).get(value or "", str(value)))
    if value in (None, "", {}):
        return "nothing"
    if name == "tau":
        return f"step {value}"
    text = " ".join(str(value).split())
    return f"“{text[: _CUT_AT - 3]}…”" if len(text) > _CUT_AT else f"“{text}”"


def _editor_words(before: dict | None, after: dict | None, changes: dict) -> list[str]:
    """The editor's changes that no action text says: a box drawn or taken off, a point placed without a full action."""
    words = []
    for slot, label in _SLOT_LABELS.items():
        old, new = (before or {}).get(slot) or {}, (after or {}).get(slot) or {}
        if old == new:
            continue
        old_box, new_box = old.get(grammar.TARGET_BOX), new.get(grammar.TARGET_BOX)
        if old_box != new_box:
            words.append(
                f"{label} element box {'taken off' if new_box is None else 'drawn' if old_box is None else 'moved'}"
            )
        elif ACTION_FIELD_OF_SLOT[slot] not in changes:
            words.append(f"{label} action being built ({new.get('type') or 'no type'})")
    return words


_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(before: str, after: str) -> list[dict]:
    """Word-level diff of two texts as segments {op: equal|delete|insert, text}; whitespace kept."""
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


# A diff shows this many words of unchanged text on either side of a change; the rest of a long text is "…".
DIFF_CONTEXT_WORDS = 6


def diff_excerpt(segments: list[dict], context: int = DIFF_CONTEXT_WORDS) -> list[dict]:
    """``segments`` (word_diff) with each unchanged run cut to ``context`` words beside the changes it touches."""
    keep = 2 * context  # words and the spaces between them
    last = len(segments) - 1
    out = []
    for i, segment in enumerate(segments):
        tokens = _WORDS.findall(segment["text"])
        after_change, before_change = i > 0, i < last
        if segment["op"] != "equal" or len(tokens) <= keep * (after_change + before_change) + 1:
            out.append(segment)
        elif after_change and before_change:
            out.append({"op": "equal", "text": "".join(tokens[:keep]) + " … " + "".join(tokens[-keep:])})
        elif after_change:
            out.append({"op": "equal", "text": "".join(tokens[:keep]) + "…"})
        elif before_change:
            out.append({"op": "equal", "text": "…" + "".join(tokens[-keep:])})
        else:
            out.append(segment)
    return out


# What the annotator types: a version's change of one of these, both sides written, is shown as a diff (two long texts
# cut to their starts can read alike); consecutive saves typing one of them are one typing session (below).
TYPED_FIELDS = ("note", "unusable_reason", "corrected_thought", "reflection_thought", "no_reflection_reason")


def _text_diffs(changes: dict) -> list[dict]:
    """The typed fields ``changes`` rewrote (text before and after): their label and what differs, as diff segments."""
    diffs = []
    for name in TYPED_FIELDS:
        if name in changes and all(isinstance(v, str) and v.strip() for v in changes[name]):
            before, after = changes[name]
            diffs.append({"field": field_label(name), "segments": diff_excerpt(word_diff(before, after))})
    return diffs


def _change_words(event: AuditEvent, changes: dict | None = None) -> list[str]:
    """``event``'s changes (or ``changes``, a typing session's whole) in words."""
    changes = (event.changes or {}) if changes is None else changes
    words = []
    if event.kind == "transition":
        status = dict(AnnotationStatus.choices).get(event.to_status, event.to_status)
        words.append(f"{status.lower()}" + (f": “{event.comment}”" if event.comment else ""))
    for name in (*FIELD_LABELS, *sorted(set(changes) - set(FIELD_LABELS))):
        if name not in changes or name in _UNVERSIONED_CHANGES:
            continue
        before, after = changes[name]
        if name == "editor_state":
            words += _editor_words(before, after, changes)
        elif name == "is_adjudicated":
            words.append("made the trace's adjudicated answer" if after else "no longer the adjudicated answer")
        elif (
            name in TYPED_FIELDS
            and before
            and after
            and max(len(" ".join(str(v).split())) for v in (before, after)) > _CUT_AT
        ):
            # Cut to their starts, the two texts could read alike: the diff (``_text_diffs``) shows what differs.
            words.append(gettext("%(field)s: rewritten (what differs is shown below)") % {"field": field_label(name)})
        elif name != "time_spent_s":
            label = field_label(name)
            words.append(f"{label}: {_value_words(name, before)} → {_value_words(name, after)}")
    if event.kind != "transition" and event.comment:
        words.insert(0, event.comment)
    return words or [gettext("no change to the answer")]


# Saves of one typing session are one entry of the Versions panel: the workspace saves a field while it is typed (at
# each pause), so one thought written is a score of saves. Consecutive draft saves by one person that each change only
# the same typed field, each within TYPING_PAUSE of the one before, are listed as one version (the last: the text as
# it was left) with what the whole session changed. Every save keeps its audit row and its version number (the
# draft's version check and the audit trail are the save's own), and any of them is still restored by its number.
TYPING_PAUSE = timedelta(minutes=2)


def _typed_field(event: AuditEvent) -> str | None:
    """The one typed field a draft save changed; None for any other write (a restore, several fields, a decision)."""
    names = list(event.changes or {})
    if event.kind != "edit" or event.comment or len(names) != 1 or names[0] not in TYPED_FIELDS:
        return None
    return names[0]


def _typing_sessions(numbered: list[tuple[int, AuditEvent]]) -> list[list[tuple[int, AuditEvent]]]:
    """``numbered`` (oldest first) in runs: a typing session's saves together, every other version alone."""
    runs: list[list[tuple[int, AuditEvent]]] = []
    for number, event in numbered:
        typed = _typed_field(event)
        last = runs[-1][-1][1] if runs else None
        if (
            typed is not None
            and last is not None
            and _typed_field(last) == typed
            and last.actor_id == event.actor_id
            and event.at - last.at <= TYPING_PAUSE
        ):
            runs[-1].append((number, event))
        else:
            runs.append([(number, event)])
    return runs


def _session_changes(run: list[tuple[int, AuditEvent]]) -> dict:
    """What a run of saves changed as a whole: each field from its value before the first to its value after the last."""
    whole: dict = {}
    for _number, event in run:
        for name, (before, after) in (event.changes or {}).items():
            whole[name] = [whole[name][0] if name in whole else before, after]
    return whole


def annotation_versions(annotation: Annotation) -> list[dict]:
    """Every saved version of ``annotation``, newest first: its number, when and by whom, its status, what it changed
    in words and, for a rewritten text, the diff of what differs (from the audit rows every write leaves: drafts,
    submit, review decisions, restores). A typing session's saves are one entry (``saves`` of them, from version
    ``first``). The annotation as first made (before any audited write) is the oldest entry."""
    events = list(annotation.audit_events.select_related("actor").order_by("at", "id"))
    numbered = _numbered(annotation, events)
    versions = []
    for run in _typing_sessions(numbered):
        number, event = run[-1]
        changes = _session_changes(run) if len(run) > 1 else (event.changes or {})
        versions.append(
            {
                "number": number,
                "first": run[0][0],
                "saves": len(run),
                "since": _iso(run[0][1].at),
                "at": _iso(event.at),
                "by": event.actor.username if event.actor is not None else None,
                "kind": "restore" if event.comment.startswith(RESTORED_PREFIX) else event.kind,
                "status": dict(AnnotationStatus.choices).get(event.to_status, event.to_status),
                "changes": _change_words(event, changes),
                "diffs": _text_diffs(changes),
            }
        )
    first = numbered[0][0] - 1 if numbered else annotation.version
    if first >= 1:
        versions.insert(
            0,
            {
                "number": first,
                "at": _iso(annotation.created_at),
                "by": annotation.annotator.username,
                "kind": "created",
                "status": dict(AnnotationStatus.choices).get(
                    numbered[0][1].from_status if numbered else annotation.status, ""
                ),
                "changes": ["the annotation as it was first made"],
                "first": first,
                "saves": 1,
                "since": _iso(annotation.created_at),
                "diffs": [],
            },
        )
    for entry in versions:
        entry["current"] = entry["number"] == annotation.version
    return versions[::-1]


RESTORED_PREFIX = "Restored version "


def annotation_version_values(annotation: Annotation, number: int) -> dict | None:
    """The answer ``annotation`` held at version ``number`` (VERSION_FIELDS), or None when it had no such version.
    Read back from the annotation as it is now, undoing each later audited change (its ``before``): the stored row is
    the truth, and every change since is recorded with what it replaced."""
    events = list(annotation.audit_events.order_by("at", "id"))
    numbered = _numbered(annotation, events)
    oldest = numbered[0][0] - 1 if numbered else annotation.version
    if not max(oldest, 1) <= number <= annotation.version:
        return None
    values = {name: copy.deepcopy(getattr(annotation, name)) for name in VERSION_FIELDS}
    for version, event in reversed(numbered):
        if version <= number:
            break
        for name, (before, _after) in (event.changes or {}).items():
            if name in values:
                values[name] = copy.deepcopy(before)
    return values


# --- Points drawn for another τ (the τ rule's report on answers accepted before it) ---------------------

_POINT_KEYS = (grammar.START_BOX, grammar.END_BOX)


def _slot_points(state: dict | None, text: str | None, slot: str) -> dict:
    """The points and element box of ``slot``'s action: from the editor state, else parsed from the action text."""
    data = (state or {}).get(slot)
    if not data and text:
        try:
            data = grammar.parse_action(text).to_json()
        except (grammar.ActionSyntaxError, TypeError, ValueError):
            data = None
    if not data:
        return {}
    points = {k: v for k, v in (data.get("args") or {}).items() if k in _POINT_KEYS}
    if data.get(grammar.TARGET_BOX) is not None:
        points[grammar.TARGET_BOX] = data[grammar.TARGET_BOX]
    return points


def _drawn_at(events: list) -> dict[str, int | None]:
    """slot -> the τ its current points were placed for, replaying the audit rows: a write that changes a slot's
    points places them for the τ that write leaves (a τ move with new points in one save draws them on the new
    step)."""
    tau = None
    state: dict = {}
    texts: dict[str, str] = {}
    drawn: dict[str, int | None] = {}
    for event in events:
        changes = event.changes or {}
        if "tau" in changes:
            tau = changes["tau"][1]
        before = {slot: _slot_points(state, texts.get(field), slot) for slot, field in ACTION_FIELD_OF_SLOT.items()}
        if "editor_state" in changes:
            state = changes["editor_state"][1] or {}
        for field in ACTION_FIELD_OF_SLOT.values():
            if field in changes:
                texts[field] = changes[field][1]
        for slot, field in ACTION_FIELD_OF_SLOT.items():
            after = _slot_points(state, texts.get(field), slot)
            if after != before[slot]:
                drawn[slot] = tau if after else None
    return drawn


def tau_moved_points(*, project: Project | None = None, batch: int = 500) -> dict:
    """Accepted error answers whose corrected (or post-reflection) action holds a point or box placed for another
    τ than the one accepted (from the audit history: the τ when the points were last set vs the final τ). Reads
    only; ``manage.py tau_moved_points`` reports them. ``unknown``: accepted answers whose points no audited write
    placed (rows loaded around the services), which the history cannot judge."""
    answers = Annotation.objects.filter(status=AnnotationStatus.ACCEPTED, verdict=Verdict.ERROR, tau__isnull=False)
    if project is not None:
        answers = answers.filter(project=project)
    answers = answers.select_related("trace", "project").order_by("pk")
    found, checked, unknown = [], 0, 0
    last = 0
    while True:
        chunk = list(answers.filter(pk__gt=last)[:batch])
        if not chunk:
            break
        last = chunk[-1].pk
        events: dict[int, list] = {a.pk: [] for a in chunk}
        for event in AuditEvent.objects.filter(annotation_id__in=events).order_by("at", "id"):
            events[event.annotation_id].append(event)
        for annotation in chunk:
            checked += 1
            drawn = _drawn_at(events[annotation.pk])
            for slot, field in ACTION_FIELD_OF_SLOT.items():
                if not _slot_points(annotation.editor_state, getattr(annotation, field), slot):
                    continue
                placed_for = drawn.get(slot)
                if placed_for is None:
                    unknown += 1
                elif placed_for != annotation.tau:
                    found.append(
                        {
                            "annotation_id": annotation.pk,
                            "project": annotation.project.name,
                            "trace": annotation.trace.external_id,
                            "slot": slot,
                            "drawn_for_tau": placed_for,
                            "tau": annotation.tau,
                        }
                    )
    return {"checked": checked, "moved": found, "unknown": unknown}
