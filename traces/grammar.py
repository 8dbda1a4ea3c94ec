"""UI-TARS actions: one grammar for parsing, validating, rendering and coordinate conversion.

Pure Python on purpose (no Django): importers, exporters, the scoring worker and the
browser editor (through :func:`action_table_json`) all share this single definition.

Response grammar (UI-TARS replies; the native format stores them as they are, docs/formats.md §1)::

    response  := [ "<think>" TEXT "</think>" ]
                 [ "Reflection:" TEXT ] [ "Action_Summary:" TEXT ] [ "Thought:" TEXT ]
                 "Action:" actions
    actions   := call ( WHITESPACE call )*        -- models separate them by a blank line
    call      := NAME "(" [ kwarg ( "," kwarg )* [ "," ] ] ")"
    kwarg     := NAME "=" value
    value     := 'single quoted' | "double quoted" | bare

Quoted values use Python escapes (``\\'`` ``\\"`` ``\\\\`` ``\\n`` ``\\t`` ``\\r``; any other
backslash is kept literally, as Python does).  An unescaped quote inside a quoted value is
literal unless ``,`` ``)`` ``name=`` or the end follows it (ui-tars accepts
``type(content='it's')``; rendering always escapes).  A bare (unquoted) value runs to the next
top-level ``,`` or ``)`` with balanced brackets and must not contain quotes.

Coordinate values (any of)::

    '<|box_start|>(x,y)<|box_end|>'   '(x,y)'   '(x1,y1,x2,y2)'   '[x1, y1, x2, y2]'
    '<point>x y</point>'              '<bbox>x1 y1 x2 y2</bbox>'

A four-number box stands for its centre.  Argument names come in two styles that map to the
same canonical names: box style ``start_box``/``end_box`` and point style
``point``/``start_point``/``end_point``; :attr:`Action.style` remembers which one was used so
:func:`render_action` can reproduce it.

Numbers are parsed as given (int or float, floats kept to 3 decimals) in the model's own
coordinate convention; see :data:`RELATIVE_1000`, :data:`SMART_RESIZE_PIXELS` and
:data:`SCREEN_PIXELS`.  A model emits integers in every convention, so every point the studio makes
(a conversion, an element box's centre) and every point it stores from an editor or exports is rounded
here, once, half to even (:func:`model_number`, :func:`round_action`, :func:`round_box`).  A ``<think>...</think>`` preamble is not part of the thought: it is
returned separately in :attr:`ParsedResponse.think`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn


def gettext_noop(text: str) -> str:
    """studio.catalog's marker (makemessages finds it by this name), defined here: the grammar is read where Django is
    not (the demo's generator, bench/prescore.py), and importing the studio package starts its Celery app."""
    return text


__all__ = [
    "ACTION_SPECS",
    "Action",
    "ActionSpec",
    "ActionSyntaxError",
    "ArgSpec",
    "ARG_KINDS",
    "BOX_END",
    "BOX_START",
    "CONVENTIONS",
    "DIRECTIONS",
    "PLATFORMS",
    "ParsedResponse",
    "RELATIVE_1000",
    "SCREEN_PIXELS",
    "SMART_RESIZE_PIXELS",
    "STYLES",
    "TARGET_BOX",
    "action_table_json",
    "box_centre",
    "box_iou",
    "box_of",
    "box_point_problem",
    "box_problems",
    "model_number",
    "round_action",
    "round_box",
    "convert_box",
    "convert_action",
    "from_screen_pixels",
    "off_screen_points",
    "parse_action",
    "parse_actions",
    "parse_response",
    "point_in_box",
    "render_action",
    "render_response",
    "smart_resize",
    "to_screen_pixels",
    "validate_action",
]

# --------------------------------------------------------------------------------------
# Constants

DESKTOP, MOBILE, WEB = "desktop", "mobile", "web"
PLATFORMS: tuple[str, ...] = (DESKTOP, MOBILE, WEB)
ARG_KINDS: tuple[str, ...] = ("point", "text", "direction", "keys", "duration")
DIRECTIONS: tuple[str, ...] = ("up", "down", "left", "right")
STYLES: tuple[str, ...] = ("box", "point")

BOX_START = "<|box_start|>"
BOX_END = "<|box_end|>"

START_BOX, END_BOX = "start_box", "end_box"
# Point-style argument names (Doubao / UI-TARS-1.5 prompts) -> canonical box-style names.
POINT_STYLE_ALIASES: dict[str, str] = {
    "point": START_BOX,
    "start_point": START_BOX,
    "end_point": END_BOX,
}

RELATIVE_1000 = "relative-1000"
"""UI-TARS v1 (Qwen2-VL): 0..1000 on each axis, ``x_px = x / 1000 * W``."""
SMART_RESIZE_PIXELS = "smart-resize-pixels"
"""UI-TARS-1.5 (Qwen2.5-VL): pixels of the smart_resize'd screenshot, ``x_px = x / w_resized * W``."""
SCREEN_PIXELS = "screen-pixels"
"""Plain screenshot pixels."""
CONVENTIONS: tuple[str, ...] = (RELATIVE_1000, SMART_RESIZE_PIXELS, SCREEN_PIXELS)

# Qwen2.5-VL / ui-tars defaults (docs/formats.md, "Coordinates: a property of the trace").
IMAGE_FACTOR = 28
MIN_PIXELS = 100 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28
MAX_RATIO = 200

_ALL = frozenset(PLATFORMS)
# Web agents drive a desktop browser with the same pyautogui executor, so the desktop-only
# mouse/keyboard actions are available there too.
_DESKTOP_WEB = frozenset({DESKTOP, WEB})
_MOBILE = frozenset({MOBILE})


# --------------------------------------------------------------------------------------
# The action table


@dataclass(frozen=True)
class ArgSpec:
    name: str
    kind: str  # one of ARG_KINDS
    required: bool = True
    aliases: tuple[str, ...] = ()  # extra accepted spellings (not the point-style ones)
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ARG_KINDS:
            raise ValueError(f"bad arg kind {self.kind!r}")


@dataclass(frozen=True)
class ActionSpec:
    name: str
    args: tuple[ArgSpec, ...]
    platforms: frozenset[str]
    label: str
    description: str
    extra: bool = False  # accepted by parsers/executors but not in any UI-TARS prompt
    # At least one of these must be present (scroll: a direction, or an end point as in
    # the README_v1 mobile variant ``scroll(start_box, end_box)``).
    require_any: tuple[str, ...] = ()
    # Optional in a recorded step, required in a correction (the prompt's form of the action).
    target_required: tuple[str, ...] = ()

    def arg(self, name: str) -> ArgSpec | None:
        for a in self.args:
            if a.name == name:
                return a
        return None

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args)


def _start(required: bool = True) -> ArgSpec:
    return ArgSpec(START_BOX, "point", required, description=gettext_noop("target point"))


def _end(required: bool = True) -> ArgSpec:
    return ArgSpec(END_BOX, "point", required, description=gettext_noop("end point"))


def _key(aliases: tuple[str, ...]) -> ArgSpec:
    return ArgSpec("key", "keys", True, aliases, gettext_noop("space-separated lowercase keys, e.g. 'ctrl c'"))


