"""How right a gold answer is: the one comparison of an answer with its trace's reference, part by part, and the
Wilson interval the quality figures carry. Pure (no database, no Django): the submit's scoring, a re-score after the
reference changed, and the page's side-by-side feedback all read ``compare``'s result (the page receives it from the
server, ``Comparison.as_dict``, and never compares anything itself).

The parts (``PARTS``), each True (right), False (wrong) or None (the reference gives nothing to compare):

- ``verdict``: the same verdict (first error, no error, unusable);
- ``tau_exact`` / ``tau_within_one``: the reference found a first error; the answer found one at the same step / at
  most one step away;
- ``category``: the reference's error category, named by an error answer;
- ``action_type``: the reference's corrected action type, at the reference's τ;
- ``point``: the reference's corrected action has a point: the answer's point at the reference's τ lies inside the
  reference's element box, else within ``tolerance`` of the reference's point, as a fraction of the screen
  (sqrt((dx/W)^2 + (dy/H)^2), as agreement's click distance);
- ``reflection``: the reference wrote a post-reflection step; the answer wrote one too.

An answer is ``correct`` when every part that applies is right but ``tau_within_one`` (reported beside τ exact, the
lenient reading of the same part).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from traces import grammar

PARTS = ("verdict", "tau_exact", "tau_within_one", "category", "action_type", "point", "reflection")
PART_LABELS = {
    "verdict": "Verdict",
    "tau_exact": "First error τ (exact)",
    "tau_within_one": "First error τ (±1)",
    "category": "Error category",
    "action_type": "Action type",
    "point": "Point",
    "reflection": "Post-reflection",
}
# The parts an answer must get right to be correct (τ ±1 is the lenient twin of τ exact).
STRICT_PARTS = tuple(p for p in PARTS if p != "tau_within_one")
VERDICT_WORDS = {"error": "a first error", "no_error": "no error", "unusable": "unusable", "": "no verdict"}
# 1.96: the normal quantile of a two-sided 95 % interval.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class GoldAnswer:
    """What scoring reads of an answer (the reference's or the scored one's), as stored: actions in the project's
    convention, the corrected target's element box when one was drawn for the stored action."""

    verdict: str
    tau: int | None = None
    error_category: str = ""
    corrected_action: str = ""
    target_box: tuple | list | None = None
    reflection_action: str = ""

    def as_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "tau": self.tau,
            "error_category": self.error_category,
            "corrected_action": self.corrected_action,
            "target_box": list(self.target_box) if self.target_box is not None else None,
            "reflection_action": self.reflection_action,
        }


@dataclass(frozen=True)
class Screen:
    """The reference's o_τ as a point's convention needs it (pixel conventions need the screenshot's size; None when
    it is not known, then only the element box judges a point)."""

    convention: str
    width: int | None = None
    height: int | None = None
    max_pixels: int | None = None


@dataclass
class Comparison:
    parts: dict[str, bool | None]
    correct: bool
    differences: list[dict] = field(default_factory=list)  # {"part", "label", "words"} for each part that is wrong
    distance: float | None = None  # the point's distance from the reference's, as a fraction of the screen
    in_box: bool | None = None
    answer: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)
    tolerance: float = 0.0

    def as_dict(self) -> dict:
        """The JSON the page shows beside the two answers (and GoldScore.comparison stores)."""
        return {
            "parts": [
                {"part": p, "label": PART_LABELS[p], "right": self.parts[p]} for p in PARTS if self.parts[p] is not None
            ],
            "correct": self.correct,
            "differences": self.differences,
            "distance": None if self.distance is None else round(self.distance, 4),
            "in_box": self.in_box,
            "tolerance": self.tolerance,
            "answer": self.answer,
            "reference": self.reference,
        }


def _action(text: str) -> grammar.Action | None:
    try:
        return grammar.parse_action(text) if text and text.strip() else None
    except grammar.ActionSyntaxError:
        return None


def _verdict_words(answer: GoldAnswer) -> str:
    if answer.verdict == "error" and answer.tau is not None:
        return f"a first error at step {answer.tau}"
    return VERDICT_WORDS.get(answer.verdict, answer.verdict)


def difference_words(template: str, annotator: str | None = None) -> str:
    """A difference's words for its reader: the annotator reads "You said…" (``annotator`` None), anybody else the
    annotator's name ("ann said…"). ``template`` names the annotator as {You}, {you}, {Your} and {your}."""
    names = (
        {"You": "You", "you": "you", "Your": "Your", "your": "your"}
        if annotator is None
        else {"You": annotator, "you": annotator, "Your": f"{annotator}'s", "your": f"{annotator}'s"}
    )
    # Replaced by name, not str.format: the words quote an answer's category, which may hold braces.
    for marker, name in names.items():
        template = template.replace("{" + marker + "}", name)
    return template


