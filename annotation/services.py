"""Writes for annotations. Every status change goes through ``annotation_transition`` and every edit
through ``annotation_record_edit``, so the audit trail is written in the same transaction as the change."""

from __future__ import annotations

import copy
import hashlib
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import events
from annotation.access import access_annotation, access_lease
from annotation.answer_fields import clean_answer_field
from annotation.models import Annotation, AnnotationStatus, AuditEvent, Lease, Verdict
from annotation.selectors import annotation_json, observations
from annotation.workflow import EDITABLE_BY_ANNOTATOR, STANDING, check_transition
from studio.access import can
from studio.db import atomic_with_retry
from studio.errors import Conflict, Invalid
from traces import grammar
from traces.models import Trace
from traces.selectors import awaits_instruction, traces_ready_to_annotate
from traces.services import round_mark_annotated


def annotation_transition(
    *, annotation: Annotation, to: str, actor, comment: str = "", changes: dict | None = None
) -> Annotation:
    """Move an annotation along the state machine and audit it; the caller holds the row lock."""
    assert transaction.get_connection().in_atomic_block, "annotation_transition runs inside the caller's transaction"
    from_status = annotation.status
    check_transition(from_status, to)
    now = timezone.now()
    annotation.status = to
    annotation.version += 1
    if to == AnnotationStatus.SUBMITTED:
        annotation.submitted_at = now
    if to in (AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED):
        annotation.reviewed_at = now
        annotation.reviewed_by = actor
        annotation.review_comment = comment
    annotation.save()
    standing_change = (to in STANDING) - (from_status in STANDING)
    if standing_change:
        Trace.objects.filter(pk=annotation.trace_id).update(
            standing_annotations=F("standing_annotations") + standing_change
        )
    _audit_event_create(
        annotation=annotation,
        actor=actor,
        kind="transition",
        from_status=from_status,
        to_status=to,
        changes=changes or {},
        comment=comment,
    )
    events.annotation_changed(annotation=annotation, verb=check_transition(from_status, to))  # sent after commit
    round_id = (
        Trace.objects.filter(pk=annotation.trace_id).values_list("round_id", flat=True).first()
        if to == AnnotationStatus.ACCEPTED
        else None
    )
    if round_id is not None:
        # After the commit, so the round is judged on what is stored (and a rolled-back accept changes nothing).
        transaction.on_commit(lambda: round_mark_annotated(round_id=round_id))
    return annotation


def trace_recount_standing_annotations(*, traces) -> int:
    """Set ``Trace.standing_annotations`` of ``traces`` (a queryset) from their annotations: for rows written
    around the state machine (bulk loads, repairs). Returns how many traces were updated."""
    standing = (
        Annotation.objects.filter(trace=OuterRef("pk"), status__in=STANDING)
        .order_by()
        .values("trace")
        .annotate(n=Count("id"))
        .values("n")
    )
    return traces.update(standing_annotations=Coalesce(Subquery(standing), 0))


def annotation_record_edit(*, annotation: Annotation, actor, changes: dict) -> None:
    """Audit an edit: ``changes`` maps field -> [before, after]. Empty changes write nothing."""
    if changes:
        _audit_event_create(
            annotation=annotation,
            actor=actor,
            kind="edit",
            from_status=annotation.status,
            to_status=annotation.status,
            changes=changes,
        )


def _audit_event_create(*, annotation: Annotation, **fields) -> AuditEvent:
    """The one place audit rows are made, with the annotation's project and annotator copied onto them."""
    return AuditEvent.objects.create(
        annotation=annotation, project_id=annotation.project_id, annotator_id=annotation.annotator_id, **fields
    )


# --- Refusals (studio.errors kinds; the API, pages and sockets give each kind its one answer) ---------------


class StaleVersion(Conflict):
    """The edit was based on an older version: ``current`` (the annotation as it is now, the workspace's JSON)
    and ``current_version`` travel in the body, as review's ReviewConflict carries ``current_version``."""


