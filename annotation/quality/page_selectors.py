"""What the quality pages read beside ``annotation.quality.selectors``: the settings form's rows (the quality page
and the project settings page's quality section show the one form), and for the feedback page the stored
comparison set out as rows, the answer beside the reference part by part (nothing is compared here: the parts'
outcomes and words are the comparison's)."""

from __future__ import annotations

from django.utils.translation import gettext, gettext_noop

from annotation.quality.selectors import SETTING_HELP, quality_settings
from annotation.selectors import verdict_words
from traces import grammar

# The settings the quality settings form edits, in its order, with each one's label and its number type.
SETTING_FIELDS = (
    ("gold_every", gettext_noop("Gold in each annotator's queue: one trace in"), int),
    ("point_tolerance", gettext_noop("Point tolerance (share of the screen)"), float),
    ("qualification_size", gettext_noop("Qualification set (gold traces; 0: none)"), int),
    ("qualification_pass_mark", gettext_noop("Qualification pass mark (share right)"), float),
    ("min_gold_accuracy", gettext_noop("Flag below this gold accuracy (share)"), float),
    ("min_gold_answers", gettext_noop("Gold answers before accuracy is judged"), int),
    ("min_median_seconds", gettext_noop("Flag below this median time per trace (s)"), int),
    ("max_no_error_streak", gettext_noop("Flag at this many “no error” in a row"), int),
)


def settings_rows(project, values: dict | None = None) -> list[dict]:
    """The settings form's fields: each one's name, label, value (``values``, what a refused form had typed, else
    the project's), meaning and number type."""
    if values is None:
        settings = quality_settings(project)
        values = {name: getattr(settings, name) for name, _, _ in SETTING_FIELDS}
    return [
        {
            "name": name,
            "label": gettext(label),
            "value": values[name],
            "help": gettext(SETTING_HELP[name]),
            "kind": kind.__name__,
        }
        for name, label, kind in SETTING_FIELDS
    ]


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


def _action_point(text: str):
    try:
        action = grammar.parse_action(text) if text and text.strip() else None
    except grammar.ActionSyntaxError:
        return None
    return action.point() if action is not None else None


def feedback_screen(*, trace, comparison: dict) -> dict | None:
    """The reference's o_τ with what the point part judged, in the screenshot's pixels for an SVG over it: the
    reference's point and element box, the answer's point when it corrected the same step, and the tolerance around
    the reference's point (an ellipse: the distance is a share of the screen's width and height). None when the
    reference corrected no point or the step has no screenshot."""
    reference, answer = comparison.get("reference", {}), comparison.get("answer", {})
    ref_point = _action_point(reference.get("corrected_action") or "")
    if ref_point is None or not reference.get("tau"):
        return None
    step = trace.steps.filter(index=reference["tau"]).select_related("screenshot").first()
    shot = step.screenshot if step is not None else None
    if shot is None or not shot.width or not shot.height:
        return None
    project = trace.project

    def pixels(point):
        x, y = grammar.to_screen_pixels(
            point,
            convention=project.coordinate_convention,
            width=shot.width,
            height=shot.height,
            max_pixels=project.max_pixels,
        )
        return {"x": round(x, 1), "y": round(y, 1)}

    box = None
    if reference.get("target_box"):
        x1, y1, x2, y2 = grammar.box_of(reference["target_box"])
        a, b = pixels((x1, y1)), pixels((x2, y2))
        box = {"x": a["x"], "y": a["y"], "width": round(b["x"] - a["x"], 1), "height": round(b["y"] - a["y"], 1)}
    own = _action_point(answer.get("corrected_action") or "") if answer.get("tau") == reference["tau"] else None
    tolerance = comparison.get("tolerance") or 0
    return {
        "sha256": shot.sha256,
        "width": shot.width,
        "height": shot.height,
        "step": reference["tau"],
        "reference": pixels(ref_point),
        "box": box,
        "yours": pixels(own) if own is not None else None,
        "tolerance": {"rx": round(tolerance * shot.width, 1), "ry": round(tolerance * shot.height, 1)},
        "mark": max(8, round(min(shot.width, shot.height) / 40)),
        "line": max(2, round(min(shot.width, shot.height) / 250)),
        "halo": 3 * max(2, round(min(shot.width, shot.height) / 250)),
    }
