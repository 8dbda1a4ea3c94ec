"""The reward of a `verl` bundle: how well a model's reply matches the annotated action of one step.

Plain Python (no Django, no third-party package): an export copies this file into the bundle as it is, beside
``uitars_actions.py``, a byte-for-byte copy of the project's one action grammar (``traces/grammar.py``). Replies and
ground truths are read by that grammar and nothing else. Inside the project (the tests) the grammar is imported from
``traces.grammar`` instead, when no copy lies beside this file.

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)`` (config
``custom_reward_function.path=uitars_reward.py``, ``custom_reward_function.name=compute_score``). The score, in
[0, 1]:

* 0 when the reply does not parse (``Thought: … Action: …`` or a bare call, as the grammar reads UI-TARS replies);
* else the ground truth's actions and the reply's are paired in order; a pair of different action types scores 0,
  a pair of the same type scores ``(1 + matched) / (1 + arguments)`` over the ground truth's arguments, where an
  argument matches when
  - the target point (``start_box`` of the first action) when the ground truth has the target element's ``box``
    (``[x1, y1, x2, y2]``, drawn by the annotator, in the project's convention like the point): the reply's point
    lies inside the box, edges included (the grammar's ``point_in_box``);
  - any other point (``start_box`` without a box, ``end_box``): the reply's point lies within ``radius_px`` screenshot
    pixels of the ground truth's. Both are in the project's coordinate convention; the grammar maps them onto the
    screenshot the step acted on (``width`` × ``height``, ``max_pixels`` for ``smart-resize-pixels``) before
    measuring, so the radius means the same on every convention.
  - a text (``content``, ``app_name``): equal, character for character (a trailing ``\\n`` submits, so it counts);
  - keys (``key``): the same keys in the same order, case aside (``ctrl c``);
  - a direction: equal. A duration (``long_press`` ``time``) is not scored.
* the sum of the pairs' scores is divided by the larger of the two action counts (a missing or extra action costs).

So the annotated action itself scores exactly 1, and a reply with the right type but a wrong point or text scores
between 0 and 1.
"""

import importlib.util
import math
import sys
from pathlib import Path

# The radius a point may miss by, in screenshot pixels, when the ground truth carries none (it always does in a bundle:
# ``ground_truth["radius_px"]``; verl's ``reward_kwargs`` may override it per run).
DEFAULT_RADIUS_PX = 28


def _load_grammar():
    copy = Path(__file__).with_name("uitars_actions.py")
    if copy.is_file():
        name = "uitars_actions"
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, copy)
            if spec is None or spec.loader is None:
                raise ImportError(f"{copy} is not a Python module")
            module = importlib.util.module_from_spec(spec)
            # Registered before it runs: its dataclasses look their module up while the class is being made.
            sys.modules[name] = module
            spec.loader.exec_module(module)
        return sys.modules[name]
    from traces import grammar as project_grammar

    return project_grammar


grammar = _load_grammar()


def parse_reply(text):
    """The actions of a reply, or None when the grammar cannot read it."""
    try:
        return grammar.parse_response(text).actions
    except grammar.ActionSyntaxError:
        return None


def _on_screen(point, truth):
    return grammar.to_screen_pixels(
        point,
        convention=truth["coordinate_convention"],
        width=truth["width"],
        height=truth["height"],
        max_pixels=truth.get("max_pixels"),
    )


def _argument_matches(kind, expected, given, truth, radius_px, box=None):
    if given is None:
        return False
    if kind == "point" and box is not None:
        return grammar.point_in_box(given, grammar.box_of(box))
    if kind == "point":
        (ex, ey), (gx, gy) = _on_screen(expected, truth), _on_screen(given, truth)
        return math.hypot(ex - gx, ey - gy) <= radius_px
    if kind == "keys":
        return str(given).lower().split() == str(expected).lower().split()
    return given == expected


def action_score(expected, given, truth, radius_px, box=None):
    """One ground-truth action against one replied action: 0 for another type, else (1 + matched) / (1 + scored).
    ``box``: the target element's box, which the replied ``start_box`` must fall in."""
    if given.type != expected.type:
        return 0.0
    spec = expected.spec
    scored = matched = 0
    for name, value in expected.args:
        arg = spec.arg(name) if spec else None
        kind = arg.kind if arg else ("point" if isinstance(value, tuple) else "text")
        if kind == "duration":
            continue
        scored += 1
        target_box = box if name == grammar.START_BOX else None
        if _argument_matches(kind, value, given.get(name), truth, radius_px, target_box):
            matched += 1
    return (1 + matched) / (1 + scored)


def plain(value):
    """``value`` with numpy arrays and scalars made Python lists and numbers (a ground truth read from the Parquet with
    pandas holds ``numpy.ndarray`` boxes and ``numpy.int64`` sizes; ``datasets`` gives lists and ints), dicts, lists
    and tuples walked. Without importing numpy: anything with ``tolist`` is taken as one."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def score_reply(reply, truth, *, radius_px=None):
    """``reply`` (a model's text) against ``truth`` (a bundle row's ``reward_model.ground_truth``, as ``datasets`` or
    pandas reads it: lists, tuples or numpy arrays), in [0, 1]."""
    truth = plain(truth)
    given = parse_reply(reply)
    if not given:
        return 0.0
    expected = grammar.parse_actions(truth["action"])
    radius = float(radius_px if radius_px is not None else truth.get("radius_px") or DEFAULT_RADIUS_PX)
    box = truth.get("box")  # the first action's target element, when the annotator drew it
    total = sum(
        action_score(e, g, truth, radius, box if i == 0 else None) for i, (e, g) in enumerate(zip(expected, given))
    )
    return total / max(len(expected), len(given))


def compute_score(data_source, solution_str, ground_truth, extra_info=None, radius_px=None, **kwargs):
    """verl's custom reward entry point (``data_source`` and ``extra_info`` are not needed to score)."""
    return score_reply(solution_str, ground_truth, radius_px=plain(radius_px))