_SPECS: tuple[ActionSpec, ...] = (
    ActionSpec("click", (_start(),), _ALL, gettext_noop("Click"), gettext_noop("Left-click once at a point.")),
    ActionSpec(
        "left_double", (_start(),), _DESKTOP_WEB, gettext_noop("Double click"), gettext_noop("Double-click at a point.")
    ),
    ActionSpec(
        "right_single", (_start(),), _DESKTOP_WEB, gettext_noop("Right click"), gettext_noop("Right-click at a point.")
    ),
    ActionSpec(
        "drag",
        (_start(), _end()),
        _ALL,
        gettext_noop("Drag"),
        gettext_noop("Press at the start point, move to the end point, release."),
    ),
    ActionSpec(
        "hotkey",
        (_key(("hotkey",)),),
        _ALL,
        gettext_noop("Hotkey"),
        gettext_noop("Press a key combination (at most 3 keys per the 1.5 prompt)."),
    ),
    ActionSpec(
        "type",
        (
            ArgSpec(
                "content", "text", True, description=gettext_noop("text to type; a trailing newline submits (Enter)")
            ),
            _start(False),
        ),
        _ALL,
        gettext_noop("Type"),
        gettext_noop("Type text, optionally into the field at a point (web)."),
    ),
    ActionSpec(
        "scroll",
        (
            _start(False),
            _end(False),
            ArgSpec("direction", "direction", False, description=gettext_noop("up, down, left or right")),
        ),
        _ALL,
        gettext_noop("Scroll"),
        gettext_noop("Scroll in a direction, at a point if given."),
        require_any=("direction", END_BOX),
        target_required=("direction",),
    ),
    ActionSpec("wait", (), _ALL, gettext_noop("Wait"), gettext_noop("Sleep (about 5 s) and take a new screenshot.")),
    ActionSpec(
        "finished",
        (ArgSpec("content", "text", False, description=gettext_noop("final answer")),),
        _ALL,
        gettext_noop("Finished"),
        gettext_noop("The task is complete, optionally with an answer."),
    ),
    ActionSpec(
        "call_user",
        (),
        _ALL,
        gettext_noop("Call user"),
        gettext_noop("Hand over to the user (task unsolvable or needs help)."),
    ),
    ActionSpec(
        "long_press",
        (_start(), ArgSpec("time", "duration", False, description=gettext_noop("press duration"))),
        _MOBILE,
        gettext_noop("Long press"),
        gettext_noop("Press and hold at a point."),
    ),
    ActionSpec(
        "open_app",
        (ArgSpec("app_name", "text", True, description=gettext_noop("application name")),),
        _MOBILE,
        gettext_noop("Open app"),
        gettext_noop("Launch an app by name."),
    ),
    ActionSpec("press_home", (), _MOBILE, gettext_noop("Press home"), gettext_noop("Press the Home button.")),
    ActionSpec("press_back", (), _MOBILE, gettext_noop("Press back"), gettext_noop("Press the Back button.")),
    ActionSpec(
        "select",
        (_start(), _end(False)),
        frozenset({WEB}),
        gettext_noop("Select"),
        gettext_noop("Select the element (or the range) at a point."),
    ),
    ActionSpec(
        "swipe",
        (_start(), _end()),
        _MOBILE,
        gettext_noop("Swipe"),
        gettext_noop("Swipe from the start point to the end point."),
    ),
    # Parser-level extras (ui-tars / OSWorld pyautogui converter).
    ActionSpec(
        "left_single",
        (_start(),),
        _DESKTOP_WEB,
        gettext_noop("Left click"),
        gettext_noop("Left-click once (same as click)."),
        extra=True,
    ),
    ActionSpec(
        "hover",
        (_start(),),
        _DESKTOP_WEB,
        gettext_noop("Hover"),
        gettext_noop("Move the mouse to a point."),
        extra=True,
    ),
    ActionSpec(
        "press",
        (_key(("press",)),),
        _DESKTOP_WEB,
        gettext_noop("Press key"),
        gettext_noop("Press and release a key."),
        extra=True,
    ),
    ActionSpec(
        "keydown",
        (_key(("press",)),),
        _DESKTOP_WEB,
        gettext_noop("Key down"),
        gettext_noop("Hold a key down."),
        extra=True,
    ),
    ActionSpec(
        "release",
        (_key(("press",)),),
        _DESKTOP_WEB,
        gettext_noop("Release key"),
        gettext_noop("Release a held key."),
        extra=True,
    ),
    ActionSpec(
        "keyup",
        (_key(("press",)),),
        _DESKTOP_WEB,
        gettext_noop("Key up"),
        gettext_noop("Release a held key."),
        extra=True,
    ),
)

ACTION_SPECS: dict[str, ActionSpec] = {s.name: s for s in _SPECS}

# How each action is drawn over its screenshot (served in the action table; static/js/workspace/overlay.js draws a
# shape and never decides per action type). shape: "point" (a ring on start_box), "double" (two rings), "path" (start
# to end_box), "scroll" (an arrow in ``direction``), "text" (typed text, at start_box when given), "keys" (a key
# combination in the corner), "corner" (a badge in the corner). badge: the words on the marker's badge ("" = none);
# badge_arg: an argument whose value the badge shows after them, joined by badge_join.
ACTION_MARKS: dict[str, dict[str, str]] = {
    "click": {"shape": "point", "badge": ""},
    "left_single": {"shape": "point", "badge": ""},
    "hover": {"shape": "point", "badge": "hover"},
    "long_press": {"shape": "point", "badge": "long press"},
    "left_double": {"shape": "double", "badge": "double"},
    "right_single": {"shape": "point", "badge": "right"},
    "drag": {"shape": "path", "badge": "drag"},
    "swipe": {"shape": "path", "badge": "swipe"},
    "select": {"shape": "path", "badge": "select"},
    "scroll": {"shape": "scroll", "badge": "scroll", "badge_arg": "direction", "badge_join": " "},
    "type": {"shape": "text", "badge": "⌨", "badge_arg": "content", "badge_join": " "},
    "hotkey": {"shape": "keys", "badge": "⌘", "badge_arg": "key", "badge_join": " "},
    "press": {"shape": "keys", "badge": "⌘", "badge_arg": "key", "badge_join": " "},
    "keydown": {"shape": "keys", "badge": "⌘", "badge_arg": "key", "badge_join": " "},
    "keyup": {"shape": "keys", "badge": "⌘", "badge_arg": "key", "badge_join": " "},
    "release": {"shape": "keys", "badge": "⌘", "badge_arg": "key", "badge_join": " "},
    "finished": {"shape": "corner", "badge": "✓ finished", "badge_arg": "content", "badge_join": ": "},
    "wait": {"shape": "corner", "badge": "… wait"},
    "call_user": {"shape": "corner", "badge": "☎ call user"},
    "press_home": {"shape": "corner", "badge": "⌂ home"},
    "press_back": {"shape": "corner", "badge": "← back"},
    "open_app": {"shape": "corner", "badge": "open", "badge_arg": "app_name", "badge_join": " "},
}
assert set(ACTION_MARKS) == set(ACTION_SPECS), "every action needs its mark"

# --------------------------------------------------------------------------------------
# The action space a model is told about, and what a correction may therefore use