class NotEditable(Conflict):
    """The annotation is no longer the annotator's to change (submitted, accepted)."""


class LeaseLost(Conflict):
    """The lease was released by a lead, or expired and another annotator took the trace."""


class SubmitRejected(Invalid):
    """The annotation is not complete; ``errors`` maps each field to what it still needs."""


def _conflict_fields(annotation: Annotation) -> dict:
    return {"current": annotation_json(annotation), "current_version": annotation.version}


# --- Leases: handing out traces --------------------------------------------------------------

# The page beats every 30 s while the annotator is active; a gap longer than this is not work time.
HEARTBEAT_CREDIT_CAP_S = 90


def trace_annotation_quota(*, trace_id: int, double_share: float) -> int:
    """How many distinct annotators a trace needs: 2 for a stable share of traces, chosen by id hash."""
    if double_share <= 0:
        return 1
    bucket = int(hashlib.sha256(f"trace:{trace_id}".encode()).hexdigest()[:8], 16) / 2**32
    return 2 if bucket < double_share else 1


def _trace_occupancy(*, trace_id: int, user, now) -> int:
    """Annotators other than ``user`` who hold the trace: finished work plus live leases."""
    finished = (
        Annotation.objects.filter(trace_id=trace_id)
        .exclude(annotator=user)
        .exclude(status=AnnotationStatus.DRAFT)
        .values("annotator_id")
    )
    leased = (
        Lease.objects.filter(trace_id=trace_id, released_at__isnull=True, expires_at__gt=now)
        .exclude(user=user)
        .exclude(user_id__in=finished)
        .values("user_id")
    )
    return finished.count() + leased.distinct().count()


def _lease_take(*, trace, user, now, page: str = "") -> Lease:
    """Open (or renew this user's unreleased) lease on ``trace``, held by workspace ``page`` when one is given;
    the caller holds the trace lock."""
    expires = now + timedelta(minutes=trace.project.lease_idle_minutes)
    lease = Lease.objects.filter(trace=trace, user=user, released_at__isnull=True).first()
    if lease is None:
        lease = Lease.objects.create(trace=trace, user=user, heartbeat_at=now, expires_at=expires, page=page)
        events.lease_changed(lease=lease, state="open")
        return lease
    lease.heartbeat_at, lease.expires_at = now, expires
    lease.page = page or lease.page
    lease.save(update_fields=["heartbeat_at", "expires_at", "page"])
    return lease


def _annotation_for_claim(*, trace, user) -> Annotation:
    annotation, _ = Annotation.objects.get_or_create(
        trace=trace, annotator=user, defaults={"project_id": trace.project_id}
    )
    return annotation


def _lock_trace(trace_id: int):
    """Lock one trace row; None when another transaction holds it (PostgreSQL skips it, SQLite
    needs no row lock: its IMMEDIATE transactions already let one writer in at a time)."""
    return (
        Trace.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("project")
        .filter(pk=trace_id)
        .first()
    )


