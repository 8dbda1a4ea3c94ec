"""A lead's decisions on submitted annotations: accept, reject with a comment, edit and accept, adjudicate.
(Releasing an annotator's lease is annotation.services.lease_release_by, the one release path.)

Each decision is one transaction: the annotation row is locked (select_for_update) so two leads cannot decide
the same version twice, the change and its audit record are written together (annotation_transition /
annotation_record_edit), and the live event goes out after commit (annotation.events).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext, gettext_noop

from annotation import events
from annotation.answer_fields import FieldProblem, clean_answer_field
from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.quality import services as quality
from annotation.quality.rollup import answer_rollup_update
from annotation.services import (
    action_check,
    annotation_record_edit,
    annotation_transition,
    answer_after_tau_move,
    answer_for_verdict,
    editor_box,
)
from studio.access import access
from studio.db import atomic_with_retry
from studio.errors import Conflict, Invalid
from traces import grammar

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# What a lead may change when editing before accepting: the annotator's answer, never bookkeeping.
REVIEW_EDITABLE_FIELDS = (
    "verdict",
    "tau",
    "error_category",
    "note",
    "unusable_reason",
    "corrected_thought",
    "corrected_action",
    "reflection_thought",
    "reflection_action",
    "no_reflection_reason",
)
# States from which an annotation can be the adjudicated answer of its trace.
ADJUDICABLE = frozenset({AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED})


# The words the messages below name an action or a part by (translated when raised).
REVIEW_WORDS = (gettext_noop("accepted"), gettext_noop("rejected"), gettext_noop("edited and accepted"))


class ReviewError(Invalid):
    """A decision that cannot be taken as asked; the message names the problem (an Invalid kind: a 400)."""


def _locked_annotation(annotation_id: int, actor: User) -> Annotation:
    """The annotation, locked, if ``actor`` reviews in its project (studio.access: 404 outside, 403 for a role)."""
    return access(
        actor,
        Annotation.objects.select_related("trace__project", "annotator"),
        annotation_id,
        "annotation.review",
        lock=True,
    )


class ReviewConflict(Conflict):
    """The annotation changed since the lead opened it: a 409 with ``current`` (the version now), as the workspace
    answers a stale draft."""


def _check_version(annotation: Annotation, expected_version: int | None) -> None:
    if expected_version is not None and expected_version != annotation.version:
        raise ReviewConflict(
            gettext(
                "annotation %(id)s changed since you opened it (version %(current)s, you saw %(seen)s); reload and "
                "review again"
            )
            % {"id": annotation.pk, "current": annotation.version, "seen": expected_version},
            current_version=annotation.version,
        )


def _require_submitted(annotation: Annotation, verb: str) -> None:
    if annotation.status != AnnotationStatus.SUBMITTED:
        raise ReviewError(
            gettext("only a submitted annotation can be %(verb)s; annotation %(id)s is %(status)s")
            % {"verb": gettext(verb), "id": annotation.pk, "status": gettext(annotation.status)}
        )


# A lead's edit of a slot's element box: "" (or null) takes it off, [x1, y1, x2, y2] (or its JSON text) replaces it.
REVIEW_BOX_FIELDS = {"corrected_box": "corrected", "reflection_box": "reflection"}


def _box_edit(name: str, value: Any) -> list | None:
    if value in (None, ""):
        return None
    try:
        return list(grammar.box_of(json.loads(value) if isinstance(value, str) else value))
    except (TypeError, ValueError) as exc:
        raise ReviewError(f"{name.replace('_', ' ')}: {exc}") from None


def _clean_edits(annotation: Annotation, edits: dict) -> dict:
    """Validate a lead's edits against the trace and the action grammar; returns field -> new value."""
    edits = dict(edits)
    boxes = {REVIEW_BOX_FIELDS[n]: _box_edit(n, edits.pop(n)) for n in list(edits) if n in REVIEW_BOX_FIELDS}
    unknown = sorted(set(edits) - set(REVIEW_EDITABLE_FIELDS))
    if unknown:
        raise ReviewError(
            gettext("these fields cannot be edited in review: %(fields)s") % {"fields": ", ".join(unknown)}
        )
    try:
        cleaned = {name: clean_answer_field(annotation, name, value) for name, value in edits.items()}
    except FieldProblem as problem:
        raise ReviewError(str(problem)) from None
    verdict = cleaned.get("verdict", annotation.verdict)
    tau = cleaned.get("tau", annotation.tau)
    if verdict == Verdict.ERROR and tau is None:
        raise ReviewError(gettext("a verdict of error needs the first erroneous step tau"))
    # The answer as stored once τ is where the lead puts it: a box drawn for the old τ does not follow a new action.
    stored_state = answer_after_tau_move(annotation, {"verdict": verdict, "tau": tau}).get(
        "editor_state", annotation.editor_state
    )
    # An action given with a move of τ is the lead's, placed on the new τ's screens, even when its text is the
    # annotator's (the lead typed the point again where it was): it replaces the editor's action of the old τ.
    tau_moves = verdict == Verdict.ERROR and annotation.tau is not None and tau != annotation.tau
    if verdict == Verdict.ERROR:
        # The lead's actions pass the check the annotator's editor and submit use (the platform's action space,
        # the prompt's rules, the screen's bounds on o_τ / o_τ+1): a rule that exists once.
        for slot, field, label in (
            ("corrected", "corrected_action", "corrected action"),
            ("reflection", "reflection_action", "post-reflection action"),
        ):
            text = cleaned.get(field, getattr(annotation, field))
            if (field in cleaned or slot in boxes) and text:
                # The element box drawn for this slot stays with the lead's action (unless the lead's edit replaces
                # or takes it off): its point must lie inside it.
                action_json = grammar.parse_action(text).to_json()
                box = boxes[slot] if slot in boxes else editor_box(stored_state, slot)
                if box is not None:
                    action_json[grammar.TARGET_BOX] = list(box)
                check = action_check(annotation=annotation, slot=slot, action_json=action_json, tau=tau)
                if not check["valid"]:
                    raise ReviewError(f"{gettext(label)}: {'; '.join(check['errors'])}")
                if grammar.round_action(grammar.parse_action(text))[1]:
                    # A point typed with decimals is stored as the check rounded it: the integer that is trained.
                    cleaned[field] = check["canonical"]
                if text != getattr(annotation, field) or slot in boxes or tau_moves:
                    state = dict(cleaned.get("editor_state", annotation.editor_state) or {})
                    state[slot] = check["action"]
                    cleaned["editor_state"] = state
    return cleaned


