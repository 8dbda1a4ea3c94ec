"""What the feedback page reads beside ``annotation.quality.selectors``: the stored comparison set out as rows, the
answer beside the reference part by part (nothing is compared here: the parts' outcomes and words are the
comparison's)."""

from __future__ import annotations

from annotation.selectors import verdict_words
from traces import grammar

# What each part shows of the two answers (the comparison's ``answer`` / ``reference`` dicts).
_NONE = "—"


def _action_type(text: str) -> str:
    try:
        action = grammar.parse_action(text) if text and text.strip() else None
    except grammar.ActionSyntaxError:
        return text
    return action.type if action is not None else _NONE


def _step(answer: dict) -> str:
    return f"step {answer['tau']}" if answer.get("tau") else "no first error"


def _point_words(answer: dict) -> str:
    action = answer.get("corrected_action") or ""
    if not action:
        return _NONE
    box = answer.get("target_box")
    return action + (f" · element box {box}" if box else "")


PART_VALUES = {
    "verdict": lambda a: verdict_words(a.get("verdict", ""), a.get("tau")),
    "tau_exact": _step,
    "tau_within_one": _step,
    "category": lambda a: a.get("error_category") or _NONE,
    "action_type": lambda a: _action_type(a.get("corrected_action") or ""),
    "point": _point_words,
    "reflection": lambda a: a.get("reflection_action") or "no post-reflection step",
}


def _point_detail(comparison: dict) -> str:
    parts = []
    if comparison.get("in_box") is not None:
        parts.append(
            "inside the reference's element box" if comparison["in_box"] else "outside the reference's element box"
        )
    if comparison.get("distance") is not None:
        parts.append(f"{comparison['distance']:.3f} of the screen from the reference's point")
    parts.append(f"within {comparison.get('tolerance', 0):g} of the screen counts")
    return "; ".join(parts)


def feedback_rows(comparison: dict) -> list[dict]:
    """One row per part the reference gives something to compare: its label, the answer's and the reference's
    value, whether it was right, and the comparison's words for a part that differed."""
    answer, reference = comparison.get("answer", {}), comparison.get("reference", {})
    said = {d["part"]: d["words"] for d in comparison.get("differences", [])}
    rows = []
    for part in comparison.get("parts", []):
        name = part["part"]
        value = PART_VALUES.get(name, lambda a: _NONE)
        rows.append(
            {
                "part": name,
                "label": part["label"],
                "right": part["right"],
                "yours": value(answer),
                "reference": value(reference),
                "words": said.get(name, ""),
                "detail": _point_detail(comparison) if name == "point" else "",
            }
        )
    return rows
