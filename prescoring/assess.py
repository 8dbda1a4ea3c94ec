"""From a model's scores to a step's suspicion (pure functions; no torch).

Suspicion of step i under the model, in [0, 1]:

    u = 1 − exp(loglik_mean)          how unlikely the recorded reply is: 1 − geometric-mean token probability
    d = 1                              the model's own action has another type
        min(1, click_distance / 0.1)   same type with points: distance over the screen diagonal
        0                              same type, no points
    suspicion = (u + d) / 2            when the model's own reply parsed, else u

``agrees`` = same action type and, where both have a point, the points within 5 % of the diagonal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from traces import grammar

AGREE_DISTANCE = 0.05
FULL_DISAGREEMENT_DISTANCE = 0.1


@dataclass
class Comparison:
    model_actions: list[grammar.Action]
    agrees: bool | None
    click_distance: float | None
    disagreement: float | None


def parse_model_reply(text: str) -> list[grammar.Action]:
    try:
        return list(grammar.parse_response(text).actions)
    except grammar.ActionSyntaxError:
        return []


def compare_actions(
    recorded: list[grammar.Action],
    model: list[grammar.Action],
    *,
    convention: str,
    width: int | None,
    height: int | None,
    max_pixels: int | None = None,
) -> Comparison:
    """Compare the first recorded action with the first action of the model's own reply."""
    if not recorded or not model:
        return Comparison(model, None, None, None)
    a, b = recorded[0], model[0]
    if a.type != b.type:
        return Comparison(model, False, None, 1.0)
    pa, pb = a.point(), b.point()
    if pa is None or pb is None or not width or not height:
        return Comparison(model, True, None, 0.0)
    xa, ya = grammar.to_screen_pixels(pa, convention=convention, width=width, height=height, max_pixels=max_pixels)
    xb, yb = grammar.to_screen_pixels(pb, convention=convention, width=width, height=height, max_pixels=max_pixels)
    distance = math.hypot(xa - xb, ya - yb) / math.hypot(width, height)
    return Comparison(
        model, distance <= AGREE_DISTANCE, round(distance, 6), min(1.0, distance / FULL_DISAGREEMENT_DISTANCE)
    )


def model_suspicion(loglik_mean: float, disagreement: float | None) -> float:
    unlikely = 1.0 - math.exp(max(loglik_mean, -50.0))
    if disagreement is None:
        return round(unlikely, 6)
    return round((unlikely + disagreement) / 2, 6)
