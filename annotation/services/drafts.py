"""An annotator's answer: drafts saved with a version check, the action check, submit and skip."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from annotation.access import access_annotation
from annotation.answer_fields import clean_answer_field
from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.quality import services as quality
from annotation.selectors import (
    gap_after_reason,
    observations,
    server_no_reflection_reason,
    steps_dropped_before,
)
from annotation.services.errors import NotEditable, SkipRefused, StaleVersion, SubmitRejected, _conflict_fields
from annotation.services.leases import (
    _release_user_leases,
)
from annotation.services.transitions import (
    annotation_record_edit,
    annotation_transition,
)
from annotation.workflow import EDITABLE_BY_ANNOTATOR
from studio import metrics
from studio.db import atomic_with_retry, row_update
from studio.errors import Invalid
from traces import grammar
from traces.models import Trace
from traces.selectors import awaits_instruction

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.models import Project, Screenshot

# The words a message names a state by, for the catalog (the messages translate them when raised).
gettext_noop("draft")
gettext_noop("submitted")
gettext_noop("accepted")
gettext_noop("rejected")


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


def _editor_json(data: Any, slot: str) -> dict | None:
    """An editor action object as stored: the grammar's JSON of the action plus, when drawn, the element box of its
    target (``grammar.TARGET_BOX``, normalised, in the project's convention). Points and box edges are integers, as a
    model emits them (``grammar.round_action`` / ``round_box``: what the check shows is what is trained). A box
    without a point gives the point the box's centre."""
    if not data:
        return None
    try:
        action, _ = grammar.round_action(grammar.Action.from_json(data))
        raw_box = data.get(grammar.TARGET_BOX)
        if raw_box is None:
            return action.to_json()
        box = grammar.round_box(grammar.box_of(raw_box))
    except (TypeError, ValueError) as exc:
        raise Invalid(
            gettext("The %(slot)s action is malformed: %(problem)s") % {"slot": slot, "problem": exc}
        ) from None
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


def _render(action: grammar.Action | None, project: Project) -> str:
    if action is None:
        return ""
    try:
        return grammar.render_action(action, box_tokens=project.box_tokens)
    except TypeError as exc:
        raise Invalid(
            gettext("The %(slot)s action is malformed: %(problem)s") % {"slot": action.type, "problem": exc}
        ) from None


def observation_for(trace: Trace, index: int) -> Screenshot | None:
    """The screenshot o_index (1-based); o_{n+1} is the trace's final screenshot when it was kept."""
    return observations(trace, trace.steps.select_related("screenshot").filter(index=index)).get(index)


def dropped_after(trace: Trace, tau: int) -> int:
    """How many steps the source dropped right after step ``tau`` (before step τ+1): then step τ+1's screen is not
    o_{τ+1} and no post-reflection can be given (``gap_after_reason``)."""
    return steps_dropped_before(trace.steps.filter(index=tau + 1).only("context").first())


def action_check(*, annotation: Annotation, slot: str, action_json: dict | None, tau: int | None) -> dict:
    """Canonical string and problems of an editor action on the screen it belongs to (o_τ or o_{τ+1})."""
    if slot not in EDITOR_SLOTS:
        raise Invalid(
            gettext("unknown action slot '%(slot)s' (expected one of %(slots)s)")
            % {"slot": slot, "slots": ", ".join(EDITOR_SLOTS)}
        )
    project = annotation.trace.project
    data = _editor_json(action_json, slot)
    if data is None:
        return {"canonical": "", "errors": [gettext("choose an action type")], "valid": False}
    action = grammar.Action.from_json(data)
    errors = []
    if tau is None:
        errors.append(gettext("mark the first erroneous step τ first"))
        shot = None
    else:
        shot = observation_for(annotation.trace, tau if slot == "corrected" else tau + 1)
        if slot == "reflection":
            gap = gap_after_reason(tau, dropped_after(annotation.trace, tau))
            if gap:
                errors.append(gap[0].lower() + gap[1:])
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
            raise Invalid(gettext("'%(name)s' is not an annotation field you can edit") % {"name": name})
        if name == "editor_state":
            if not isinstance(value, dict) or set(value) - set(EDITOR_SLOTS):
                raise Invalid(gettext("editor_state must be an object with 'corrected' and/or 'reflection'"))
            value = {slot: _editor_json(value.get(slot), slot) for slot in EDITOR_SLOTS}
            for slot in EDITOR_SLOTS:
                action = grammar.Action.from_json(value[slot]) if value[slot] else None
                box = editor_box(value, slot)
                # The one rule of action_check, refused already here: a point outside its own box is never stored.
                outside = grammar.box_point_problem(action, box) if action and box else None
                if outside:
                    raise Invalid(
                        gettext("The %(slot)s action: %(problem)s") % {"slot": slot, "problem": outside},
                        field=f"{slot}_action",
                    )
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


def _without(action: dict, stale: set) -> dict:
    return {
        **{k: v for k, v in action.items() if k not in stale},
        "args": {k: v for k, v in (action.get("args") or {}).items() if k not in stale},
    }


def answer_after_tau_move(annotation: Annotation, clean: dict, *, given: frozenset | set = frozenset()) -> dict:
    """The one τ rule: a point or element box belongs to the screenshot it was placed on (the corrected action's to
    o_τ, the post-reflection's to o_{τ+1}). When ``clean`` (a write's cleaned fields) moves τ of an error answer, each
    point and box this write leaves as stored was placed for the old τ: it is taken off. Returns the fields to write
    for that (the editor state and the re-rendered action texts; {} when nothing moved). ``given``: the slots whose
    action the write itself gives with the move (a lead's edit naming it): their points are the new τ's, even where
    one equals the old.

    Every path that changes τ calls this: a draft stores the answer without them (the annotator places them again),
    a lead's edit (review._apply_edits: edit-and-accept, adjudicate) is refused when an action is left without the
    point it needs, and a restored version passes through the draft's write. ``tau_moved_points`` (a command) finds
    accepted answers written before the rule."""
    verdict = clean.get("verdict", annotation.verdict)
    old_tau, new_tau = annotation.tau, clean.get("tau", annotation.tau)
    if verdict != Verdict.ERROR or old_tau is None or new_tau is None or new_tau == old_tau:
        return {}
    state = dict(clean.get("editor_state", annotation.editor_state) or EMPTY_EDITOR)
    stored = annotation.editor_state or {}
    moved = False
    for slot in EDITOR_SLOTS:
        if slot in given:
            continue
        action, before = state.get(slot), _points(stored.get(slot))
        stale = {name for name, value in _points(action).items() if before.get(name) == value}
        if action and stale:
            state[slot] = _without(action, stale)
            moved = True
    return _clean_draft_fields(annotation, {"editor_state": state}) if moved else {}


def _consistent_answer(annotation: Annotation, clean: dict) -> dict:
    """``clean`` plus what makes the resulting answer consistent: fields its verdict does not allow are emptied,
    and when τ moves, points placed on the old step's screenshot (unchanged in this write) are taken off."""
    values = {name: clean.get(name, getattr(annotation, name)) for name in (*DRAFT_FIELDS, *ERROR_ANSWER)}
    out = dict(clean)
    for name, empty in answer_for_verdict(values["verdict"]).items():
        if values[name] != empty:
            out[name] = empty
    out.update(answer_after_tau_move(annotation, out))
    return out


def _changes(annotation: Annotation, clean: dict) -> dict:
    return {
        name: [getattr(annotation, name), value] for name, value in clean.items() if getattr(annotation, name) != value
    }


def _lock_own_annotation(*, annotation_id: int, user: User) -> Annotation:
    """The user's own annotation in a project they still belong to, locked: the one read of a write."""
    return access_annotation(user, annotation_id, "annotation.work", lock=True)


@atomic_with_retry
def annotation_save_draft(*, annotation_id: int, user: User, base_version: int, fields: dict) -> Annotation:
    """Save the annotator's draft. A save based on an older version is refused with the newer one,
    unless it changes nothing (a retried save that already landed)."""
    annotation = _lock_own_annotation(annotation_id=annotation_id, user=user)
    if annotation.status not in EDITABLE_BY_ANNOTATOR:
        raise NotEditable(
            gettext("This annotation is %(status)s; it can no longer be edited.")
            % {"status": gettext(annotation.status)},
            **_conflict_fields(annotation),
        )
    return answer_write(annotation=annotation, user=user, base_version=base_version, fields=fields)


def answer_write(
    *, annotation: Annotation, user: User, base_version: int, fields: dict, comment: str = ""
) -> Annotation:
    """The one write of an answer on a locked annotation (a draft save, a restored version): the fields' rules, the
    verdict and τ rules, the version check (a write that changes nothing passes: a retried save that already
    landed), the version bump and the audit row."""
    clean = _consistent_answer(annotation, _clean_draft_fields(annotation, fields))
    changes = _changes(annotation, clean)
    if not changes:
        return annotation
    if base_version != annotation.version:
        metrics.draft_saves.labels("conflict").inc()
        raise StaleVersion(
            gettext(
                "This annotation was changed elsewhere (version %(current)s; your edit was based on version "
                "%(base)s). Nothing was overwritten: reload to see the newer version."
            )
            % {"current": annotation.version, "base": base_version},
            **_conflict_fields(annotation),
        )
    for name, value in clean.items():
        setattr(annotation, name, value)
    annotation.version += 1
    # The save's UPDATE compiled once (the same signals and row as annotation.save(update_fields=...)).
    row_update(annotation, [*clean, "version", "updated_at"])
    annotation_record_edit(annotation=annotation, actor=user, changes=changes, comment=comment)
    metrics.draft_saves.labels("saved").inc()
    return annotation


def submit_problems(annotation: Annotation) -> dict[str, str]:
    """What stops ``annotation`` from going to review, field -> sentence ({} = ready)."""
    trace = annotation.trace
    problems: dict[str, str] = {}
    if awaits_instruction(trace):
        return {
            "instruction": gettext(
                "This trace has no instruction yet: a lead writes it on the trace page before it is annotated."
            )
        }
    if trace.receiving:
        return {
            "trace": gettext(
                "This trace is still receiving steps from its runner: it is annotated once the runner ends it."
            )
        }
    if annotation.verdict == Verdict.UNSET:
        return {"verdict": gettext("Choose a verdict: the first error τ, no error, or unusable.")}
    if annotation.verdict == Verdict.UNUSABLE:
        if not annotation.unusable_reason.strip():
            problems["unusable_reason"] = gettext("Say why the trace is unusable.")
        return problems
    if annotation.verdict == Verdict.NO_ERROR:
        return problems
    if annotation.tau is None or not 1 <= annotation.tau <= trace.step_count:
        return {"tau": gettext("Mark the first erroneous step τ (1..%(count)s).") % {"count": trace.step_count}}
    if not annotation.error_category:
        problems["error_category"] = gettext("Choose an error category.")
    if not annotation.corrected_thought.strip():
        problems["corrected_thought"] = gettext("Write the corrected thought t*_τ.")
    corrected = action_check(
        annotation=annotation,
        slot="corrected",
        action_json=annotation.editor_state.get("corrected"),
        tau=annotation.tau,
    )
    if not corrected["valid"]:
        problems["corrected_action"] = gettext("Corrected action: %(problems)s") % {
            "problems": "; ".join(corrected["errors"])
        }
    if observation_for(trace, annotation.tau + 1) is None:
        return problems  # no o_{τ+1}: the reason is recorded on submit
    gap = gap_after_reason(annotation.tau, dropped_after(trace, annotation.tau))
    if gap:
        # Step τ+1's screen is not o_{τ+1}: a post-reflection there would train on the wrong screen, so it is refused
        # (whatever reason is given beside it); without one, the reason is recorded on submit.
        if annotation.reflection_action.strip() or annotation.reflection_thought.strip():
            problems["reflection_action"] = gettext("Post-reflection: %(gap)s Clear it.") % {"gap": gap}
        return problems
    if annotation.no_reflection_reason.strip():
        return problems
    if not annotation.reflection_thought.strip():
        problems["reflection_thought"] = gettext(
            "Write the post-reflection thought that acknowledges the mistake (or explain why there is none)."
        )
    reflection = action_check(
        annotation=annotation,
        slot="reflection",
        action_json=annotation.editor_state.get("reflection"),
        tau=annotation.tau,
    )
    if not reflection["valid"]:
        problems["reflection_action"] = gettext("Post-reflection action: %(problems)s") % {
            "problems": "; ".join(reflection["errors"])
        }
    return problems


@atomic_with_retry
def annotation_submit(*, annotation_id: int, user: User, base_version: int) -> Annotation:
    """Validate and send the annotation to review; the lease is released and its time credited."""
    annotation = _lock_own_annotation(annotation_id=annotation_id, user=user)
    if annotation.status not in EDITABLE_BY_ANNOTATOR:
        raise NotEditable(
            gettext("This annotation is already %(status)s.") % {"status": gettext(annotation.status)},
            **_conflict_fields(annotation),
        )
    if base_version != annotation.version:
        raise StaleVersion(
            gettext(
                "This annotation was changed elsewhere (version %(current)s; you submitted version %(base)s). "
                "Reload to see the newer version before submitting."
            )
            % {"current": annotation.version, "base": base_version},
            **_conflict_fields(annotation),
        )
    changes = _changes(annotation, _consistent_answer(annotation, {}))
    for name, (_, value) in changes.items():
        setattr(annotation, name, value)
    problems = submit_problems(annotation)
    if problems:
        raise SubmitRejected(
            gettext("The annotation is not complete: %(problems)s") % {"problems": " ".join(problems.values())},
            errors=problems,
        )
    tau = annotation.tau
    if annotation.verdict == Verdict.ERROR and tau is not None and not annotation.no_reflection_reason.strip():
        reason = server_no_reflection_reason(
            tau, observation_for(annotation.trace, tau + 1), dropped_after(annotation.trace, tau)
        )
        if reason:
            changes["no_reflection_reason"] = [annotation.no_reflection_reason, reason]
            annotation.no_reflection_reason = reason
    now = timezone.now()
    _release_user_leases(trace_id=annotation.trace_id, user=user, reason="submitted", now=now)
    annotation.refresh_from_db(fields=["time_spent_s"])
    annotation = annotation_transition(
        annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=user, changes=changes
    )
    # In the submit's transaction, in a savepoint of its own: a gold answer is scored now, a production answer
    # counts in the annotator's "no error" streak; neither can cost the submit.
    quality.answer_submitted(annotation=annotation)
    return annotation


@atomic_with_retry
def annotation_skip(*, annotation_id: int, user: User) -> Annotation:
    """Give the trace back to the pool; the draft stays the annotator's. A qualification answer is not skipped
    (``quality.skip_refusal``, a 409); a gold answer's skip is scored as a wrong answer (``gold_answer_skipped``)."""
    annotation = _lock_own_annotation(annotation_id=annotation_id, user=user)
    refusal = quality.skip_refusal(annotation)
    if refusal:
        raise SkipRefused(refusal, **_conflict_fields(annotation))
    _release_user_leases(trace_id=annotation.trace_id, user=user, reason="skipped", now=timezone.now())
    quality.gold_answer_skipped(annotation=annotation)
    return annotation


# --- Demo data -------------------------------------------------------------------------------


def _demo_user(role: str) -> User | None:
    """The demo world's user of ``role`` (studio.demo names them after their role)."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects.filter(groups__name=role).order_by("pk")
    return users.filter(username=role).first() or users.filter(groups__name="demo").first() or users.first()


@atomic_with_retry
def annotation_seed_demo(
    *,
    project: Project,
    external_id: str,
    annotation: dict,
    annotator_name: str = "",
    accept: bool = True,
    time_spent_s: int = 0,
) -> int:
    """A demo annotation of a demo trace by the demo annotator (or the user ``annotator_name``), submitted and, with
    ``accept``, accepted, through the real transitions, with ``time_spent_s`` as the time it took (1 if created)."""
    trace = Trace.objects.select_related("project").get(project=project, external_id=external_id)
    annotator, lead = _demo_user("annotator"), _demo_user("lead")
    if annotator_name:
        from django.contrib.auth import get_user_model

        annotator = get_user_model().objects.filter(username=annotator_name).first()
    if annotator is None or lead is None:
        raise Invalid("the demo needs an annotator and a lead user")
    if Annotation.objects.filter(trace=trace, annotator=annotator).exists():
        return 0
    record = Annotation.objects.create(
        trace=trace, project_id=trace.project_id, annotator=annotator, time_spent_s=time_spent_s
    )
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
    if accept:
        annotation_transition(annotation=record, to=AnnotationStatus.ACCEPTED, actor=lead, comment="Demo: accepted.")
    return 1