# The action lines of the UI-TARS COMPUTER_USE / MOBILE_USE prompts, verbatim ({p1}/{p3}: the point spelling of the
# project, filled by traces.prompting). A correction is a training target: it may use only what the prompt offers on
# its platform, so the editor, the validator and the exported prompt read this one list.
_DESKTOP_ACTIONS = (
    "click(start_box={p1})",
    "left_double(start_box={p1})",
    "right_single(start_box={p1})",
    "drag(start_box={p1}, end_box={p3})",
    "hotkey(key='ctrl c') # Split keys with a space and use lowercase. Also, do not use more than 3 keys in one hotkey action.",
    "type(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse the content in normal python string format. If you want to submit your input, use \\n at the end of content. ",
    "scroll(start_box={p1}, direction='down or up or right or left') # Show more information on the `direction` side.",
    "wait() #Sleep for 5s and take a screenshot to check for any changes.",
    "finished(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse the content in normal python string format.",
)
_MOBILE_ACTIONS = (
    "click(start_box={p1})",
    "long_press(start_box={p1})",
    "type(content='') #If you want to submit your input, use \"\\n\" at the end of `content`.",
    "scroll(start_box={p1}, direction='down or up or right or left')",
    "open_app(app_name='')",
    "drag(start_box={p1}, end_box={p3})",
    "press_home()",
    "press_back()",
    "finished(content='xxx') # Use escape characters \\', \\\", and \\n in content part to ensure we can parse the content in normal python string format.",
)


PROMPT_ACTION_LINES: dict[str, tuple[str, ...]] = {
    DESKTOP: _DESKTOP_ACTIONS,
    WEB: _DESKTOP_ACTIONS,
    MOBILE: _MOBILE_ACTIONS,
}

# The prompt's hotkey rule ("Split keys with a space and use lowercase. Also, do not use more than 3 keys").
MAX_HOTKEY_KEYS = 3
# Key names the UI-TARS executors (pyautogui, adb key events) understand.
KEY_NAMES = frozenset(
    [chr(c) for c in range(ord("a"), ord("z") + 1)]
    + [str(d) for d in range(10)]
    + [f"f{n}" for n in range(1, 25)]
    + list("`-=[]\\;',./")
    + [
        "enter",
        "return",
        "tab",
        "space",
        "backspace",
        "delete",
        "del",
        "esc",
        "escape",
        "insert",
        "home",
        "end",
        "pageup",
        "pagedown",
        "pgup",
        "pgdn",
        "up",
        "down",
        "left",
        "right",
        "ctrl",
        "control",
        "ctrlleft",
        "ctrlright",
        "alt",
        "altleft",
        "altright",
        "option",
        "shift",
        "shiftleft",
        "shiftright",
        "win",
        "winleft",
        "winright",
        "cmd",
        "command",
        "super",
        "meta",
        "fn",
        "capslock",
        "numlock",
        "scrolllock",
        "printscreen",
        "prtsc",
        "prtscr",
        "pause",
        "apps",
        "menu",
        "volumemute",
        "volumeup",
        "volumedown",
        "playpause",
        "nexttrack",
        "prevtrack",
        "home_key",
        "back",
        "num0",
        "num1",
        "num2",
        "num3",
        "num4",
        "num5",
        "num6",
        "num7",
        "num8",
        "num9",
        "add",
        "subtract",
        "multiply",
        "divide",
        "decimal",
        "separator",
        "clear",
    ]
)


def target_actions(platform: str) -> tuple[str, ...]:
    """The action types a correction may use on ``platform``: those its prompt lists, in the prompt's order."""
    names = []
    for line in PROMPT_ACTION_LINES[platform]:
        match = re.match(r"(\w+)\(", line)
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return tuple(names)


def target_problems(action: Action, *, platform: str) -> list[str]:
    """What a correction may not contain beyond ``validate_action``'s checks (recorded steps are kept as the model
    wrote them; a training target follows the prompt): an action the platform's prompt does not offer, a hotkey
    with more than 3 keys, keys not in lowercase or not known, a scroll without a direction."""
    problems = []
    if action.type not in target_actions(platform):
        problems.append(
            f"{action.type} is not in the {platform} prompt's action space ({', '.join(target_actions(platform))})"
        )
    spec = ACTION_SPECS.get(action.type)
    for name in spec.target_required if spec else ():
        if action.get(name) is None:
            problems.append(f"missing argument '{name}' for {action.type}")
    for name, value in action.args:
        arg = spec.arg(name) if spec else None
        if arg is None or arg.kind != "keys" or not isinstance(value, str):
            continue
        keys = value.split()
        if len(keys) > MAX_HOTKEY_KEYS:
            problems.append(f"{len(keys)} keys in '{value}': the prompt allows at most {MAX_HOTKEY_KEYS}")
        if value != value.lower():
            problems.append(f"keys must be lowercase: '{value.lower()}', not '{value}'")
        unknown = [k for k in keys if k.lower() not in KEY_NAMES]
        if unknown:
            problems.append(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(repr(k) for k in unknown)}")
    return problems


# --------------------------------------------------------------------------------------
# Errors


class ActionSyntaxError(Exception):
    """A parse error with a 0-based character offset into the string that was parsed. ``action_start``: where the
    action section begins in a whole reply (``parse_response``), when the error lies in it."""

    def __init__(self, message: str, position: int, action_start: int | None = None):
        self.message = message
        self.position = position
        self.action_start = action_start
        super().__init__(f"{message} at position {position}")

    def __reduce__(
        self,
    ) -> tuple[type, tuple[str, int, int | None]]:  # keep pickling working despite the multi-argument constructor
        return (type(self), (self.message, self.position, self.action_start))

    def counted_from(self, offset: int) -> ActionSyntaxError:
        """The same error with its position counted from ``offset`` of the parsed string: the part a page shows."""
        return ActionSyntaxError(self.message, self.position - offset)


# --------------------------------------------------------------------------------------
# Action


# No screen is a billion units across: a larger number is refused as a coordinate (or duration) rather than kept
# and flagged off-screen, so that every conversion of one stays a finite float (10**400 / 1000 is an
# OverflowError, 1e308 / 1000 * 1920 infinity, which no int holds).
NUMBER_LIMIT = 10**9


def _beyond_limit(v: int | float) -> bool:
    return not abs(v) <= NUMBER_LIMIT  # NaN too


def _norm_number(v: Any) -> int | float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"coordinate must be a number, got {v!r}")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"coordinate must be finite, got {v!r}")
    if _beyond_limit(v):
        raise ValueError(f"coordinate {str(v)[:40]} lies beyond ±{NUMBER_LIMIT:,}: no screen is that large")
    if isinstance(v, float):
        # Rounded to the rendering precision so that an Action always equals the parse of
        # its own rendering.
        v = round(v, 3)
        if v == 0:
            v = 0.0  # no -0.0
    return v


def _norm_point(v: Any) -> tuple[int | float, int | float]:
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        raise TypeError(f"point must be an (x, y) pair, got {v!r}")
    return (_norm_number(v[0]), _norm_number(v[1]))


def _arg_kind(spec: ActionSpec | None, name: str, value: Any) -> str:
    a = spec.arg(name) if spec else None
    if a is not None:
        return a.kind
    return "point" if isinstance(value, (tuple, list)) else "text"