def point_distance(a: tuple, b: tuple, screen: Screen) -> float | None:
    """The distance of two points of one screenshot as a fraction of the screen (0 the same point; 1 the full width
    or height apart), or None when a pixel convention's screenshot size is unknown."""
    if screen.convention == grammar.RELATIVE_1000:
        width, height = screen.width or 1000, screen.height or 1000
    elif not screen.width or not screen.height:
        return None
    else:
        width, height = screen.width, screen.height
    xa, ya = grammar.to_screen_pixels(
        a, convention=screen.convention, width=width, height=height, max_pixels=screen.max_pixels
    )
    xb, yb = grammar.to_screen_pixels(
        b, convention=screen.convention, width=width, height=height, max_pixels=screen.max_pixels
    )
    return math.hypot((xa - xb) / width, (ya - yb) / height)


def compare(answer: GoldAnswer, reference: GoldAnswer, *, screen: Screen, tolerance: float) -> Comparison:
    """``answer`` against ``reference``, part by part (the module's docstring says each part's rule)."""
    parts: dict[str, bool | None] = dict.fromkeys(PARTS)
    differences: list[dict] = []

    def differ(part: str, template: str) -> None:
        # Stored with its reader left open (``difference_words``): the annotator reads "you", a lead their name.
        differences.append(
            {"part": part, "label": PART_LABELS[part], "words": difference_words(template), "template": template}
        )

    parts["verdict"] = answer.verdict == reference.verdict
    if not parts["verdict"]:
        differ("verdict", f"{{You}} said {_verdict_words(answer)}; the reference says {_verdict_words(reference)}.")
    distance = in_box = None
    if reference.verdict == "error" and reference.tau is not None:
        found = answer.verdict == "error" and answer.tau is not None
        off = abs(answer.tau - reference.tau) if found and answer.tau is not None else None
        parts["tau_exact"] = off == 0
        parts["tau_within_one"] = off is not None and off <= 1
        if off:
            differ(
                "tau_exact",
                f"{{You}} marked step {answer.tau}; the reference step {reference.tau} ({off} step{'s' if off > 1 else ''}"
                " off).",
            )
        parts["category"] = found and answer.error_category == reference.error_category
        if found and not parts["category"]:
            differ(
                "category",
                f"{{You}} chose {answer.error_category or 'no category'!r}; the reference {reference.error_category!r}.",
            )
        same_step = off == 0
        ref_action, own_action = _action(reference.corrected_action), _action(answer.corrected_action)
        if ref_action is not None:
            parts["action_type"] = same_step and own_action is not None and own_action.type == ref_action.type
            if same_step and not parts["action_type"]:
                differ(
                    "action_type",
                    f"{{You}} corrected with {own_action.type if own_action else 'no action'}; the reference with "
                    f"{ref_action.type}.",
                )
            ref_point = ref_action.point()
            if ref_point is not None:
                own_point = own_action.point() if same_step and own_action is not None else None
                if own_point is None:
                    parts["point"] = False
                    if same_step:
                        differ("point", "{Your} corrected action has no point; the reference's has one.")
                else:
                    box = grammar.box_of(reference.target_box) if reference.target_box is not None else None
                    in_box = grammar.point_in_box(own_point, box) if box is not None else None
                    distance = point_distance(own_point, ref_point, screen)
                    parts["point"] = bool(in_box) or (distance is not None and distance <= tolerance)
                    if not parts["point"]:
                        where = "outside the reference's element box, " if box is not None else ""
                        far = f"{distance:.3f} of the screen" if distance is not None else "an unknown distance"
                        differ(
                            "point",
                            f"{{Your}} point is {where}{far} from the reference's point (within {tolerance:g} counts).",
                        )
        if reference.reflection_action.strip():
            parts["reflection"] = found and bool(answer.reflection_action.strip())
            if found and not parts["reflection"]:
                differ("reflection", "The reference writes a post-reflection step; {your} answer has none.")
    correct = all(parts[p] is not False for p in STRICT_PARTS)
    return Comparison(
        parts=parts,
        correct=correct,
        differences=differences,
        distance=distance,
        in_box=in_box,
        answer=answer.as_dict(),
        reference=reference.as_dict(),
        tolerance=tolerance,
    )


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a share ``successes / n`` (95 % by default), or None when n is 0. Unlike the
    normal approximation it stays within [0, 1] and means something for 0 of 3 or 5 of 5."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in 0..{n}, not {successes}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))