@atomic_with_retry
def lease_next_trace(*, user, project, most_doubtful_first: bool = False) -> tuple[Annotation, Lease] | None:
    """Hand ``user`` their next trace of ``project`` with a lease, or None when nothing is open to them.

    Order: a trace they already hold, then their unfinished drafts, then fresh traces by id (or, with
    ``most_doubtful_first``, where the user sees pre-scoring — ``prescore.view`` —, by suspicion). A trace
    is open while fewer distinct annotators hold it than its quota; the quota is re-checked after
    the row lock, with a fresh statement, so two concurrent claimers never share a trace by accident.
    """
    now = timezone.now()
    held = (
        Lease.objects.filter(user=user, trace__project=project, released_at__isnull=True, expires_at__gt=now)
        .order_by("created_at")
        .first()
    )
    if held is not None:
        trace = Trace.objects.select_related("project").get(pk=held.trace_id)
        return _annotation_for_claim(trace=trace, user=user), _lease_take(trace=trace, user=user, now=now)

    finished_by_me = Annotation.objects.filter(annotator=user).exclude(status=AnnotationStatus.DRAFT).values("trace_id")
    skipped_by_me = Lease.objects.filter(user=user, release_reason="skipped").values("trace_id")
    my_draft = Exists(Annotation.objects.filter(trace=OuterRef("pk"), annotator=user, status=AnnotationStatus.DRAFT))
    busy = Subquery(
        Lease.objects.filter(trace=OuterRef("pk"), released_at__isnull=True, expires_at__gt=now)
        .exclude(user=user)
        .values("trace")
        .annotate(n=Count("user", distinct=True))
        .values("n")[:1]
    )
    done = Subquery(
        Annotation.objects.filter(trace=OuterRef("pk"))
        .exclude(annotator=user)
        .exclude(status=AnnotationStatus.DRAFT)
        .values("trace")
        .annotate(n=Count("annotator", distinct=True))
        .values("n")[:1]
    )
    max_quota = 2 if project.double_annotation_share > 0 else 1
    open_traces: QuerySet[Any] = (
        # Traces awaiting their instruction stay out until a lead writes it (traces.selectors).
        traces_ready_to_annotate(Trace.objects.filter(project=project))
        .exclude(pk__in=finished_by_me)
        .exclude(pk__in=skipped_by_me)
        .annotate(held_by=Coalesce(busy, 0) + Coalesce(done, 0), mine=my_draft)
        .filter(held_by__lt=max_quota)
    )
    ordering: tuple[Any, ...]
    if most_doubtful_first and can(user, "prescore.view", project):
        from traces.prescoring.selectors import traces_by_suspicion

        ordering = ("-mine", F("suspicion").desc(nulls_last=True), "id")
        open_traces = traces_by_suspicion(open_traces, user=user)
    else:
        ordering = ("-mine", "id")
    candidates = open_traces.order_by(*ordering).values_list("pk", flat=True)
    offset, chunk = 0, 100
    while True:
        batch = list(candidates[offset : offset + chunk])
        for trace_id in batch:
            quota = trace_annotation_quota(trace_id=trace_id, double_share=project.double_annotation_share)
            trace = _lock_trace(trace_id)
            if trace is None:
                continue  # another claimer holds it right now
            if _trace_occupancy(trace_id=trace_id, user=user, now=now) >= quota:
                continue
            return _annotation_for_claim(trace=trace, user=user), _lease_take(trace=trace, user=user, now=now)
        if len(batch) < chunk:
            return None
        offset += chunk


@atomic_with_retry
def lease_take_for_annotation(*, annotation: Annotation, user, page: str = "") -> Lease | None:
    """Opening one's own annotation (e.g. work sent back by review) takes the lease if the trace is free; ``page``
    names the workspace page that holds it from now on."""
    now = timezone.now()
    trace = Trace.objects.select_for_update(of=("self",)).select_related("project").get(pk=annotation.trace_id)
    quota = trace_annotation_quota(trace_id=trace.pk, double_share=trace.project.double_annotation_share)
    mine = Lease.objects.filter(trace=trace, user=user, released_at__isnull=True, expires_at__gt=now).exists()
    if (
        not mine
        and annotation.status == AnnotationStatus.DRAFT
        and _trace_occupancy(trace_id=trace.pk, user=user, now=now) >= quota
    ):
        return None
    return _lease_take(trace=trace, user=user, now=now, page=page)


def _lease_close(lease: Lease, *, by, reason: str, now) -> None:
    lease.released_at, lease.released_by, lease.release_reason = now, by, reason
    lease.save(update_fields=["released_at", "released_by", "release_reason"])
    events.lease_changed(lease=lease, state="released")