SLOT_WORDS = {
    "corrected": (gettext_noop("corrected action"), 0),
    "reflection": (gettext_noop("post-reflection action"), 1),
}


def actions_given(edits: dict) -> set:
    """The slots whose action a lead's ``edits`` give (their text or their box): placed for the τ the edit sets. The
    review page sends an action only once the lead has edited it (static/js/review/edit_form.js)."""
    return {slot for slot, field in ACTION_FIELDS.items() if edits.get(field)} | {
        slot for name, slot in REVIEW_BOX_FIELDS.items() if name in edits
    }


ACTION_FIELDS = {"corrected": "corrected_action", "reflection": "reflection_action"}


def _refuse_actions_left_without_points(annotation: Annotation, cleaned: dict, moved: dict) -> None:
    """The τ rule (services.answer_after_tau_move) took off points placed for the old τ: an accepted answer cannot
    keep an action that lost the point it needs, so the lead's edit is refused unless it places a new one."""
    old_tau, new_tau = annotation.tau, cleaned["tau"]
    if old_tau is None or new_tau is None:
        return  # no τ moved, so no point was taken off (answer_after_tau_move)
    for slot, (label, offset) in SLOT_WORDS.items():
        action = moved["editor_state"].get(slot)
        if not action or action == (cleaned.get("editor_state") or annotation.editor_state or {}).get(slot):
            continue
        check = action_check(annotation=annotation, slot=slot, action_json=action, tau=new_tau)
        if not check["valid"]:
            raise ReviewError(
                gettext(
                    "τ moved from %(old)s to %(new)s: the %(label)s's point was placed on step %(placed)s's "
                    "screenshot, not step %(wanted)s's; place the %(label)s again on step %(wanted)s (or keep τ "
                    "%(old)s)"
                )
                % {
                    "old": old_tau,
                    "new": new_tau,
                    "label": gettext(label),
                    "placed": old_tau + offset,
                    "wanted": new_tau + offset,
                }
            )


