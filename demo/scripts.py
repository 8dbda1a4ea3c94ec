"""Scripted UI-TARS traces over the demo screens, with the annotation a careful human would write.

A :class:`TraceScript` is a list of :class:`StepScript` s: the screen the agent saw before acting (a
:class:`ScreenSpec`, rendered on demand), its thought, and its action as an :class:`Act` naming the widget it
targets. :func:`format_action` turns an ``Act`` into a UI-TARS action string with box tokens, in the
relative-1000 convention (the grammar's ``from_screen_pixels``, ties to even) at the target widget's centre, or at a fraction
of its box (``at``). Wrong steps name the widget they really hit (e.g. ``sidebar.bluetooth`` when the thought
says Display), so every coordinate in a demo trace can be checked against a real box.

All variation (clock times, file sizes and dates, the starting brightness, the battery level) is drawn from
``random.Random(seed)``; the structure of the traces does not depend on the seed.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from traces import grammar

from .screens import PHONE_DEFAULTS, Screen, make_file_system, render_files, render_phone, render_settings, render_web

RENDERERS: dict[str, Callable[[dict[str, Any]], Screen]] = {
    "settings": render_settings,
    "files": render_files,
    "web": render_web,
    "phone": render_phone,
}

POINT_ACTIONS = ("click", "left_double", "right_single", "long_press")


# --------------------------------------------------------------------------------------------------------------
# Data model


@dataclass(frozen=True)
class Act:
    """One UI-TARS action. ``target``/``end`` name widgets of the screen it is taken on; ``at``/``end_at``
    are fractions inside those boxes (default: the centre)."""

    name: str
    target: str | None = None
    at: tuple[float, float] = (0.5, 0.5)
    end: str | None = None
    end_at: tuple[float, float] = (0.5, 0.5)
    content: str | None = None
    key: str | None = None
    direction: str | None = None
    app_name: str | None = None

    @property
    def targets(self) -> list[tuple[str, tuple[float, float]]]:
        """(widget, fraction) for each coordinate the action string carries, in order."""
        out = []
        if self.target:
            out.append((self.target, self.at))
        if self.end:
            out.append((self.end, self.end_at))
        return out


@dataclass
class ScreenSpec:
    kind: str  # key of RENDERERS
    state: dict[str, Any]

    def render(self) -> Screen:
        return RENDERERS[self.kind](self.state)

    def but(self, **changes: Any) -> ScreenSpec:
        """A copy with some state keys changed."""
        st = copy.deepcopy(self.state)
        st.update(changes)
        return ScreenSpec(self.kind, st)


@dataclass
class StepScript:
    screen: ScreenSpec  # o_i, before the action
    thought: str
    act: Act
    wrong: bool = False  # the first erroneous step (tau) of the trace


@dataclass
class AnnotationScript:
    tau: int  # 1-based
    category: str
    note: str
    corrected_thought: str
    corrected_act: Act  # taken on o_tau
    reflection_thought: str
    reflection_act: Act  # taken on o_{tau+1} (the final screenshot when tau == n)


@dataclass
class TraceScript:
    external_id: str
    instruction: str
    platform: str  # desktop | mobile | web
    app: str
    outcome: str  # success | failure | unknown
    steps: list[StepScript]
    final: ScreenSpec | None
    annotation: AnnotationScript | None  # None: the trace has no error

    def screen_after(self, i: int) -> ScreenSpec | None:
        """o_{i+1} for a 1-based step i: the next step's screen, or the final screen after the last step."""
        return self.steps[i].screen if i < len(self.steps) else self.final

    def annotation_dict(self, screens: dict[int, Screen] | None = None) -> dict[str, Any]:
        """The demo annotation. ``screens`` may hold already-rendered o_i (1-based; n+1 = final)."""
        a = self.annotation
        if a is None:
            return {"verdict": "no_error"}
        screens = screens or {}
        o_tau = screens.get(a.tau) or self.steps[a.tau - 1].screen.render()
        after = self.screen_after(a.tau)
        assert after is not None, "a post-reflection needs o_{tau+1}"
        o_next = screens.get(a.tau + 1) or after.render()
        return {
            "verdict": "error",
            "tau": a.tau,
            "error_category": a.category,
            "note": a.note,
            "corrected_thought": a.corrected_thought,
            "corrected_action": format_action(a.corrected_act, o_tau),
            "reflection_thought": a.reflection_thought,
            "reflection_action": format_action(a.reflection_act, o_next),
        }