def _credit_time(*, lease: Lease, now) -> None:
    """Add the time since the last heartbeat (capped: a sleeping laptop is not work) to the annotation."""
    gap = max(0, min((now - lease.heartbeat_at).total_seconds(), HEARTBEAT_CREDIT_CAP_S))
    if gap:
        Annotation.objects.filter(trace_id=lease.trace_id, annotator_id=lease.user_id).update(
            time_spent_s=F("time_spent_s") + int(round(gap))
        )


@atomic_with_retry
def lease_heartbeat(*, lease_id: int, user) -> Lease:
    """Renew the user's lease and credit the active time; a lease released by a lead or taken over is lost."""
    now = timezone.now()
    lease = access_lease(user, lease_id, "annotation.work", lock=True)  # one's own lease: 404 for anyone else's
    if lease.released_at is not None:
        by = lease.released_by
        who = f" by {by.username}" if by is not None and by.pk != user.pk else ""
        raise LeaseLost(
            f"Your lease on this trace was released{who} ({lease.release_reason or 'released'}). "
            "Your draft is kept; open the trace again from the queue.",
            reason=lease.release_reason,
        )
    if lease.expires_at <= now:
        quota = trace_annotation_quota(
            trace_id=lease.trace_id, double_share=lease.trace.project.double_annotation_share
        )
        if _trace_occupancy(trace_id=lease.trace_id, user=user, now=now) >= quota:
            _lease_close(lease, by=None, reason="expired", now=now)
            raise LeaseLost(
                "Your lease expired and another annotator took the trace. Your draft is kept.", reason="expired"
            )
    else:
        _credit_time(lease=lease, now=now)
    lease.heartbeat_at = now
    lease.expires_at = now + timedelta(minutes=lease.trace.project.lease_idle_minutes)
    lease.save(update_fields=["heartbeat_at", "expires_at"])
    return lease


@atomic_with_retry
def lease_release_by(*, actor, lease_id: int, action: str, page: str = "") -> Lease:
    """The one way a person closes a lease: the holder's page going away (the API, its pagehide beacon), a lead
    from the queue page or from the live list (the socket). ``action`` is the entry point's rule (``lease.release``:
    one's own, leads any of their projects'; ``lease.manage``: leads only), applied by the access layer on the
    locked row: 404 outside the actor's reach, 403 for a role that may not.

    An already released lease is answered as it stands, unchanged, whichever entry point asks. A holder's page
    that names itself (``page``) closes the lease only if that page still holds it: after a reload the old page's
    farewell arrives when the new page has taken the lease over."""
    lease = access_lease(actor, lease_id, action, lock=True)
    holder = lease.user_id == actor.pk
    if holder and page and lease.page and page != lease.page:
        return lease
    if lease.released_at is None:
        now = timezone.now()
        if holder and lease.expires_at > now:
            _credit_time(lease=lease, now=now)
        _lease_close(lease, by=actor, reason="closed" if holder else "released-by-lead", now=now)
    return lease


def _release_user_leases(*, trace_id: int, user, reason: str, now) -> None:
    for lease in Lease.objects.select_for_update().filter(trace_id=trace_id, user=user, released_at__isnull=True):
        if lease.expires_at > now:
            _credit_time(lease=lease, now=now)
        _lease_close(lease, by=user, reason=reason, now=now)


# --- Drafts, checks and submit ---------------------------------------------------------------

DRAFT_TEXT_FIELDS = (
    "error_category",
    "note",
    "unusable_reason",
    "corrected_thought",
    "reflection_thought",
    "no_reflection_reason",
)
DRAFT_FIELDS = ("verdict", "tau", *DRAFT_TEXT_FIELDS, "editor_state")
EDITOR_SLOTS = ("corrected", "reflection")