@dataclass(frozen=True, init=False)
class Action:
    """One UI-TARS action.

    ``args`` holds ``(canonical_name, value)`` pairs in the table's order: points are
    ``(x, y)`` tuples of int/float (floats kept to 3 decimals), texts/keys/directions are
    str, durations are numbers.  The constructor takes the pairs or a Mapping, and normalises either.
    ``style`` is "box" or "point" and is forced to "box" when there are no points, so that
    equality does not depend on an invisible attribute.
    """

    type: str
    args: tuple[tuple[str, Any], ...]
    style: str

    def __init__(self, type: str, args: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), style: str = "box") -> None:
        if not isinstance(type, str) or not type:
            raise TypeError("Action.type must be a non-empty str")
        if style not in STYLES:
            raise ValueError(f"Action.style must be one of {STYLES}, got {style!r}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "style", style)
        items = list(args.items()) if isinstance(args, Mapping) else [tuple(kv) for kv in args]
        spec = ACTION_SPECS.get(self.type)
        seen: set[str] = set()
        norm: list[tuple[str, Any]] = []
        for kv in items:
            if len(kv) != 2 or not isinstance(kv[0], str):
                raise TypeError(f"bad argument pair {kv!r}")
            k, v = kv
            if k in seen:
                raise ValueError(f"duplicate argument {k!r}")
            seen.add(k)
            kind = _arg_kind(spec, k, v)
            if kind == "point":
                v = _norm_point(v)
            elif kind == "duration":
                v = _norm_number(v)
            norm.append((k, v))
        order = {n: i for i, n in enumerate(spec.arg_names)} if spec else {}
        norm.sort(key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
        object.__setattr__(self, "args", tuple(norm))
        if not any(isinstance(v, tuple) for _, v in norm):
            object.__setattr__(self, "style", "box")

    @property
    def spec(self) -> ActionSpec | None:
        return ACTION_SPECS.get(self.type)

    def get(self, name: str, default: Any = None) -> Any:
        name = POINT_STYLE_ALIASES.get(name, name)
        for k, v in self.args:
            if k == name:
                return v
        return default

    def point(self, name: str = START_BOX) -> tuple[int | float, int | float] | None:
        """The point argument ``name`` (``start_box``/``end_box`` or a point-style alias)."""
        v = self.get(name)
        return v if isinstance(v, tuple) else None

    def to_json(self) -> dict:
        return {
            "type": self.type,
            "args": {k: list(v) if isinstance(v, tuple) else v for k, v in self.args},
            "style": self.style,
        }

    @classmethod
    def from_json(cls, d: Mapping) -> Action:
        if not isinstance(d, Mapping) or not isinstance(d.get("type"), str):
            raise ValueError(f"not an action object: {d!r}")
        args = d.get("args") or {}
        if not isinstance(args, Mapping):
            raise ValueError(f"action args must be an object, got {args!r}")
        return cls(d["type"], tuple(args.items()), d.get("style", "box"))


@dataclass(frozen=True)
class ParsedResponse:
    """A parsed model response.

    ``thought`` is the ``Thought:`` text; when there is none it falls back to the
    ``Action_Summary:`` text (as ui-tars does), else to unlabelled text before ``Action:``,
    else "".  A ``<think>...</think>`` preamble is kept out of all three and stored in
    ``think`` (it is hidden reasoning, not the thought the model is trained to write).
    """

    thought: str
    reflection: str | None
    action_summary: str | None
    actions: list[Action]
    action_text: str
    think: str | None = None


# --------------------------------------------------------------------------------------
# Tokenizer / parser

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUM_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_OPEN, _CLOSE = "([{", ")]}"
_CLOSES_STRING_RE = re.compile(r"\s*(?:[,)]|$|[A-Za-z_][A-Za-z0-9_]*\s*=)")
_ABSENT = object()


def _number(tok: str) -> int | float | None:
    tok = tok.strip()
    if not _NUM_RE.fullmatch(tok):
        return None
    try:
        return float(tok) if "." in tok else int(tok)
    except ValueError:  # thousands of digits, which int() refuses to read
        return None


def _mid(a: int | float, b: int | float) -> int | float:
    if isinstance(a, int) and isinstance(b, int) and (a + b) % 2 == 0:
        return (a + b) // 2
    return (a + b) / 2


def _parse_point_value(raw: str) -> tuple[int | float, int | float] | None:
    """Coordinates from any accepted spelling, or None when malformed."""
    s = raw.strip()
    if s.startswith(BOX_START) or s.endswith(BOX_END):
        if not (s.startswith(BOX_START) and s.endswith(BOX_END)) or len(s) < len(BOX_START) + len(BOX_END):
            return None
        s = s[len(BOX_START) : len(s) - len(BOX_END)].strip()
    m = re.fullmatch(r"<(point|bbox)>(.*)</\1>", s, re.S)
    if m:
        parts = [p for p in re.split(r"[\s,]+", m.group(2).strip()) if p]
    elif len(s) >= 2 and (s[0], s[-1]) in (("(", ")"), ("[", "]")):
        parts = s[1:-1].split(",")
    else:
        return None
    nums = [n for n in (_number(p) for p in parts) if n is not None]
    if len(nums) != len(parts):
        return None
    if len(nums) == 2:
        return (nums[0], nums[1])
    if len(nums) == 4:
        return (_mid(nums[0], nums[2]), _mid(nums[1], nums[3]))
    return None


class _Parser:
    """Hand-written scanner over ``text[start:end]``; positions are offsets into ``text``."""

    def __init__(self, text: str, start: int = 0, end: int | None = None):
        self.s = text
        self.i = start
        self.end = len(text) if end is None else end

    def fail(self, message: str, pos: int) -> NoReturn:
        raise ActionSyntaxError(message, pos)

    def skip_ws(self) -> None:
        while self.i < self.end and self.s[self.i].isspace():
            self.i += 1

    def ident(self) -> str | None:
        m = _IDENT_RE.match(self.s, self.i, self.end)
        if not m:
            return None
        self.i = m.end()
        return m.group()

    def snippet(self, pos: int) -> str:
        return self.s[pos : min(pos + 20, self.end)]

    def calls(self) -> list[tuple[Action, int]]:
        out = []
        self.skip_ws()
        while self.i < self.end:
            start = self.i
            out.append((self.call(), start))
            self.skip_ws()
        return out

    def call(self) -> Action:
        start = self.i
        name = self.ident()
        if name is None:
            self.fail(f"expected an action name, found '{self.snippet(start)}'", start)
        spec = ACTION_SPECS.get(name)
        if spec is None:
            self.fail(f"unknown action '{name}'", start)
        self.skip_ws()
        if self.i >= self.end or self.s[self.i] != "(":
            self.fail(f"expected '(' after '{name}'", self.i)
        open_pos = self.i
        self.i += 1
        raw: list[tuple[str, int, str, int]] = []
        while True:
            self.skip_ws()
            if self.i >= self.end:
                self.fail(f"unbalanced parentheses: missing ')' for {name}", open_pos)
            if self.s[self.i] == ")":
                self.i += 1
                break
            key_pos = self.i
            key = self.ident()
            if key is None:
                self.fail(f"expected an argument name (name='value'), found '{self.snippet(key_pos)}'", key_pos)
            self.skip_ws()
            if self.i >= self.end or self.s[self.i] != "=":
                self.fail(f"expected '=' after argument '{key}'", self.i)
            self.i += 1
            self.skip_ws()
            value_pos = self.i
            value = self.value(key)
            raw.append((key, key_pos, value, value_pos))
            self.skip_ws()
            if self.i >= self.end:
                self.fail(f"unbalanced parentheses: missing ')' for {name}", open_pos)
            c = self.s[self.i]
            if c == ",":
                self.i += 1
            elif c == ")":
                self.i += 1
                break
            else:
                self.fail(f"expected ',' or ')' after argument '{key}', found '{self.snippet(self.i)}'", self.i)
        return _build_action(spec, raw, start)

    def value(self, key: str) -> str:
        if self.i >= self.end:
            self.fail(f"missing value for argument '{key}'", self.i)
        c = self.s[self.i]
        if c in "'\"":
            return self.quoted(c)
        return self.bare(key)

    def quoted(self, q: str) -> str:
        s, start = self.s, self.i
        j = start + 1
        buf: list[str] = []
        while j < self.end:
            ch = s[j]
            if ch == "\\" and j + 1 < self.end:
                nx = s[j + 1]
                buf.append(_ESCAPES.get(nx, "\\" + nx))
                j += 2
                continue
            # Models sometimes forget to escape a quote inside content (ui-tars accepts
            # ``type(content='it's')``): a quote only closes the string when the call can
            # continue after it -- with ',' or ')' or the end, or with ``name=`` (a missing
            # comma, reported right after).  Rendered strings always escape, so this never
            # changes how our own output is read.
            if ch == q and _CLOSES_STRING_RE.match(s, j + 1, self.end):
                self.i = j + 1
                return "".join(buf)
            buf.append(ch)
            j += 1
        self.fail("unbalanced quotes: unterminated string", start)

    def bare(self, key: str) -> str:
        s, start = self.s, self.i
        depth: list[str] = []
        j = start
        while j < self.end:
            ch = s[j]
            if ch in _OPEN:
                depth.append(_CLOSE[_OPEN.index(ch)])
            elif ch in _CLOSE:
                if not depth:
                    break
                if depth.pop() != ch:
                    self.fail(f"unbalanced brackets in value of '{key}'", j)
            elif ch == "," and not depth:
                break
            elif ch in "'\"":
                self.fail(f"unexpected quote in unquoted value of '{key}'", j)
            j += 1
        if depth:
            self.fail(f"unbalanced brackets in value of '{key}'", start)
        value = s[start:j].strip()
        if not value:
            self.fail(f"missing value for argument '{key}'", start)
        self.i = j
        return value


def _convert_value(spec: ActionSpec, a: ArgSpec, raw: str, pos: int) -> Any:
    if a.kind == "point":
        if not raw.strip():
            return _ABSENT  # ui-tars drops empty parameters, e.g. type(content='', start_box='')
        p = _parse_point_value(raw)
        if p is None:
            raise ActionSyntaxError(f"malformed coordinates '{raw}'", pos)
        if any(_beyond_limit(v) for v in p):
            raise ActionSyntaxError(
                f"coordinates '{raw[:60]}' lie beyond ±{NUMBER_LIMIT:,}: no screen is that large", pos
            )
        return p
    if a.kind == "direction":
        d = raw.strip().lower()
        if not d:
            return _ABSENT
        if d not in DIRECTIONS:
            raise ActionSyntaxError(
                f"bad direction '{raw}' for {spec.name} (expected one of {', '.join(DIRECTIONS)})", pos
            )
        return d
    if a.kind == "duration":
        if not raw.strip():
            return _ABSENT  # README_v1 mobile prompt literally shows time=''
        n = _number(raw)
        if n is None or _beyond_limit(n):
            raise ActionSyntaxError(f"malformed duration '{raw[:60]}'", pos)
        return n
    return raw  # text / keys: kept verbatim


def _build_action(spec: ActionSpec, raw: list[tuple[str, int, str, int]], start: int) -> Action:
    values: dict[str, Any] = {}
    style = style_key = None
    for key, key_pos, val, val_pos in raw:
        if key in POINT_STYLE_ALIASES:
            canon, key_style = POINT_STYLE_ALIASES[key], "point"
        elif key in (START_BOX, END_BOX):
            canon, key_style = key, "box"
        else:
            canon, key_style = key, None
            for a in spec.args:
                if key in a.aliases:
                    canon = a.name
        arg = spec.arg(canon)
        if arg is None:
            raise ActionSyntaxError(f"unexpected argument '{key}' for {spec.name}", key_pos)
        if canon in values:
            raise ActionSyntaxError(f"duplicate argument '{canon}' for {spec.name}", key_pos)
        if key_style is not None:
            if style is not None and style != key_style:
                raise ActionSyntaxError(f"mixed coordinate styles ('{style_key}' and '{key}') for {spec.name}", key_pos)
            style, style_key = key_style, key
        values[canon] = _convert_value(spec, arg, val, val_pos)
    for a in spec.args:
        if a.required and values.get(a.name, _ABSENT) is _ABSENT:
            raise ActionSyntaxError(f"missing argument '{a.name}' for {spec.name}", start)
    if spec.require_any and all(values.get(n, _ABSENT) is _ABSENT for n in spec.require_any):
        raise ActionSyntaxError(f"missing argument '{spec.require_any[0]}' for {spec.name}", start)
    args = tuple((a.name, values[a.name]) for a in spec.args if values.get(a.name, _ABSENT) is not _ABSENT)
    return Action(spec.name, args, style or "box")


_ACTION_LINE_RE = re.compile(r"^[ \t]*Action:", re.M)
_LEADING_ACTION_RE = re.compile(r"\s*Action:")
_HEADER_RE = re.compile(r"^[ \t]*(Thought|Reflection|Action_Summary):", re.M)
_BARE_CALL_RE = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*\(")


def parse_actions(text: str) -> list[Action]:
    """Parse one or more calls separated by whitespace (usually a blank line).

    A leading ``Action:`` label is allowed.  Error positions are offsets into ``text``.
    """
    return list(_parsed_actions(text))


# The last texts parsed: an export reads each correction three times (its target, the action alone, its rounding),
# and Actions are immutable, so the parse is shared.
@functools.lru_cache(maxsize=1024)
def _parsed_actions(text: str) -> tuple[Action, ...]:
    m = _LEADING_ACTION_RE.match(text)
    start = m.end() if m else 0
    return tuple(a for a, _ in _Parser(text, start).calls())


def parse_action(text: str) -> Action:
    """Parse exactly one call."""
    m = _LEADING_ACTION_RE.match(text)
    start = m.end() if m else 0
    calls = _Parser(text, start).calls()
    if not calls:
        raise ActionSyntaxError("expected an action", len(text))
    if len(calls) > 1:
        raise ActionSyntaxError(f"expected a single action, found {len(calls)}", calls[1][1])
    return calls[0][0]


def _find_action_label(text: str, pos: int) -> int | None:
    """Offset just after the ``Action:`` label that starts the action section."""
    m = _LEADING_ACTION_RE.match(text, pos)  # label right at pos, e.g. after </think>
    if m:
        return m.end()
    # A label at the start of a line: "Action:" inside a thought sentence is not one.
    m = _ACTION_LINE_RE.search(text, pos)
    if m:
        return m.end()
    # Single-line responses ("Thought: x Action: click(...)"): first label after whitespace.
    i = text.find("Action:", pos)
    while i != -1:
        if text[i - 1].isspace() or text[i - 1] == ">":
            return i + len("Action:")
        i = text.find("Action:", i + 1)
    return None


def parse_response(text: str) -> ParsedResponse:
    """Parse a full model response (see the module docstring for the grammar).

    ``Reflection: R Action_Summary: S`` gives ``reflection=R, action_summary=S`` and, with no
    ``Thought:``, ``thought=S`` (ui-tars' mapping).  A response that is only a call (no
    labels at all) is accepted as the no-thought variant.
    """
    pos = 0
    think = None
    lead = len(text) - len(text.lstrip())
    if text.startswith("<think>", lead):
        # Opaque: a draft "Action:" inside the hidden reasoning must not be taken.
        end_think = text.find("</think>", lead)
        if end_think == -1:
            raise ActionSyntaxError("unterminated <think>", lead)
        think = text[lead + len("<think>") : end_think].strip()
        pos = end_think + len("</think>")
    else:
        # Some servers put "<think>" in the prompt, so only the closing tag is generated.
        end_think = text.find("</think>")
        label = _find_action_label(text, 0)
        if end_think != -1 and (label is None or end_think < label):
            think = text[:end_think].strip()
            pos = end_think + len("</think>")

    label_end = _find_action_label(text, pos)
    if label_end is None:
        if _BARE_CALL_RE.match(text, pos) and not _HEADER_RE.search(text, pos):
            action_start, preamble = pos, ""
        else:
            raise ActionSyntaxError("missing 'Action:'", len(text))
    else:
        action_start = label_end
        preamble = text[pos : label_end - len("Action:")]

    sections: dict[str, list[str]] = {"Thought": [], "Reflection": [], "Action_Summary": []}
    headers = list(_HEADER_RE.finditer(preamble))
    unlabelled = (preamble[: headers[0].start()] if headers else preamble).strip()
    for n, h in enumerate(headers):
        stop = headers[n + 1].start() if n + 1 < len(headers) else len(preamble)
        sections[h.group(1)].append(preamble[h.end() : stop].strip())

    reflection = "\n\n".join(sections["Reflection"]) if sections["Reflection"] else None
    summary = "\n\n".join(sections["Action_Summary"]) if sections["Action_Summary"] else None
    thought_parts = [p for p in [unlabelled, *sections["Thought"]] if p]
    if sections["Thought"]:
        thought = "\n".join(thought_parts)
    elif summary is not None:
        thought = "\n".join([p for p in [unlabelled, summary] if p])
    else:
        thought = unlabelled

    try:
        calls = _Parser(text, action_start).calls()
    except ActionSyntaxError as exc:
        exc.action_start = action_start
        raise
    if not calls:
        raise ActionSyntaxError("expected an action after 'Action:'", action_start, action_start)
    return ParsedResponse(
        thought=thought,
        reflection=reflection,
        action_summary=summary,
        actions=[a for a, _ in calls],
        action_text=text[action_start:].strip(),
        think=think,
    )


# --------------------------------------------------------------------------------------
# Rendering


def _fmt_num(v: int | float) -> str:
    if isinstance(v, int):
        return str(v)
    s = f"{v:.3f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _quote(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r") + "'"


def render_action(action: Action, *, box_tokens: bool = True) -> str:
    """Canonical UI-TARS text for ``action``.

    Box style: ``click(start_box='<|box_start|>(34,546)<|box_end|>')`` (or ``'(34,546)'``
    with ``box_tokens=False``); point style: ``click(point='<point>34 546</point>')``.
    Strings are single-quoted with ``\\\\``, ``\\'``, ``\\n`` and ``\\r`` escaped.  Ints render
    as ints, floats with up to 3 decimals and no trailing zeros.
    """
    spec = action.spec
    has_end = any(k == END_BOX for k, _ in action.args)
    parts = []
    for k, v in action.args:
        kind = _arg_kind(spec, k, v)
        if kind == "point":
            x, y = _fmt_num(v[0]), _fmt_num(v[1])
            if action.style == "point":
                name = {START_BOX: "start_point" if has_end else "point", END_BOX: "end_point"}.get(k, k)
                parts.append(f"{name}='<point>{x} {y}</point>'")
            else:
                inner = f"({x},{y})"
                if box_tokens:
                    inner = BOX_START + inner + BOX_END
                parts.append(f"{k}='{inner}'")
        elif kind == "duration":
            parts.append(f"{k}='{_fmt_num(v)}'")
        else:
            if not isinstance(v, str):
                raise TypeError(f"argument {k!r} of {action.type} must be str, got {v!r}")
            parts.append(f"{k}={_quote(v)}")
    return f"{action.type}({', '.join(parts)})"


def render_response(
    thought: str,
    actions: Action | Iterable[Action],
    *,
    box_tokens: bool = True,
    reflection: str | None = None,
) -> str:
    """``Thought: ...\\nAction: ...``; with ``reflection`` the UI-TARS reflection layout
    ``Reflection: ...\\nAction_Summary: <thought>\\nAction: ...``; an empty thought gives the
    no-thought variant ``Action: ...``.  Several actions are joined by a blank line."""
    acts = [actions] if isinstance(actions, Action) else list(actions)
    if not acts:
        raise ValueError("render_response needs at least one action")
    body = "\n\n".join(render_action(a, box_tokens=box_tokens) for a in acts)
    if reflection is not None:
        head = f"Reflection: {reflection.strip()}\nAction_Summary: {thought.strip()}\n"
    elif thought and thought.strip():
        head = f"Thought: {thought.strip()}\n"
    else:
        head = ""
    return f"{head}Action: {body}"


# --------------------------------------------------------------------------------------
# Coordinate conventions


def smart_resize(
    height: int,
    width: int,
    factor: int = IMAGE_FACTOR,
    min_pixels: int = MIN_PIXELS,
    max_pixels: int = MAX_PIXELS,
) -> tuple[int, int]:
    """Qwen2.5-VL / ui-tars ``smart_resize`` (same arithmetic, so results match exactly):
    both sides multiples of ``factor``, area within [min_pixels, max_pixels], aspect kept."""
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(
            f"absolute aspect ratio must be smaller than {MAX_RATIO}, got {max(height, width) / min(height, width)}"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _check(convention: str, width: Any, height: Any) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown coordinate convention {convention!r} (expected one of {CONVENTIONS})")
    for n, v in (("width", width), ("height", height)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{n} must be a positive int, got {v!r}")


def _resized_wh(width: int, height: int, max_pixels: int | None) -> tuple[int, int]:
    h, w = smart_resize(height, width, max_pixels=max_pixels or MAX_PIXELS)
    return w, h


def model_number(v: int | float) -> int:
    """``v`` as the integer a model emits: the nearest one, a tie (x.5) to the even neighbour (Python's ``round``, on
    the float as computed: ties are exact binary halves). The one rounding of every coordinate the studio makes,
    stores from an editor or exports; static/js/geometry.js rounds the same way (tests/serving/test_js_units.py feeds it the
    points this module computes, ties among them)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return int(round(v))


def round_point(point: tuple) -> tuple[int, int]:
    """``point`` with both coordinates rounded by :func:`model_number`."""
    return (model_number(point[0]), model_number(point[1]))


def round_action(action: Action) -> tuple[Action, int]:
    """``action`` with every point rounded by :func:`model_number`, and how many points had decimals (0: the action
    itself is returned). What an editor stores and what an export trains: a model never emits a decimal."""
    rounded = 0
    args = []
    for k, v in action.args:
        if isinstance(v, tuple) and not all(isinstance(c, int) for c in v):
            v = round_point(v)
            rounded += 1
        args.append((k, v))
    if not rounded:
        return action, 0
    return Action(action.type, tuple(args), action.style), rounded


def round_box(box: Sequence[float]) -> tuple[int, int, int, int]:
    """``box`` ([x1, y1, x2, y2]) with every edge rounded by :func:`model_number` (corners kept in order)."""
    x1, y1, x2, y2 = (model_number(v) for v in box)
    return (x1, y1, x2, y2)


def to_screen_pixels(
    point: tuple[float, float], *, convention: str, width: int, height: int, max_pixels: int | None = None
) -> tuple[float, float]:
    """Model coordinates -> screenshot pixels (floats, unrounded)."""
    _check(convention, width, height)
    x, y = point
    if convention == RELATIVE_1000:
        return (x / 1000 * width, y / 1000 * height)
    if convention == SMART_RESIZE_PIXELS:
        rw, rh = _resized_wh(width, height, max_pixels)
        return (x / rw * width, y / rh * height)
    return (float(x), float(y))


def from_screen_pixels(
    point_px: tuple[float, float], *, convention: str, width: int, height: int, max_pixels: int | None = None
) -> tuple[int, int]:
    """Screenshot pixels -> model coordinates: integers in every convention (what a model emits), rounded once by
    :func:`model_number` (half to even)."""
    _check(convention, width, height)
    x, y = point_px
    if convention == RELATIVE_1000:
        return (model_number(x / width * 1000), model_number(y / height * 1000))
    if convention == SMART_RESIZE_PIXELS:
        rw, rh = _resized_wh(width, height, max_pixels)
        return (model_number(x / width * rw), model_number(y / height * rh))
    return (model_number(x), model_number(y))


def convert_action(
    action: Action, *, src: str, dst: str, width: int, height: int, max_pixels: int | None = None
) -> Action:
    """The same action with every point converted from convention ``src`` to ``dst``."""
    _check(src, width, height)
    _check(dst, width, height)
    if src == dst:
        return action
    args = []
    for k, v in action.args:
        if isinstance(v, tuple):
            px = to_screen_pixels(v, convention=src, width=width, height=height, max_pixels=max_pixels)
            v = from_screen_pixels(px, convention=dst, width=width, height=height, max_pixels=max_pixels)
        args.append((k, v))
    return Action(action.type, tuple(args), action.style)


# --------------------------------------------------------------------------------------
# Validation


def _bounds_problem(
    action: Action, name: str, p: tuple, convention: str, width: int, height: int, max_pixels: int | None
) -> str | None:
    x, y = p
    # Model conventions address the continuous screen extent and emit the far edge itself
    # (x=1000, x=w_resized), so their upper bound is inclusive.  Screen pixels index pixels:
    # 0..W-1, i.e. x < W (a float like 1919.5 still lies in the last pixel).
    if convention == RELATIVE_1000:
        xmax, ymax, inclusive = 1000, 1000, True
    elif convention == SMART_RESIZE_PIXELS:
        xmax, ymax = _resized_wh(width, height, max_pixels)
        inclusive = True
    else:
        xmax, ymax, inclusive = width, height, False
    ok_x = 0 <= x <= xmax if inclusive else 0 <= x < xmax
    ok_y = 0 <= y <= ymax if inclusive else 0 <= y < ymax
    if ok_x and ok_y:
        return None
    rng = f"[0, {xmax}] x [0, {ymax}]" if inclusive else f"[0, {xmax - 1}] x [0, {ymax - 1}]"
    px = to_screen_pixels(p, convention=convention, width=width, height=height, max_pixels=max_pixels)
    return (
        f"{action.type} {name} ({_fmt_num(x)}, {_fmt_num(y)}) is outside the screen: {convention} "
        f"coordinates must lie in {rng} (it maps to ({px[0]:.1f}, {px[1]:.1f}) px on {width}x{height})"
    )


def off_screen_points(
    actions: Iterable[Action], *, convention: str, width: int, height: int, max_pixels: int | None = None
) -> list[str]:
    """Every point of ``actions`` outside a ``width`` x ``height`` screen in ``convention``, one sentence each
    ([] = all inside). The bounds are ``validate_action``'s (the one rule): relative-1000 and smart-resize include
    their far edge (1000; w_resized), screen pixels end at the last pixel (0..W-1). The import flags a recorded step
    by it, in the trace's own convention."""
    _check(convention, width, height)
    problems = []
    for action in actions:
        for name, value in action.args:
            if isinstance(value, tuple):
                problem = _bounds_problem(action, name, value, convention, width, height, max_pixels)
                if problem:
                    problems.append(problem)
    return problems


def validate_action(
    action: Action,
    *,
    convention: str,
    width: int,
    height: int,
    platform: str | None = None,
    max_pixels: int | None = None,
) -> list[str]:
    """Hard problems with an action in context, as human-readable sentences ([] = fine).

    Checks: known action, required/unknown arguments, value types, bad direction, empty
    key, negative duration, platform availability, and coordinates off-screen.  Bounds, in
    the action's own convention: relative-1000 ``0 <= x, y <= 1000``; smart-resize
    ``0 <= x <= w_resized``, ``0 <= y <= h_resized`` (both edges inclusive: models emit the
    far edge); screen-pixels ``0 <= x < W``, ``0 <= y < H`` (pixel indices 0..W-1; a float
    such as 1919.5 still lies in the last pixel).  Soft issues (e.g. more than 3 keys in a
    hotkey) are not reported.
    """
    _check(convention, width, height)
    if platform is not None and platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r} (expected one of {PLATFORMS})")
    spec = ACTION_SPECS.get(action.type)
    if spec is None:
        return [f"unknown action '{action.type}'"]
    problems: list[str] = []
    if platform is not None and platform not in spec.platforms:
        avail = ", ".join(p for p in PLATFORMS if p in spec.platforms)
        problems.append(f"{spec.name} is not available on {platform} (only on {avail})")
    present = dict(action.args)
    for a in spec.args:
        if a.required and a.name not in present:
            problems.append(f"missing argument '{a.name}' for {spec.name}")
    if spec.require_any and not any(n in present for n in spec.require_any):
        problems.append(f"missing argument '{spec.require_any[0]}' for {spec.name}")
    for k, v in action.args:
        arg = spec.arg(k)
        if arg is None:
            problems.append(f"unexpected argument '{k}' for {spec.name}")
            continue
        if arg.kind == "point":
            if not isinstance(v, tuple):
                problems.append(f"argument '{k}' of {spec.name} must be a point")
                continue
            msg = _bounds_problem(action, k, v, convention, width, height, max_pixels)
            if msg:
                problems.append(msg)
        elif arg.kind == "duration":
            if isinstance(v, (int, float)) and v < 0:
                problems.append(f"negative duration {_fmt_num(v)} for {spec.name}")
        elif not isinstance(v, str):
            problems.append(f"argument '{k}' of {spec.name} must be text")
        elif arg.kind == "direction" and v not in DIRECTIONS:
            problems.append(f"bad direction '{v}' for {spec.name} (expected one of {', '.join(DIRECTIONS)})")
        elif arg.kind == "keys" and not v.strip():
            problems.append(f"empty key for {spec.name}")
    return problems


# --------------------------------------------------------------------------------------
# Element boxes: the box of the element an action's point targets


TARGET_BOX = "target_box"
"""The key of an action object (``Action.to_json`` plus this key) that holds the box ``[x1, y1, x2, y2]`` of the
element its ``start_box`` point targets, in the same coordinate convention as the point. The box is metadata for
training (exports, rewards, agreement): the action's text stays the UI-TARS action and does not carry it."""


def box_of(value: Any) -> tuple[int | float, int | float, int | float, int | float]:
    """``value`` ([x1, y1, x2, y2], any corner order) as a box with x1 <= x2 and y1 <= y2 (numbers kept to 3
    decimals, like points); TypeError/ValueError for anything else. A list, a tuple, or a numpy array (a box read
    from Parquet with pandas; anything with ``tolist``, without importing numpy: this module stays plain Python)."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if not isinstance(value, (tuple, list)) or len(value) != 4:
        raise TypeError(f"a box must be [x1, y1, x2, y2], got {value!r}")
    x1, y1, x2, y2 = (_norm_number(v) for v in value)
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def box_centre(box: Sequence[float]) -> tuple[int, int]:
    """The point a box stands for: its centre as a model would emit it, integers rounded by :func:`model_number`
    (half to even: the centre of [10, 0, 13, 4] is (12, 2))."""
    x1, y1, x2, y2 = box
    return (model_number((x1 + x2) / 2), model_number((y1 + y2) / 2))


def point_in_box(point: Sequence[float], box: Sequence[float]) -> bool:
    """Whether ``point`` lies inside ``box`` (edges included)."""
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two boxes (0.0 when they do not overlap; two empty boxes at one spot: 1.0)."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    if union <= 0:
        return 1.0 if tuple(a) == tuple(b) else 0.0
    return inter / union


def convert_box(
    box: Sequence[float], *, src: str, dst: str, width: int, height: int, max_pixels: int | None = None
) -> Sequence[float]:
    """``box`` converted corner by corner from convention ``src`` to ``dst`` (as :func:`convert_action` does points)."""
    _check(src, width, height)
    _check(dst, width, height)
    if src == dst:
        return box
    corners: list[int | float] = []
    for p in ((box[0], box[1]), (box[2], box[3])):
        px = to_screen_pixels(p, convention=src, width=width, height=height, max_pixels=max_pixels)
        corners.extend(from_screen_pixels(px, convention=dst, width=width, height=height, max_pixels=max_pixels))
    return box_of(corners)


def box_problems(
    action: Action, box: Any, *, convention: str, width: int, height: int, max_pixels: int | None = None
) -> list[str]:
    """What is wrong with ``box`` as the target element's box of ``action`` ([] = fine): the action must take a
    target point (``start_box``), the box must have an area and lie on the screen (the bounds of
    ``validate_action``), and the point must lie inside its own box."""
    spec = ACTION_SPECS.get(action.type)
    if spec is None or spec.arg(START_BOX) is None:
        return [f"a {action.type} action has no target point, so it takes no element box"]
    try:
        box = box_of(box)
    except (TypeError, ValueError) as exc:
        return [f"the element box is malformed: {exc}"]
    x1, y1, x2, y2 = box
    problems = []
    if x1 == x2 or y1 == y2:
        problems.append("the element box has no area: drag across the element to draw it")
    for corner in ((x1, y1), (x2, y2)):
        msg = _bounds_problem(action, "element box corner", corner, convention, width, height, max_pixels)
        if msg:
            problems.append(msg)
    outside = box_point_problem(action, box)
    if outside:
        problems.append(outside)
    return problems


def box_point_problem(action: Action, box: Sequence[float]) -> str | None:
    """The sentence that refuses ``action``'s point outside its own element ``box`` (None: inside, or no point)."""
    point = action.point()
    if point is None or point_in_box(point, box):
        return None
    return (
        f"the point ({_fmt_num(point[0])}, {_fmt_num(point[1])}) lies outside its element box "
        f"[{', '.join(_fmt_num(v) for v in box)}]: move the point inside the box or redraw the box"
    )


# --------------------------------------------------------------------------------------
# Table for the browser editor


_CONVENTION_INFO = {
    RELATIVE_1000: (
        "Relative 0-1000",
        "UI-TARS v1 (Qwen2-VL): x_px = x / 1000 * width, y_px = y / 1000 * height.",
    ),
    SMART_RESIZE_PIXELS: (
        "Smart-resize pixels",
        "UI-TARS-1.5 (Qwen2.5-VL): pixels of the smart_resize'd screenshot "
        "(factor 28, min 100*28*28, max max_pixels): x_px = x / w_resized * width.",
    ),
    SCREEN_PIXELS: ("Screen pixels", "Pixels of the screenshot as stored."),
}


def action_table_json() -> dict:
    """The grammar as JSON for the structured editor (so the page keeps no copy of it), its words in the request's
    language."""
    from django.utils.translation import gettext as translated

    actions = []
    for s in _SPECS:
        args = []
        for a in s.args:
            d = {
                "name": a.name,
                "kind": a.kind,
                "required": a.required,
                "aliases": list(a.aliases),
                "description": translated(a.description),
            }
            d["required_in_target"] = a.required or a.name in s.target_required
            if a.kind == "point":
                d["point_style_names"] = [k for k, v in POINT_STYLE_ALIASES.items() if v == a.name]
            args.append(d)
        actions.append(
            {
                "name": s.name,
                # In the request's language (the texts are marked where the actions are declared).
                "label": translated(s.label),
                "description": translated(s.description),
                "platforms": [p for p in PLATFORMS if p in s.platforms],
                "extra": s.extra,
                "require_any": list(s.require_any),
                "args": args,
                "mark": ACTION_MARKS[s.name],
            }
        )
    return {
        "version": 1,
        "actions": actions,
        "arg_kinds": list(ARG_KINDS),
        "directions": list(DIRECTIONS),
        # The action types a correction may use, per platform (the prompt's action space): what the editor offers.
        "targets": {p: list(target_actions(p)) for p in PLATFORMS},
        "max_hotkey_keys": MAX_HOTKEY_KEYS,
        "platforms": list(PLATFORMS),
        "styles": list(STYLES),
        "box_tokens": {"start": BOX_START, "end": BOX_END},
        "target_box_key": TARGET_BOX,
        "conventions": [
            {"id": c, "label": _CONVENTION_INFO[c][0], "description": _CONVENTION_INFO[c][1]} for c in CONVENTIONS
        ],
        "default_convention": RELATIVE_1000,
        "smart_resize": {
            "factor": IMAGE_FACTOR,
            "min_pixels": MIN_PIXELS,
            "max_pixels": MAX_PIXELS,
            "max_ratio": MAX_RATIO,
        },
    }