# --------------------------------------------------------------------------------------------------------------
# Action strings


def from_rel(xr: float, yr: float, size: tuple[int, int]) -> tuple[float, float]:
    """relative-1000 -> pixel coordinates, through the one grammar."""
    w, h = size
    return grammar.to_screen_pixels((xr, yr), convention=grammar.RELATIVE_1000, width=w, height=h)


def _widget_named(name: str | None, act: Act) -> str:
    """The widget a pointing action acts on, which its script always names."""
    if name is None:
        raise ValueError(f"a {act.name} action names no widget to point at")
    return name


def format_action(act: Act, screen: Screen) -> str:
    """``act`` as UI-TARS text with box tokens, built and rendered by the one grammar (its rounding, its escaping)."""
    w, h = screen.size

    def point(name: str | None, at: tuple[float, float]) -> tuple[int | float, int | float]:
        return grammar.from_screen_pixels(
            screen.box(_widget_named(name, act)).point(*at), convention=grammar.RELATIVE_1000, width=w, height=h
        )

    n = act.name
    args: dict[str, Any] = {}
    if n in POINT_ACTIONS or n in ("drag", "scroll"):
        args[grammar.START_BOX] = point(act.target, act.at)
    if n == "drag":
        args[grammar.END_BOX] = point(act.end, act.end_at)
    if n == "scroll":
        args["direction"] = act.direction
    if n == "hotkey":
        args["key"] = act.key
    if n == "type":
        args["content"] = act.content or ""
    if n == "finished" and act.content:
        args["content"] = act.content
    if n == "open_app":
        args["app_name"] = act.app_name or ""
    if n not in grammar.ACTION_SPECS:
        raise ValueError(f"unknown action {n!r}")
    return grammar.render_action(grammar.Action(n, tuple(args.items())))


_POINT_RE = re.compile(r"<\|box_start\|>\((\d+),(\d+)\)<\|box_end\|>")


def action_points(action: str) -> list[tuple[int, int]]:
    """The relative-1000 points in an action string, in order."""
    return [(int(x), int(y)) for x, y in _POINT_RE.findall(action)]


# --------------------------------------------------------------------------------------------------------------
# Seeded details


def _clock_seq(rng: random.Random, n: int, hours: tuple[int, int], twelve: bool = False) -> list[str]:
    h = rng.randint(*hours)
    m = rng.randint(0, 50)
    out = []
    for _ in range(n):
        hh = (h - 1) % 12 + 1 if twelve else h
        out.append(f"{hh}:{m:02d}")
        m += rng.choice((0, 1, 1))
        if m >= 60:
            h, m = h + 1, m - 60
    return out


def _with_clock(specs: list[ScreenSpec], clocks: list[str]) -> list[ScreenSpec]:
    return [s.but(clock=c) for s, c in zip(specs, clocks)]


def _sorted_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (e["kind"] != "folder", e["name"].lower()))


# --------------------------------------------------------------------------------------------------------------
# The traces


def _settings_display(rng: random.Random) -> TraceScript:
    b0 = rng.choice((30, 35, 40, 45, 50, 55))
    base = ScreenSpec("settings", {"page": "wifi", "brightness": b0, "night_light": False})
    specs = [
        base,
        base.but(page="bluetooth"),
        base.but(page="display"),
        base.but(page="display", brightness=80),
        base.but(page="display", brightness=80, night_light=True),
    ]
    specs = _with_clock(specs + [specs[-1]], _clock_seq(rng, 6, (9, 16)))
    steps = [
        StepScript(
            specs[0],
            "The Settings app is open on the Wi-Fi page. Brightness and Night Light are display "
            'settings, so I need the Display page first. I\'ll click "Display" in the left sidebar.',
            Act("click", "sidebar.bluetooth"),
            wrong=True,
        ),
        StepScript(
            specs[1],
            "The Bluetooth page opened instead of Display. Display is the item right below "
            'Bluetooth in the sidebar, so I\'ll click "Display".',
            Act("click", "sidebar.display"),
        ),
        StepScript(
            specs[2],
            f"The Display page is open and the Brightness slider is at {b0}%. To set it to 80% "
            "I'll drag the slider handle to the 80% position on the track.",
            Act("drag", "slider.brightness.knob", end="slider.brightness", end_at=(0.8, 0.5)),
        ),
        StepScript(
            specs[3],
            "Brightness now reads 80%. Next I need to turn on Night Light, whose switch is off. "
            "I'll click the Night Light switch.",
            Act("click", "toggle.night_light"),
        ),
        StepScript(
            specs[4],
            "Brightness is at 80% and the Night Light switch is on, with its schedule shown below. "
            "Both parts of the task are done.",
            Act("finished", content="Brightness is set to 80% and Night Light is on."),
        ),
    ]
    return TraceScript(
        "demo-settings-display-brightness",
        "Set the screen brightness to 80% and turn on Night Light.",
        "desktop",
        "Settings",
        "success",
        steps,
        specs[5],
        AnnotationScript(
            1,
            "wrong element / grounding",
            "The thought names Display but the click landed on Bluetooth, the sidebar item just above it. "
            "The agent noticed and recovered at step 2, one step late.",
            "The Settings app is open on the Wi-Fi page. Brightness and Night Light are on the Display page, so "
            'I\'ll click "Display" in the left sidebar, the item below Bluetooth.',
            Act("click", "sidebar.display"),
            "I clicked Bluetooth by mistake: the Bluetooth page is showing, not Display. Display is directly below "
            "Bluetooth in the sidebar, so I'll click it to get back on track.",
            Act("click", "sidebar.display"),
        ),
    )