def _editor_json(data, slot: str) -> dict | None:
    """An editor action object as stored: the grammar's JSON of the action plus, when drawn, the element box of its
    target (``grammar.TARGET_BOX``, normalised, in the project's convention). A box without a point gives the point
    the box's centre."""
    if not data:
        return None
    try:
        action = grammar.Action.from_json(data)
        raw_box = data.get(grammar.TARGET_BOX)
        if raw_box is None:
            return action.to_json()
        box = grammar.box_of(raw_box)
    except (TypeError, ValueError) as exc:
        raise Invalid(f"The {slot} action is malformed: {exc}") from None
    spec = action.spec
    if action.point() is None and spec is not None and spec.arg(grammar.START_BOX) is not None:
        action = grammar.Action(
            action.type, (*action.args, (grammar.START_BOX, grammar.box_centre(box))), data.get("style", "box")
        )
    return {**action.to_json(), grammar.TARGET_BOX: list(box)}


def _editor_action(state: dict, slot: str) -> grammar.Action | None:
    data = _editor_json((state or {}).get(slot), slot)
    return grammar.Action.from_json(data) if data else None


def editor_box(state: dict | None, slot: str) -> tuple | None:
    """The element box stored with ``slot``'s editor action (None: none drawn)."""
    box = ((state or {}).get(slot) or {}).get(grammar.TARGET_BOX)
    return grammar.box_of(box) if box is not None else None


def _render(action: grammar.Action | None, project) -> str:
    if action is None:
        return ""
    try:
        return grammar.render_action(action, box_tokens=project.box_tokens)
    except TypeError as exc:
        raise Invalid(f"The {action.type} action is malformed: {exc}") from None


def observation_for(trace, index: int):
    """The screenshot o_index (1-based); o_{n+1} is the trace's final screenshot when it was kept."""
    return observations(trace, trace.steps.select_related("screenshot").filter(index=index)).get(index)


def action_check(*, annotation: Annotation, slot: str, action_json: dict | None, tau: int | None) -> dict:
    """Canonical string and problems of an editor action on the screen it belongs to (o_τ or o_{τ+1})."""
    if slot not in EDITOR_SLOTS:
        raise Invalid(f"unknown action slot '{slot}' (expected one of {', '.join(EDITOR_SLOTS)})")
    project = annotation.trace.project
    data = _editor_json(action_json, slot)
    if data is None:
        return {"canonical": "", "errors": ["choose an action type"], "valid": False}
    action = grammar.Action.from_json(data)
    errors = []
    if tau is None:
        errors.append("mark the first erroneous step τ first")
        shot = None
    else:
        shot = observation_for(annotation.trace, tau if slot == "corrected" else tau + 1)
    width, height = (shot.width, shot.height) if shot else (1000, 1000)
    errors += grammar.validate_action(
        action,
        convention=project.coordinate_convention,
        width=width,
        height=height,
        platform=project.platform,
        max_pixels=project.max_pixels,
    )
    errors += [e for e in grammar.target_problems(action, platform=project.platform) if e not in errors]
    if grammar.TARGET_BOX in data:
        errors += grammar.box_problems(
            action,
            data[grammar.TARGET_BOX],
            convention=project.coordinate_convention,
            width=width,
            height=height,
            max_pixels=project.max_pixels,
        )
    canonical = _render(action, project)
    # ``action``: the action as it would be stored (a box's centre filled in as the point), for the editor to show.
    return {"canonical": canonical, "errors": errors, "valid": not errors, "action": data}


def _clean_draft_fields(annotation: Annotation, fields: dict) -> dict:
    project = annotation.trace.project
    clean = {}
    for name, value in fields.items():
        if name not in DRAFT_FIELDS:
            raise Invalid(f"'{name}' is not an annotation field you can edit")
        if name == "editor_state":
            if not isinstance(value, dict) or set(value) - set(EDITOR_SLOTS):
                raise Invalid("editor_state must be an object with 'corrected' and/or 'reflection'")
            value = {slot: _editor_json(value.get(slot), slot) for slot in EDITOR_SLOTS}
            for slot in EDITOR_SLOTS:
                action = grammar.Action.from_json(value[slot]) if value[slot] else None
                box = editor_box(value, slot)
                # The one rule of action_check, refused already here: a point outside its own box is never stored.
                outside = grammar.box_point_problem(action, box) if action and box else None
                if outside:
                    raise Invalid(f"The {slot} action: {outside}", field=f"{slot}_action")
                clean[f"{slot}_action" if slot == "reflection" else "corrected_action"] = _render(action, project)
        else:
            value = clean_answer_field(annotation, name, value)  # a FieldProblem is an Invalid
        clean[name] = value
    return clean


