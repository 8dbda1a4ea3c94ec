"""Rule checks: per-step flags that can be computed honestly from the trace alone (CPU, no model).

Flags (``code``: when):
- ``unparseable``: the recorded action does not parse in the UI-TARS grammar (step.parse_error).
- ``off_screen``: a coordinate lies outside the screen under the project's convention
  (traces.grammar.validate_action); other validation problems are ``invalid_action``.
- ``no_change``: an action meant to change the screen (not wait/finished/call_user) left
  o_{i+1} looking like o_i. Needs o_{i+1} (the next step's screenshot or the trace's final one).
- ``repeated_no_change``: the same action as step i-1, although step i-1's action changed nothing
  visible (o_{i-1} ≈ o_i): the agent repeats what did not work.
- ``wait_run``: the step is part of two or more waits in a row.
- ``off_element``: the source recorded the elements on the step's screen (element boxes, in the trace's
  convention) and the action's target point (``start_box``) lies in none of them: a hint of a grounding error.

"Looks the same" = mean absolute difference of the two screenshots, each downscaled to 128 px wide
in grayscale, under ``change_threshold`` (0.001 of full scale by default: on the real traces a menu
opening scores ≈0.004, a cursor moving into a field ≈0.0001, an unchanged screen 0).

Suspicion: each flag has a weight (how strongly it suggests the step is an error); a step's
suspicion is their noisy-OR, 1 − Π(1 − w). See :func:`first_error` for the per-trace suggestion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from traces import grammar

DOWNSCALE_WIDTH = 128
DEFAULT_CHANGE_THRESHOLD = 0.001
MIN_WAIT_RUN = 2

# Actions that need not change the screen: a wait looks again, finished/call_user end the run.
PASSIVE_ACTIONS = frozenset({"wait", "finished", "call_user"})

FLAG_WEIGHTS: dict[str, float] = {
    "unparseable": 1.0,
    "off_screen": 0.9,
    "invalid_action": 0.8,
    "repeated_no_change": 0.8,
    "wait_run": 0.5,
    # Weak alone: typing into a field or moving a cursor barely changes a screenshot either.
    "no_change": 0.25,
    # A hint, not a proof: a source's element list can miss elements (canvas, images, custom widgets).
    "off_element": 0.4,
}

# Each flag in words, as the workspace shows it (the API serves it with each flag: the page keeps no copy).
FLAG_LABELS: dict[str, str] = {
    "unparseable": "action does not parse",
    "off_screen": "point off the screen",
    "invalid_action": "invalid action",
    "repeated_no_change": "repeats an action that changed nothing",
    "wait_run": "one of several waits in a row",
    "no_change": "screen did not change",
    "off_element": "point on no recorded element",
}


def flag_label(code: str) -> str:
    """A flag's words; a code the table lacks reads as the code itself, in words."""
    return FLAG_LABELS.get(code, code.replace("_", " "))


@dataclass
class RuleStep:
    """What the rules need of a step; built from a Step by the service, or by a test adapter."""

    index: int
    action_text: str
    actions: list[grammar.Action] = field(default_factory=list)  # empty when unparseable
    parse_error: str = ""
    image: Callable[[], Any] | None = None  # loads o_i as a PIL image
    width: int | None = None
    height: int | None = None
    # The element boxes the source recorded on o_i, in the trace's convention (empty: the source has none).
    element_boxes: list[tuple] = field(default_factory=list)

    @property
    def action_key(self) -> str:
        """The action as comparable text: canonical when parsed, else as recorded."""
        if self.actions:
            return "\n".join(grammar.render_action(a, box_tokens=False) for a in self.actions)
        return " ".join(self.action_text.split())

    @property
    def is_wait(self) -> bool:
        return bool(self.actions) and all(a.type == "wait" for a in self.actions)

    @property
    def is_passive(self) -> bool:
        return bool(self.actions) and all(a.type in PASSIVE_ACTIONS for a in self.actions)


def _small_gray(image):
    from PIL import Image

    gray = image.convert("L")
    height = max(1, round(gray.height * DOWNSCALE_WIDTH / gray.width))
    return gray.resize((DOWNSCALE_WIDTH, height), Image.Resampling.BOX)


@dataclass(frozen=True)
class Screen:
    """What the rules keep of a screenshot: its size and a small grayscale copy (the full image is let go at once,
    so a trace of hundreds of full-HD steps holds kilobytes, not gigabytes, and each image is downscaled once)."""

    width: int
    height: int
    small: Any  # PIL "L" image, DOWNSCALE_WIDTH wide

    @classmethod
    def of(cls, image) -> Screen:
        return cls(image.width, image.height, _small_gray(image))


def image_change(before: Screen, after: Screen) -> float:
    """Mean absolute grayscale difference in [0, 1] of two screenshots, both downscaled."""
    from PIL import ImageChops, ImageStat

    a, b = before.small, after.small
    if a.size != b.size:
        b = b.resize(a.size)
    return ImageStat.Stat(ImageChops.difference(a, b)).mean[0] / 255