def _apply_edits(annotation: Annotation, actor: User, edits: dict) -> dict:
    changes = {}
    cleaned = _clean_edits(annotation, edits)
    # The lead's answer obeys the verdict rule like the annotator's (no τ or correction on "no error").
    cleaned.update(answer_for_verdict(cleaned.get("verdict", annotation.verdict)))
    # And the τ rule: points and boxes placed for the old τ do not stay on a moved τ (those the edit gives are new).
    moved = answer_after_tau_move(annotation, cleaned, given=actions_given(edits))
    if moved:
        _refuse_actions_left_without_points(annotation, cleaned, moved)
        cleaned.update(moved)
    for field, value in cleaned.items():
        before = getattr(annotation, field)
        if before != value:
            changes[field] = [before, value]
            setattr(annotation, field, value)
    if changes:
        annotation.version += 1
        annotation.save()
        annotation_record_edit(annotation=annotation, actor=actor, changes=changes)
        answer_rollup_update(annotation=annotation)
    return changes


@atomic_with_retry
def review_accept(
    *, annotation_id: int, actor: User, comment: str = "", expected_version: int | None = None
) -> Annotation:
    annotation = _locked_annotation(annotation_id, actor)
    _check_version(annotation, expected_version)
    _require_submitted(annotation, "accepted")
    # What is accepted is what the review page showed: the answer as its verdict allows (an answer stored
    # before the rule, with a τ on "no error", loses that τ here, audited).
    _apply_edits(annotation, actor, {})
    annotation_transition(annotation=annotation, to=AnnotationStatus.ACCEPTED, actor=actor, comment=comment.strip())
    # A gold reference sent back, changed and accepted again re-scores its trace's gold answers.
    quality.gold_reference_refresh(annotation=annotation, actor=actor)
    return annotation


@atomic_with_retry
def review_reject(*, annotation_id: int, actor: User, comment: str, expected_version: int | None = None) -> Annotation:
    """Send the annotation back to its annotator, whose queue shows the comment."""
    comment = (comment or "").strip()
    if not comment:
        raise ReviewError(gettext("a rejection needs a comment telling the annotator what to fix"))
    annotation = _locked_annotation(annotation_id, actor)
    _check_version(annotation, expected_version)
    _require_submitted(annotation, "rejected")
    annotation_transition(annotation=annotation, to=AnnotationStatus.REJECTED, actor=actor, comment=comment)
    return annotation


@atomic_with_retry
def review_edit_and_accept(
    *, annotation_id: int, actor: User, edits: dict, comment: str = "", expected_version: int | None = None
) -> Annotation:
    """The lead fixes the answer and accepts it: one edit record (field -> [before, after]), then the transition."""
    annotation = _locked_annotation(annotation_id, actor)
    _check_version(annotation, expected_version)
    _require_submitted(annotation, "edited and accepted")
    _apply_edits(annotation, actor, edits)
    annotation_transition(annotation=annotation, to=AnnotationStatus.ACCEPTED, actor=actor, comment=comment.strip())
    quality.gold_reference_refresh(annotation=annotation, actor=actor)
    return annotation


@atomic_with_retry
def review_adjudicate(*, annotation_id: int, actor: User, edits: dict | None = None, comment: str = "") -> Annotation:
    """Make one of a trace's independent annotations its answer (the one exported): it is marked adjudicated,
    optionally edited, and accepted if still submitted; the trace's other annotations lose the mark."""
    annotation = _locked_annotation(annotation_id, actor)
    if annotation.status not in ADJUDICABLE:
        raise ReviewError(
            gettext("annotation %(id)s is %(status)s; only a submitted or accepted one can be adjudicated")
            % {"id": annotation.pk, "status": gettext(annotation.status)}
        )
    siblings = list(
        Annotation.objects.select_for_update()
        .filter(trace_id=annotation.trace_id, is_adjudicated=True)
        .exclude(pk=annotation.pk)
    )
    for other in siblings:
        other.is_adjudicated = False
        other.version += 1
        other.save(update_fields=["is_adjudicated", "version", "updated_at"])
        annotation_record_edit(annotation=other, actor=actor, changes={"is_adjudicated": [True, False]})
    _apply_edits(annotation, actor, edits or {})
    if not annotation.is_adjudicated:
        annotation.is_adjudicated = True
        annotation.version += 1
        annotation.save()
        annotation_record_edit(annotation=annotation, actor=actor, changes={"is_adjudicated": [False, True]})
    if annotation.status == AnnotationStatus.SUBMITTED:
        annotation_transition(
            annotation=annotation, to=AnnotationStatus.ACCEPTED, actor=actor, comment=comment.strip() or "adjudicated"
        )
    # A gold trace's reference changed by adjudication re-scores the answers scored against it (audited).
    quality.gold_reference_refresh(annotation=annotation, actor=actor)
    events.annotation_changed(annotation=annotation, verb="adjudicated")
    return annotation