# --- An answer consistent with its verdict -------------------------------------------------------

EMPTY_EDITOR = {slot: None for slot in EDITOR_SLOTS}
# The fields only a first error at τ may hold, with their empty values; and the reason only "unusable" keeps.
ERROR_ANSWER = {
    "tau": None,
    "error_category": "",
    "corrected_thought": "",
    "corrected_action": "",
    "reflection_thought": "",
    "reflection_action": "",
    "no_reflection_reason": "",
    "editor_state": EMPTY_EDITOR,
}
UNUSABLE_ANSWER = {"unusable_reason": ""}


def answer_for_verdict(verdict: str) -> dict:
    """The fields ``verdict`` does not allow, with the empty values they must hold.

    No error and unusable keep no τ, category, correction or post-reflection; only unusable keeps its reason.
    An undecided verdict keeps everything (nothing to contradict yet). Every write of an answer goes through
    ``_consistent_answer`` (drafts, submit, the demo) or ``review._apply_edits`` (a lead's edits, accept,
    adjudication); migration 0005 repaired the answers stored before the rule, with a frozen copy of it."""
    if verdict == Verdict.UNSET:
        return {}
    cleared: dict = {}
    if verdict != Verdict.ERROR:
        cleared.update(ERROR_ANSWER)
    if verdict != Verdict.UNUSABLE:
        cleared.update(UNUSABLE_ANSWER)
    return copy.deepcopy(cleared)  # callers store these values on a model: never hand out the shared constants


def _points(action_json: dict | None) -> dict:
    if not action_json:
        return {}
    points = {
        name: value
        for name, value in (action_json.get("args") or {}).items()
        if name in (grammar.START_BOX, grammar.END_BOX)
    }
    if action_json.get(grammar.TARGET_BOX) is not None:
        points[grammar.TARGET_BOX] = action_json[grammar.TARGET_BOX]
    return points


def _consistent_answer(annotation: Annotation, clean: dict) -> dict:
    """``clean`` plus what makes the resulting answer consistent: fields its verdict does not allow are emptied,
    and when τ moves, points placed on the old step's screenshot (unchanged in this write) are taken off."""
    values = {name: clean.get(name, getattr(annotation, name)) for name in (*DRAFT_FIELDS, *ERROR_ANSWER)}
    out = dict(clean)
    for name, empty in answer_for_verdict(values["verdict"]).items():
        if values[name] != empty:
            out[name] = empty
    old_tau, new_tau = annotation.tau, out.get("tau", annotation.tau)
    if values["verdict"] == Verdict.ERROR and old_tau is not None and new_tau is not None and new_tau != old_tau:
        state = dict(out.get("editor_state", annotation.editor_state) or EMPTY_EDITOR)
        stored = annotation.editor_state or {}
        moved = False
        for slot in EDITOR_SLOTS:
            action = state.get(slot)
            points = _points(action)
            if action and points and points == _points(stored.get(slot)):
                state[slot] = {
                    **{k: v for k, v in action.items() if k not in points},
                    "args": {k: v for k, v in action["args"].items() if k not in points},
                }
                moved = True
        if moved:
            out.update(_clean_draft_fields(annotation, {"editor_state": state}))
    return out


def _changes(annotation: Annotation, clean: dict) -> dict:
    return {
        name: [getattr(annotation, name), value] for name, value in clean.items() if getattr(annotation, name) != value
    }


def _lock_own_annotation(*, annotation_id: int, user) -> Annotation:
    """The user's own annotation in a project they still belong to, locked: the one read of a write."""
    return access_annotation(user, annotation_id, "annotation.work", lock=True)