def _settings_dark_mode(rng: random.Random) -> TraceScript:
    base = ScreenSpec("settings", {"page": "sound", "volume": rng.choice((40, 55, 65, 70))})
    specs = [
        base,
        base.but(page="appearance"),
        base.but(page="appearance", dark_mode=True),
        base.but(page="appearance", dark_mode=True, accent="green"),
    ]
    specs = _with_clock(specs + [specs[-1]], _clock_seq(rng, 5, (9, 16)))
    steps = [
        StepScript(
            specs[0],
            "The Settings app is showing the Sound page. Dark mode and the accent colour are "
            'under Appearance, so I\'ll click "Appearance" in the sidebar.',
            Act("click", "sidebar.appearance"),
        ),
        StepScript(
            specs[1],
            "The Appearance page is open and the Dark mode switch is off. I'll click the Dark mode "
            "switch to turn it on.",
            Act("click", "toggle.dark_mode"),
        ),
        StepScript(
            specs[2],
            "The window turned dark, so dark mode is on. Now the accent colour: blue is selected "
            "in the Accent colour row. I'll click the green swatch, the third one.",
            Act("click", "swatch.green"),
        ),
        StepScript(
            specs[3],
            "Dark mode is on and the green swatch has the check mark, so the accent colour is "
            "green. The task is complete.",
            Act("finished", content="Dark mode is on and the accent colour is green."),
        ),
    ]
    return TraceScript(
        "demo-settings-dark-mode",
        "Switch the system to dark mode and change the accent colour to green.",
        "desktop",
        "Settings",
        "success",
        steps,
        specs[4],
        None,
    )


def _files_rename(rng: random.Random) -> TraceScript:
    fs = make_file_system(rng)
    target = "draft_v2.docx"
    base = ScreenSpec("files", {"fs": fs, "folder": "Home"})
    docs = base.but(folder="Documents")
    fs_deleted = copy.deepcopy(fs)
    fs_deleted["Documents"] = [e for e in fs_deleted["Documents"] if e["name"] != target]
    fs_deleted["Trash"] = [e for e in fs["Documents"] if e["name"] == target]
    specs = [
        base,
        docs,
        docs.but(selected=target, context_menu={"target": target}),
        docs.but(fs=fs_deleted, toast=f"\u201c{target}\u201d moved to Trash"),
        docs.but(fs=fs_deleted, search="report_final.docx"),
    ]
    specs = _with_clock(specs + [specs[-1]], _clock_seq(rng, 6, (9, 16)))
    steps = [
        StepScript(
            specs[0],
            "The file manager is showing my Home folder. The file is in Documents, so I'll click "
            '"Documents" in the sidebar.',
            Act("click", "sidebar.documents"),
        ),
        StepScript(
            specs[1],
            f"Documents is open and {target} is in the list. I'll right-click it to open its "
            "context menu, which has a Rename option.",
            Act("right_single", f"file.{target}"),
        ),
        StepScript(
            specs[2],
            f'The context menu for {target} is open. I\'ll click "Rename…" to edit the file name.',
            Act("click", "menu.trash"),
            wrong=True,
        ),
        StepScript(
            specs[3],
            "The rename field should be active now. I'll type the new name and press Enter to confirm it.",
            Act("type", content="report_final.docx\n"),
        ),
        StepScript(
            specs[4],
            f"I typed the new name and pressed Enter, so {target} should now be called "
            "report_final.docx. The task is done.",
            Act("finished", content=f"Renamed {target} to report_final.docx."),
        ),
    ]
    return TraceScript(
        "demo-files-rename-draft",
        f"In Documents, rename {target} to report_final.docx.",
        "desktop",
        "Files",
        "failure",
        steps,
        specs[5],
        AnnotationScript(
            3,
            "wrong element / grounding",
            "The thought says Rename… but the click hit Move to Trash, the next menu item down, so the file was "
            "deleted. The typed name then went into the type-ahead search, and the agent claimed success.",
            f'The context menu for {target} is open. I\'ll click "Rename…" (F2), the item just above Move to '
            "Trash, to edit the file name.",
            Act("click", "menu.rename"),
            f"The notification says \u201c{target}\u201d was moved to Trash: I clicked Move to Trash instead of "
            "Rename…. I need the file back before I can rename it, so I'll click Undo in the notification.",
            Act("click", "toast.undo"),
        ),
    )