def flag(code: str, message: str, **extra) -> dict:
    return {"code": code, "message": message, **extra}


def step_flags(
    steps: Sequence[RuleStep],
    *,
    final_image: Callable[[], Any] | None = None,
    convention: str,
    platform: str | None = None,
    max_pixels: int | None = None,
    change_threshold: float = DEFAULT_CHANGE_THRESHOLD,
) -> list[list[dict]]:
    """Flags for each step of one trace, in order."""
    images: list[Screen | None] = []
    for load in [step.image for step in steps] + [final_image]:
        image = load() if load else None
        images.append(Screen.of(image) if image is not None else None)
    # change[i] compares o_i with o_{i+1} (0-based: steps[i]'s before and after screens).
    change = [
        image_change(before, after) if before is not None and after is not None else None
        for before, after in zip(images[:-1], images[1:])
    ]
    flags: list[list[dict]] = [[] for _ in steps]
    for i, step in enumerate(steps):
        out = flags[i]
        if step.parse_error:
            out.append(flag("unparseable", f"the action does not parse: {step.parse_error}"))
        screen = images[i]
        width = step.width or (screen.width if screen is not None else None)
        height = step.height or (screen.height if screen is not None else None)
        if step.actions and width and height:
            for action in step.actions:
                for problem in grammar.validate_action(
                    action, convention=convention, width=width, height=height, platform=platform, max_pixels=max_pixels
                ):
                    code = "off_screen" if "outside the screen" in problem else "invalid_action"
                    out.append(flag(code, problem))
        out.extend(_off_element_flags(step))
        difference = change[i]
        if difference is not None and difference < change_threshold and not step.is_passive:
            out.append(
                flag(
                    "no_change",
                    f"the screen did not visibly change after this action "
                    f"(difference {difference:.4f} < {change_threshold})",
                    change=round(difference, 6),
                )
            )
        if i > 0 and step.action_key and step.action_key == steps[i - 1].action_key and not step.is_passive:
            before = change[i - 1]
            if before is not None and before < change_threshold:
                out.append(
                    flag(
                        "repeated_no_change",
                        f"repeats step {steps[i - 1].index}'s action, which changed "
                        f"nothing visible (difference {before:.4f})",
                        change=round(before, 6),
                    )
                )
    _flag_wait_runs(steps, flags)
    return flags


def _off_element_flags(step: RuleStep) -> list[dict]:
    if not step.element_boxes:
        return []
    out = []
    for action in step.actions:
        point = action.point()
        if point is None or any(grammar.point_in_box(point, box) for box in step.element_boxes):
            continue
        x, y = point
        out.append(
            flag(
                "off_element",
                f"{action.type} at ({x}, {y}) hits none of the {len(step.element_boxes)} elements the source recorded "
                "on this screen: check its grounding",
            )
        )
    return out


def _flag_wait_runs(steps: Sequence[RuleStep], flags: list[list[dict]]) -> None:
    i = 0
    while i < len(steps):
        if not steps[i].is_wait:
            i += 1
            continue
        end = i
        while end + 1 < len(steps) and steps[end + 1].is_wait:
            end += 1
        length = end - i + 1
        if length >= MIN_WAIT_RUN:
            for k in range(i, end + 1):
                flags[k].append(
                    flag(
                        "wait_run",
                        f"wait {k - i + 1} of {length} in a row (steps {steps[i].index}–{steps[end].index})",
                        run_length=length,
                    )
                )
        i = end + 1


def flags_suspicion(flags: Sequence[dict]) -> float:
    """Noisy-OR of the flags' weights: 0 without flags, near 1 with strong or many flags."""
    keep = 1.0
    for item in flags:
        keep *= 1.0 - FLAG_WEIGHTS.get(item["code"], 0.5)
    return round(1.0 - keep, 6)


@dataclass
class FirstError:
    index: int | None  # the step, or None when "no error" is the most likely
    probability: float
    no_error_probability: float


def first_error(indexes: Sequence[int], suspicions: Sequence[float]) -> FirstError:
    """The most likely first erroneous step, reading each suspicion as an independent probability
    that its step is wrong: P(first error at τ) = s_τ Π_{i<τ} (1 − s_i); P(no error) = Π (1 − s_i)."""
    best_index, best_p = None, -1.0
    clean = 1.0
    for index, s in zip(indexes, suspicions):
        s = min(max(float(s), 0.0), 1.0)
        p = clean * s
        if p > best_p:
            best_index, best_p = index, p
        clean *= 1.0 - s
    if best_index is None or clean >= best_p:
        return FirstError(None, round(clean, 6), round(clean, 6))
    return FirstError(best_index, round(best_p, 6), round(clean, 6))