@atomic_with_retry
def annotation_save_draft(*, annotation_id: int, user, base_version: int, fields: dict) -> Annotation:
    """Save the annotator's draft. A save based on an older version is refused with the newer one,
    unless it changes nothing (a retried save that already landed)."""
    annotation = _lock_own_annotation(annotation_id=annotation_id, user=user)
    if annotation.status not in EDITABLE_BY_ANNOTATOR:
        raise NotEditable(
            f"This annotation is {annotation.status}; it can no longer be edited.", **_conflict_fields(annotation)
        )
    clean = _consistent_answer(annotation, _clean_draft_fields(annotation, fields))
    changes = _changes(annotation, clean)
    if not changes:
        return annotation
    if base_version != annotation.version:
        raise StaleVersion(
            f"This annotation was changed elsewhere (version {annotation.version}; your edit was based on "
            f"version {base_version}). Nothing was overwritten: reload to see the newer version.",
            **_conflict_fields(annotation),
        )
    for name, value in clean.items():
        setattr(annotation, name, value)
    annotation.version += 1
    annotation.save(update_fields=[*clean, "version", "updated_at"])
    annotation_record_edit(annotation=annotation, actor=user, changes=changes)
    return annotation


def submit_problems(annotation: Annotation) -> dict[str, str]:
    """What stops ``annotation`` from going to review, field -> sentence ({} = ready)."""
    trace = annotation.trace
    problems: dict[str, str] = {}
    if awaits_instruction(trace):
        return {
            "instruction": "This trace has no instruction yet: a lead writes it on the trace page before it is annotated."
        }
    if trace.receiving:
        return {
            "trace": "This trace is still receiving steps from its runner: it is annotated once the runner ends it."
        }
    if annotation.verdict == Verdict.UNSET:
        return {"verdict": "Choose a verdict: the first error τ, no error, or unusable."}
    if annotation.verdict == Verdict.UNUSABLE:
        if not annotation.unusable_reason.strip():
            problems["unusable_reason"] = "Say why the trace is unusable."
        return problems
    if annotation.verdict == Verdict.NO_ERROR:
        return problems
    if annotation.tau is None or not 1 <= annotation.tau <= trace.step_count:
        return {"tau": f"Mark the first erroneous step τ (1..{trace.step_count})."}
    if not annotation.error_category:
        problems["error_category"] = "Choose an error category."
    if not annotation.corrected_thought.strip():
        problems["corrected_thought"] = "Write the corrected thought t*_τ."
    corrected = action_check(
        annotation=annotation,
        slot="corrected",
        action_json=annotation.editor_state.get("corrected"),
        tau=annotation.tau,
    )
    if not corrected["valid"]:
        problems["corrected_action"] = "Corrected action: " + "; ".join(corrected["errors"])
    if observation_for(trace, annotation.tau + 1) is None:
        return problems  # no o_{τ+1}: the reason is recorded on submit
    if annotation.no_reflection_reason.strip():
        return problems
    if not annotation.reflection_thought.strip():
        problems["reflection_thought"] = (
            "Write the post-reflection thought that acknowledges the mistake (or explain why there is none)."
        )
    reflection = action_check(
        annotation=annotation,
        slot="reflection",
        action_json=annotation.editor_state.get("reflection"),
        tau=annotation.tau,
    )
    if not reflection["valid"]:
        problems["reflection_action"] = "Post-reflection action: " + "; ".join(reflection["errors"])
    return problems


