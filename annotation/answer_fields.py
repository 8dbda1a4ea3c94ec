"""The rules of an annotation's answer fields, once: the draft save (services.drafts._clean_draft_fields) and a lead's
review edits (review._clean_edits) both pass each field through :func:`clean_answer_field`; a
:class:`FieldProblem` is an Invalid (a 400 on every surface), which review re-raises as its ReviewError with the same
message."""

from __future__ import annotations

from django.utils.translation import gettext

from annotation.models import Annotation, Verdict
from studio.errors import Invalid
from traces import grammar

ACTION_TEXT_FIELDS = ("corrected_action", "reflection_action")


class FieldProblem(Invalid):
    """One answer field's value breaks its rule; the message names the field and the rule."""


def clean_answer_field(annotation: Annotation, name: str, value):
    """``value`` for field ``name`` as stored, or :class:`FieldProblem`.

    verdict: one of the verdicts; tau: empty → None, else a step of the trace; error_category: one of the project's
    categories (any text when the project lists none); the two action texts: parsed by the grammar and rendered
    canonically in the project's box style; every other field: text."""
    trace = annotation.trace
    if name == "verdict":
        if value not in Verdict.values:
            raise FieldProblem(
                gettext("verdict must be one of %(verdicts)s")
                % {"verdicts": ", ".join(v or gettext("(blank)") for v in Verdict.values)}
            )
        return value
    if name == "tau":
        if value in (None, ""):
            return None
        try:
            tau = int(value)
        except (TypeError, ValueError):
            raise FieldProblem(gettext("tau must be a step number, not %(value)s") % {"value": repr(value)}) from None
        if not 1 <= tau <= trace.step_count:
            raise FieldProblem(
                gettext("tau must lie between 1 and %(count)s: %(tau)s is outside the trace's steps 1..%(count)s")
                % {"count": trace.step_count, "tau": tau}
            )
        return tau
    if not isinstance(value, str):
        raise FieldProblem(gettext("%(field)s must be text") % {"field": name})
    if name == "error_category":
        categories = trace.project.error_categories or []
        if value and categories and value not in categories:
            raise FieldProblem(
                gettext("error category %(category)s is not one of this project's categories")
                % {"category": repr(value)}
            )
        return value
    if name in ACTION_TEXT_FIELDS and value.strip():
        try:
            return grammar.render_action(grammar.parse_action(value.strip()), box_tokens=trace.project.box_tokens)
        except grammar.ActionSyntaxError as exc:
            raise FieldProblem(f"{name.replace('_', ' ')}: {exc}") from None
    return value