def _files_move(rng: random.Random) -> TraceScript:
    fs = make_file_system(rng)
    name = "invoice_march.pdf"
    base = ScreenSpec("files", {"fs": fs, "folder": "Home"})
    fs_moved = copy.deepcopy(fs)
    entry = next(e for e in fs_moved["Downloads"] if e["name"] == name)
    fs_moved["Downloads"] = [e for e in fs_moved["Downloads"] if e["name"] != name]
    fs_moved["Documents"] = _sorted_entries(fs_moved["Documents"] + [entry])
    specs = [
        base,
        base.but(selected="Downloads", context_menu={"target": "Downloads"}),
        base.but(selected="Downloads"),
        base.but(folder="Downloads"),
        base.but(folder="Downloads", fs=fs_moved, toast=f"\u201c{name}\u201d moved to Documents"),
        base.but(folder="Documents", fs=fs_moved, selected=name),
    ]
    specs = _with_clock(specs + [specs[-1]], _clock_seq(rng, 7, (9, 16)))
    steps = [
        StepScript(
            specs[0],
            "The file manager shows my Home folder. The invoice is in Downloads, so first I'll "
            "open the Downloads folder by double-clicking it.",
            Act("right_single", "file.Downloads"),
            wrong=True,
        ),
        StepScript(
            specs[1],
            "A context menu opened for Downloads instead of the folder itself. I'll press Escape to close the menu.",
            Act("hotkey", key="esc"),
        ),
        StepScript(
            specs[2],
            "The menu is closed and Downloads is selected. I'll double-click the Downloads folder to open it.",
            Act("left_double", "file.Downloads"),
        ),
        StepScript(
            specs[3],
            f'Downloads is open and {name} is in the list. I\'ll drag it onto "Documents" in the '
            "sidebar to move it there.",
            Act("drag", f"file.{name}", end="sidebar.documents"),
        ),
        StepScript(
            specs[4],
            f"The notification confirms {name} was moved to Documents, and it is gone from "
            "Downloads. I'll open Documents to check that it arrived.",
            Act("click", "sidebar.documents"),
        ),
        StepScript(
            specs[5],
            f"{name} is listed in Documents, so the file has been moved. The task is complete.",
            Act("finished", content=f"{name} is now in Documents."),
        ),
    ]
    return TraceScript(
        "demo-files-move-invoice",
        f"Move {name} from Downloads into the Documents folder.",
        "desktop",
        "Files",
        "success",
        steps,
        specs[6],
        AnnotationScript(
            1,
            "wrong action type",
            "Opening a folder needs a double-click (left_double); the agent right-clicked (right_single) and got a "
            "context menu. It recovered with Escape and a double-click, two steps later.",
            "The file manager shows my Home folder. The invoice is in Downloads, so I'll open that folder by "
            "double-clicking the Downloads icon.",
            Act("left_double", "file.Downloads"),
            "I right-clicked Downloads instead of double-clicking it, so a context menu opened rather than the "
            'folder. Its first item is Open, so I\'ll click "Open" to go into Downloads.',
            Act("click", "menu.open"),
        ),
    )