@atomic_with_retry
def annotation_submit(*, annotation_id: int, user, base_version: int) -> Annotation:
    """Validate and send the annotation to review; the lease is released and its time credited."""
    annotation = _lock_own_annotation(annotation_id=annotation_id, user=user)
    if annotation.status not in EDITABLE_BY_ANNOTATOR:
        raise NotEditable(f"This annotation is already {annotation.status}.", **_conflict_fields(annotation))
    if base_version != annotation.version:
        raise StaleVersion(
            f"This annotation was changed elsewhere (version {annotation.version}; you submitted version "
            f"{base_version}). Reload to see the newer version before submitting.",
            **_conflict_fields(annotation),
        )
    changes = _changes(annotation, _consistent_answer(annotation, {}))
    for name, (_, value) in changes.items():
        setattr(annotation, name, value)
    problems = submit_problems(annotation)
    if problems:
        raise SubmitRejected("The annotation is not complete: " + " ".join(problems.values()), errors=problems)
    tau = annotation.tau
    if (
        annotation.verdict == Verdict.ERROR
        and tau is not None
        and observation_for(annotation.trace, tau + 1) is None
        and not annotation.no_reflection_reason.strip()
    ):
        reason = (
            f"The trace has no screenshot after step {tau} (o_{tau + 1} was not kept), "
            "so no post-reflection step can be given."
        )
        changes["no_reflection_reason"] = [annotation.no_reflection_reason, reason]
        annotation.no_reflection_reason = reason
    now = timezone.now()
    _release_user_leases(trace_id=annotation.trace_id, user=user, reason="submitted", now=now)
    annotation.refresh_from_db(fields=["time_spent_s"])
    return annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=user, changes=changes)


@atomic_with_retry
def annotation_skip(*, annotation_id: int, user) -> Annotation:
    """Give the trace back to the pool; the draft stays the annotator's."""
    annotation = _lock_own_annotation(annotation_id=annotation_id, user=user)
    _release_user_leases(trace_id=annotation.trace_id, user=user, reason="skipped", now=timezone.now())
    return annotation


# --- Demo data -------------------------------------------------------------------------------


def _demo_user(role: str):
    """The demo world's user of ``role`` (studio.demo names them after their role)."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.filter(groups__name=role).order_by("pk")
    return users.filter(username=role).first() or users.filter(groups__name="demo").first() or users.first()


@atomic_with_retry
def annotation_seed_demo(*, project, external_id: str, annotation: dict) -> int:
    """An ACCEPTED demo annotation of a demo trace, made through the real transitions (1 if created)."""
    trace = Trace.objects.select_related("project").get(project=project, external_id=external_id)
    annotator, lead = _demo_user("annotator"), _demo_user("lead")
    if annotator is None or lead is None:
        raise Invalid("the demo needs an annotator and a lead user")
    if Annotation.objects.filter(trace=trace, annotator=annotator).exists():
        return 0
    record = Annotation.objects.create(trace=trace, project_id=trace.project_id, annotator=annotator)
    verdict = annotation.get("verdict") or Verdict.NO_ERROR
    fields = {
        "verdict": verdict,
        "tau": annotation.get("tau"),
        "error_category": annotation.get("error_category") or "",
        "note": annotation.get("note") or "",
        "corrected_thought": annotation.get("corrected_thought") or "",
        "reflection_thought": annotation.get("reflection_thought") or "",
        "unusable_reason": annotation.get("unusable_reason") or "",
        "no_reflection_reason": annotation.get("no_reflection_reason") or "",
    }
    state = {}
    for slot, key in (("corrected", "corrected_action"), ("reflection", "reflection_action")):
        text = annotation.get(key) or ""
        state[slot] = grammar.parse_action(text).to_json() if text else None
    fields["editor_state"] = state
    clean = _consistent_answer(record, _clean_draft_fields(record, fields))
    for name, value in clean.items():
        setattr(record, name, value)
    record.save()
    annotation_record_edit(annotation=record, actor=annotator, changes={k: [None, v] for k, v in clean.items() if v})
    problems = submit_problems(record)
    if problems:
        raise Invalid(f"demo annotation of {external_id} is incomplete: {problems}")
    annotation_transition(annotation=record, to=AnnotationStatus.SUBMITTED, actor=annotator)
    annotation_transition(annotation=record, to=AnnotationStatus.ACCEPTED, actor=lead, comment="Demo: accepted.")
    return 1
