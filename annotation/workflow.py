"""The annotation state machine: one table, one function. Services call ``check_transition`` only."""

from __future__ import annotations

from django.utils.translation import gettext

from annotation.models import AnnotationStatus as S
from studio.errors import Conflict

# (from, to) -> roles' verb that performs it
ANNOTATION_TRANSITIONS: dict[tuple[str, str], str] = {
    (S.DRAFT, S.SUBMITTED): "submit",
    (S.REJECTED, S.SUBMITTED): "resubmit",
    (S.SUBMITTED, S.ACCEPTED): "accept",
    (S.SUBMITTED, S.REJECTED): "reject",
    (S.ACCEPTED, S.REJECTED): "reopen",
}

# Where the annotator may still edit their own work.
EDITABLE_BY_ANNOTATOR = frozenset({S.DRAFT, S.REJECTED})

# Answers that stand: handed in and not sent back. Agreement compares them; Trace.standing_annotations counts them.
STANDING = frozenset({S.SUBMITTED, S.ACCEPTED})


class TransitionError(Conflict):
    """A move the state machine does not have: the annotation is no longer in a state that allows it."""


def check_transition(current: str, target: str) -> str:
    """Return the verb of the move current → target, or raise TransitionError naming both."""
    try:
        return ANNOTATION_TRANSITIONS[(current, target)]
    except KeyError:
        raise TransitionError(
            gettext("an annotation that is %(current)s cannot become %(target)s")
            % {"current": current, "target": target}
        ) from None