def _web_registration(rng: random.Random) -> TraceScript:
    name, email, track = "Maria Lopez", "maria.lopez@example.com", "Data Science"
    s0 = ScreenSpec("web", {})
    filled = {"name": name}
    specs = [
        s0,
        s0.but(focus="name"),
        s0.but(focus="name", values=dict(filled)),
        s0.but(focus="organization", values=dict(filled)),
        s0.but(focus="organization", values={**filled, "organization": email}),
        s0.but(dropdown_open=True, values={**filled, "organization": email}),
        s0.but(values={**filled, "organization": email, "track": track}),
        s0.but(values={**filled, "organization": email, "track": track}, terms=True),
        s0.but(
            values={**filled, "organization": email, "track": track},
            terms=True,
            errors={"email": "Please enter your email address."},
            banner="Please fix the highlighted field before registering.",
        ),
    ]
    specs = _with_clock(specs + [specs[-1]], _clock_seq(rng, 10, (9, 16)))
    steps = [
        StepScript(
            specs[0],
            "The workshop registration form is open and empty. I'll start with the name, so I'll "
            "click the Full name field.",
            Act("click", "field.name"),
        ),
        StepScript(specs[1], f"The Full name field is focused. I'll type {name}.", Act("type", content=name)),
        StepScript(
            specs[2],
            "The name is filled in. The field below Full name should be the email address, so I'll click it.",
            Act("click", "field.organization"),
            wrong=True,
        ),
        StepScript(specs[3], "The field is active. I'll type the email address.", Act("type", content=email)),
        StepScript(
            specs[4], "Now the workshop track. I'll open the Workshop track dropdown.", Act("click", "dropdown.track")
        ),
        StepScript(
            specs[5], f'The list of tracks is open. I\'ll choose "{track}".', Act("click", "option.data_science")
        ),
        StepScript(
            specs[6],
            f"{track} is selected. Next I have to accept the code of conduct, so I'll tick the checkbox.",
            Act("click", "checkbox.terms"),
        ),
        StepScript(
            specs[7],
            "Everything looks filled in and the checkbox is ticked. I'll click Register to submit the form.",
            Act("click", "button.register"),
        ),
        StepScript(
            specs[8],
            f"I've submitted the form, so {name} should now be registered for {track}.",
            Act("finished", content=f"Registered {name} for the {track} workshop."),
        ),
    ]
    return TraceScript(
        "demo-web-workshop-registration",
        f"Register {name} ({email}) for the {track} workshop and accept the code of conduct.",
        "web",
        "Browser",
        "failure",
        steps,
        specs[9],
        AnnotationScript(
            3,
            "misread screen",
            "The second field is Organization (optional), not Email: the agent assumed the field order without "
            "reading the label, so the email went into Organization and Email stayed empty. Register then failed "
            "validation and the agent still reported success.",
            "The name is filled in. The next field is Organization (optional), which the task doesn't mention; "
            'the email belongs in the third field, "Email address". I\'ll click the Email address field.',
            Act("click", "field.email"),
            "The field I clicked is Organization (optional), not the email field: its label says so and Email "
            "address is still empty below it. I'll leave Organization blank and click the Email address field.",
            Act("click", "field.email"),
        ),
    )


