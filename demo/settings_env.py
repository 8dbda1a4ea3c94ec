"""A small deterministic environment for replays (docs/runners.md): the demo's desktop settings app as a state
machine. Each action changes the state (a sidebar item opens its page, a toggle flips its setting) and each
screenshot is rendered from the state, so restoring a trace's first τ−1 actions gives its τ-th screen again, pixel for
pixel. The task: turn dark mode on; the evaluator reads the state.

A scripted agent (``scripted_agent``) goes on from any screen: it switches dark mode on where it sees the switch and
gives up where it does not, so a correction that opens the right page leads to success and one that clicks
elsewhere to failure.

The module is an environment of `trace-studio runner` (trace_studio_cli/runner.py): ``restore`` and ``agent``, and
``record_failing_run`` for its ``--record``."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterable
from typing import Any

from demo.screens import Screen, render_settings
from demo.screens.desktop import SETTINGS_DEFAULTS
from trace_studio_cli.runner import EnvironmentProblem, Transport, push_run
from traces import grammar

ENVIRONMENT = "settings-app"
TASK = "Turn on dark mode in Settings"
CONVENTION = "relative-1000"
START_STATE = {"page": "wifi", "dark_mode": False}


class SettingsEnv:
    def __init__(self, state: dict[str, Any] | None = None):
        self.state = {**SETTINGS_DEFAULTS, **START_STATE, **(state or {})}
        self.done = False
        self._screen: Screen | None = None

    @classmethod
    def restore(cls, metadata: dict, actions: Iterable[str]) -> SettingsEnv:
        """The environment as a trace's metadata started it, after its recorded ``actions``."""
        if metadata.get("environment") != ENVIRONMENT:
            raise EnvironmentProblem(f"this runner restores {ENVIRONMENT!r}, not {metadata.get('environment')!r}")
        env = cls(metadata.get("env_state") or {})
        for action in actions:
            env.step(action)
        return env

    @property
    def screen(self):
        if self._screen is None:
            self._screen = render_settings(self.state)
        return self._screen

    def screenshot_png(self) -> bytes:
        return _png_of(json.dumps(self.state, sort_keys=True))

    def point_of(self, widget: str) -> tuple[int, int]:
        """The centre of ``widget`` in the environment's convention, integers."""
        width, height = self.screen.size
        x, y = self.screen.center(widget)
        return grammar.from_screen_pixels((x, y), convention=CONVENTION, width=width, height=height)

    def widget_at(self, point: tuple) -> str | None:
        width, height = self.screen.size
        x, y = grammar.to_screen_pixels(point, convention=CONVENTION, width=width, height=height)
        hits = [
            (box.w * box.h, name)
            for name, box in self.screen.widgets.items()
            if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1
        ]
        return min(hits)[1] if hits else None

    def step(self, action_text: str) -> bool:
        """Carry out one action; True when it ends the episode (``finished``)."""
        if self.done:
            raise EnvironmentProblem("the episode ended already")
        try:
            action = grammar.parse_actions(action_text)[0]
        except (grammar.ActionSyntaxError, IndexError) as exc:
            raise EnvironmentProblem(f"cannot read the action {action_text!r}: {exc}") from None
        if action.type == "finished":
            self.done = True
            return True
        if action.type == "wait":
            return False
        if action.type != "click":
            raise EnvironmentProblem(f"the settings app takes clicks, not {action.type}")
        point = action.point(grammar.START_BOX)
        if point is None:
            raise EnvironmentProblem(f"a click needs a point: {action_text!r}")
        state = self.state_after_click(self.widget_at(point))
        if state != self.state:
            self.state = state
            self._screen = None
        return False

    def state_after_click(self, widget: str | None) -> dict:
        """The app's state after a click on ``widget`` (None: a click on no widget changes nothing)."""
        state = dict(self.state)
        if widget and widget.startswith("sidebar."):
            state["page"] = widget.removeprefix("sidebar.")
        elif widget and widget.startswith("toggle."):
            key = widget.removeprefix("toggle.")
            state[key] = not state.get(key)
        elif widget in ("style.dark", "style.light"):
            state["dark_mode"] = widget == "style.dark"
        return state

    def verdict(self) -> tuple[bool, float, str]:
        """The evaluator: success, score and its message."""
        if self.state.get("dark_mode"):
            return True, 1.0, "dark mode is on"
        return False, 0.0, f"dark mode is off (the app shows its {self.state['page']} page)"


@functools.lru_cache(maxsize=32)
def _png_of(state: str) -> bytes:
    """The screen of a state as PNG: the same state gives the same bytes, so it is drawn once a process."""
    out = io.BytesIO()
    render_settings(json.loads(state)).image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def scripted_agent(env: SettingsEnv) -> tuple[str, str]:
    """The next (thought, action) on ``env``'s screen."""
    if env.state.get("dark_mode"):
        return "Dark mode is on now.", "finished(content='Dark mode is on')"
    if "toggle.dark_mode" in env.screen.widgets:
        x, y = env.point_of("toggle.dark_mode")
        return "The Dark mode switch is here; I turn it on.", f"click(start_box='({x},{y})')"
    return "I cannot find a dark mode switch on this page.", "finished(content='Dark mode not found')"


def failing_run() -> list[tuple[str, str]]:
    """The recorded run a test imports: the agent opens Display (the wrong page, step 1) and gives up there."""
    env = SettingsEnv()
    x, y = env.point_of("sidebar.display")
    first = ("Dark mode should be under Display.", f"click(start_box='({x},{y})')")
    env.step(first[1])
    return [first, scripted_agent(env)]


def correction_to(widget: str) -> str:
    """The corrected action at step 1 of ``failing_run``: a click on ``widget`` of the start screen."""
    x, y = SettingsEnv().point_of(widget)
    return f"click(start_box='({x},{y})')"


def restore(metadata: dict, actions: Iterable[str]) -> SettingsEnv:
    return SettingsEnv.restore(metadata, actions)


agent = scripted_agent


def record_failing_run(transport: Transport, project_id: int, external_id: str) -> None:
    """Push ``failing_run`` step by step (docs/rounds.md) and end it failed: the run a replay corrects."""
    metadata = {"environment": ENVIRONMENT, "env_state": START_STATE}
    first = {"instruction": TASK, "coordinates": CONVENTION, "metadata": json.dumps(metadata)}
    push_run(transport, project_id, external_id, SettingsEnv(), failing_run(), first=first, outcome="failure")
