"""What a correction changed, in buckets a facet can count: the action types on both sides, how far the point moved
(a share of the screen's diagonal) and which way, where τ falls in the trace. One place for these rules: the search
index and the clusters both read them from here."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlparse

from traces import grammar

# Upper bounds (share of the screen diagonal) of the displacement buckets, in order; past the last: "far".
DISPLACEMENT_BUCKETS = ((0.02, "under 2%"), (0.10, "2–10%"), (0.30, "10–30%"))
FAR = "over 30%"
NO_POINT = "no point"
POSITION_BUCKETS = ((1 / 3, "early"), (2 / 3, "middle"))
LATE = "late"


def first_action(text: str) -> grammar.Action | None:
    """The first action of a reply's action part, or None when there is none or it does not parse."""
    try:
        actions = grammar.parse_actions(text or "")
    except grammar.ActionSyntaxError:
        return None
    return actions[0] if actions else None


UNPARSED = "unparsed"


def action_type(text: str) -> str:
    """The type of a reply's first action for the facets: ``unparsed`` when there is text that does not parse as an
    action (a source's own action language), empty when there is none."""
    action = first_action(text)
    return action.type if action else UNPARSED if (text or "").strip() else ""


def action_point(action: grammar.Action | None) -> tuple[float, float] | None:
    if action is None:
        return None
    for _, value in action.args:
        if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
            return (float(value[0]), float(value[1]))
    return None


def displacement(
    recorded: tuple[float, float] | None,
    corrected: tuple[float, float] | None,
    *,
    recorded_convention: str,
    corrected_convention: str,
    width: int,
    height: int,
    max_pixels: int | None = None,
) -> tuple[str, str]:
    """(bucket, direction) of the move from the recorded point to the corrected one, in screen pixels. Each point is
    read in its own convention: a recorded step's is its trace's, a correction's its project's (the editor stores
    it so)."""
    if recorded is None or corrected is None or not width or not height:
        return NO_POINT, ""
    a = grammar.to_screen_pixels(
        recorded, convention=recorded_convention, width=width, height=height, max_pixels=max_pixels
    )
    b = grammar.to_screen_pixels(
        corrected, convention=corrected_convention, width=width, height=height, max_pixels=max_pixels
    )
    dx, dy = b[0] - a[0], b[1] - a[1]
    share = math.hypot(dx, dy) / math.hypot(width, height)
    bucket = next((name for bound, name in DISPLACEMENT_BUCKETS if share < bound), FAR)
    if share < DISPLACEMENT_BUCKETS[0][0]:
        return bucket, ""
    direction = ("right" if dx > 0 else "left") if abs(dx) >= abs(dy) else ("down" if dy > 0 else "up")
    return bucket, direction


def position(tau: int | None, step_count: int) -> str:
    """Where τ falls: early, middle or late third of the trace (τ/n)."""
    if not tau or not step_count:
        return ""
    share = tau / step_count
    return next((name for bound, name in POSITION_BUCKETS if share <= bound), LATE)


def app_of(metadata: dict[str, Any]) -> str:
    """The app or site a trace ran in: its metadata's app, else the host of a URL it names."""
    for key in ("app", "app_name", "package", "site"):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:120]
    for key in ("url", "start_url", "website"):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            host = urlparse(value if "//" in value else f"//{value}").hostname
            if host:
                return host[:120]
    return ""