def _phone_bluetooth(rng: random.Random) -> TraceScript:
    base = ScreenSpec("phone", {"screen": "home", "battery": rng.randint(48, 96)})
    dev = base.but(screen="connected_devices")
    specs = [
        base,
        base.but(screen="settings"),
        dev,
        dev.but(bt_on=True, scanning=True, found=0),
        dev.but(bt_on=True, scanning=True, found=1),
        dev.but(bt_on=True, scanning=False, found=2),
    ]
    specs = _with_clock(specs + [specs[-1]], _clock_seq(rng, 7, (7, 11), twelve=True))
    steps = [
        StepScript(
            specs[0],
            "I'm on the home screen. Bluetooth is switched on from Settings, so I'll tap the Settings app.",
            Act("click", "app.settings"),
        ),
        StepScript(
            specs[1],
            'Settings is open. Bluetooth is under "Connected devices", so I\'ll tap that entry.',
            Act("click", "row.connected_devices"),
        ),
        StepScript(
            specs[2],
            "The Connected devices page shows Bluetooth is Off. I'll tap the Bluetooth switch to turn it on.",
            Act("click", "toggle.bluetooth"),
        ),
        StepScript(
            specs[3],
            "Bluetooth is turning on and the phone is searching for nearby devices. I'll wait for "
            "the search to finish.",
            Act("wait"),
            wrong=True,
        ),
        StepScript(
            specs[4], "One device has appeared but the search is still running. I'll wait a little longer.", Act("wait")
        ),
        StepScript(
            specs[5],
            "The search has finished and Bluetooth shows On. The task is complete.",
            Act("finished", content="Bluetooth is on."),
        ),
    ]
    return TraceScript(
        "demo-phone-bluetooth",
        "Turn on Bluetooth.",
        "mobile",
        "Settings",
        "success",
        steps,
        specs[6],
        AnnotationScript(
            4,
            "needless wait or loop",
            "Bluetooth already read On at step 4. The task never asked to find devices, so both waits were "
            "wasted steps; the agent should have finished right away.",
            "The Bluetooth switch is on and the row says On, so Bluetooth is enabled. The task only asks to turn "
            "it on; the device search doesn't matter. The task is complete.",
            Act("finished", content="Bluetooth is on."),
            "I waited for the device search, but that wasn't needed: the task was only to turn Bluetooth on, and "
            "the switch already shows On. I'll stop waiting and finish.",
            Act("finished", content="Bluetooth is on."),
        ),
    )


def _phone_message(rng: random.Random) -> TraceScript:
    text = "Running 10 minutes late, start without me"
    clocks = _clock_seq(rng, 6, (5, 6), twelve=True)
    h, m = (int(v) for v in clocks[0].split(":"))
    sent_a = f"{h}:{max(0, m - rng.randint(8, 20)):02d} PM"
    recv = f"{h}:{max(0, m - rng.randint(1, 5)):02d} PM"
    rows = [list(c) for c in PHONE_DEFAULTS["conversations"]]
    rows[0][2] = recv
    convs = [tuple(c) for c in rows]
    base = ScreenSpec(
        "phone",
        {"screen": "home", "battery": rng.randint(35, 90), "conversations": convs, "times": {1: sent_a, 3: recv}},
    )
    conv = base.but(screen="conversation")
    specs = [base, base.but(screen="messages"), conv, conv.but(keyboard=True), conv.but(keyboard=True, draft=text)]
    specs = _with_clock(specs + [specs[-1]], clocks)
    steps = [
        StepScript(
            specs[0],
            "I'm on the home screen and need to send a text, so I'll open the Messages app.",
            Act("open_app", app_name="Messages"),
        ),
        StepScript(
            specs[1],
            "Messages is open and the conversation with Alex Chen is at the top. I'll tap it.",
            Act("click", "conversation.alex_chen"),
        ),
        StepScript(
            specs[2],
            "The conversation with Alex Chen is open. I'll tap the message box at the bottom to start typing.",
            Act("click", "input.message"),
        ),
        StepScript(
            specs[3],
            "The keyboard is up and the message box is focused. I'll type the message.",
            Act("type", content=text),
        ),
        StepScript(
            specs[4],
            "The message is written in the box, so Alex will get it. The task is done.",
            Act("finished", content="Sent the message to Alex Chen."),
            wrong=True,
        ),
    ]
    return TraceScript(
        "demo-phone-message-alex",
        f'Text Alex Chen: "{text}".',
        "mobile",
        "Messages",
        "failure",
        steps,
        specs[5],
        AnnotationScript(
            5,
            "premature finish",
            "The text was typed but never sent: the send button was not tapped, and the final screenshot still "
            "shows the draft in the message box.",
            "The message is typed in the box but it hasn't been sent yet. I'll tap the blue send button to the "
            "right of the message box.",
            Act("click", "button.send"),
            "I said the task was done, but the message is still sitting in the input box and nothing was sent. "
            "I'll tap the send button to actually send it.",
            Act("click", "button.send"),
        ),
    )


TRACE_BUILDERS: list[Callable[[random.Random], TraceScript]] = [
    _settings_display,
    _settings_dark_mode,
    _files_rename,
    _files_move,
    _web_registration,
    _phone_bluetooth,
    _phone_message,
]


def build_scripts(seed: int = 7) -> list[TraceScript]:
    """All demo traces. Deterministic: one ``random.Random(seed)`` feeds every seeded detail, in a fixed order."""
    rng = random.Random(seed)
    return [build(rng) for build in TRACE_BUILDERS]
