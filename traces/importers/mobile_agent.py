"""Mobile-Agent (v1) runs: ``<App>/<n>/data.json`` with ``{"1": {"Observation", "Thought", "Action"}, ...}``
and ``N.jpg``, the screenshot of step N.

Mobile-Agent names its targets by OCR text or an icon description ("click text (Compose)"), not by
coordinates, so those clicks cannot be written in our grammar: they are kept raw and flagged, and the
annotator places the point when correcting. The other actions map directly: ``open App (X)`` →
``open_app``, ``type (X)`` → ``type``, ``back`` → ``press_back``, ``exit`` → ``press_home``,
``stop`` → ``finished``, ``wait …`` → ``wait``. ``page up``/``page down`` have no position either;
they become a scroll at the screen's centre, and the step's context says the position was assumed.
The instruction is not in the run's files (only in the Mobile-Eval paper): it is left empty with a warning
unless an ``instruction.txt`` lies beside data.json.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.utils.translation import gettext

from studio.catalog import gettext_noop
from studio.inputs import id_from_text
from traces import grammar

from .base import (
    FolderImporter,
    ImageRef,
    ImportedStep,
    ImportedTrace,
    ImportWarning,
    TraceReadError,
    WarningCode,
    find_folders,
    optional,
    read_json,
)
from .registry import register

CALL = re.compile(r"^(?P<verb>[a-zA-Z ]+?)\s*(?:\((?P<arg>.*)\))?\s*$", re.S)
CENTRE = (500, 500)  # relative-1000: the screen's centre, for scrolls that name no position


def _convert(action: str) -> tuple[str, str, dict]:
    """Return (our action text, why it cannot be converted, extra context)."""
    match = CALL.match(action.strip())
    verb = (match.group("verb") if match else action).strip().lower()
    arg = (match.group("arg") or "").strip() if match else ""
    simple = {"back": "press_back", "exit": "press_home", "stop": "finished"}
    if verb in simple:
        return grammar.render_action(grammar.Action(simple[verb], {})), "", {}
    if verb == "open app":
        return grammar.render_action(grammar.Action("open_app", {"app_name": arg})), "", {}
    if verb == "type":
        return grammar.render_action(grammar.Action("type", {"content": arg})), "", {}
    if verb.startswith("wait"):
        return grammar.render_action(grammar.Action("wait", {})), "", {}
    if verb in ("page up", "page down"):
        direction = verb.split()[1]
        rendered = grammar.render_action(grammar.Action("scroll", {"start_box": CENTRE, "direction": direction}))
        return rendered, "", {"position_assumed": "screen centre (Mobile-Agent records no position for page up/down)"}
    if verb in ("click text", "click icon"):
        how = (
            gettext("Mobile-Agent locates '%(what)s' by its text, not by coordinates; place the point when annotating")
            if verb == "click text"
            else gettext(
                "Mobile-Agent locates '%(what)s' by its icon description, not by coordinates; place the point when "
                "annotating"
            )
        )
        return (
            action,
            how % {"what": arg},
            {},
        )
    return action, f"unknown Mobile-Agent action '{action}'", {}


class MobileAgentImporter(FolderImporter):
    format_name = "mobile-agent"
    label = gettext_noop("Mobile-Agent v1 runs")
    detect_order = 40

    def folders(self, root: Path, *, first_only: bool = False) -> list[Path]:
        return find_folders(root, "data.json", max_depth=3, accept=_looks_like_run, first_only=first_only)

    def read_folder(self, folder: Path, *, root: Path) -> ImportedTrace:
        return trace_from_run(folder, root=root)


def _looks_like_run(folder: Path) -> bool:
    return (folder / "data.json").is_file() and (folder / "1.jpg").is_file()


def _records_by_number(data: dict, where: str) -> dict[int, object]:
    """data.json's records by step number. A key is a step number in ASCII digits: ``str.isdigit`` also takes "²",
    which ``int`` refuses, and "01" and "1" would be one step twice."""
    records: dict[int, object] = {}
    for key, record in data.items():
        number = id_from_text(key)
        if number is None:
            raise TraceReadError(
                where,
                gettext("key %(key)s is not a step number (expected keys 1..n in ASCII digits)")
                % {"key": repr(key[:40])},
            )
        if number in records:
            raise TraceReadError(
                where,
                gettext("step %(number)s is given twice (key %(key)s)") % {"number": number, "key": repr(key[:40])},
            )
        records[number] = record
    return records


def trace_from_run(folder: Path, *, root: Path) -> ImportedTrace:
    where = str(folder.relative_to(root) / "data.json") if folder != root else "data.json"
    data = read_json(folder / "data.json", root=root if folder != root else folder)
    if not isinstance(data, dict) or not data:
        raise TraceReadError(where, gettext("expected an object keyed by step numbers 1..n"))
    records = _records_by_number(data, where)
    numbers = sorted(records)
    warnings: list[ImportWarning | str] = []
    steps = []
    last_action = ""
    for number in numbers:
        record = records[number]
        step_where = f"{where} step {number}"
        if not isinstance(record, dict) or not isinstance(record.get("Action"), str):
            raise TraceReadError(step_where, gettext("missing 'Action' text"))
        last_action = record["Action"].strip().lower()
        thought = optional(record, "Thought", str, step_where, "")
        observation = optional(record, "Observation", str, step_where, "")
        action_text, why, extra = _convert(record["Action"])
        image = folder / f"{number}.jpg"
        if not image.is_file():
            warnings.append(
                ImportWarning(
                    WarningCode.SCREENSHOT_MISSING,
                    gettext("step %(number)s: no screenshot %(number)s.jpg") % {"number": number},
                )
            )
        steps.append(
            ImportedStep(
                screenshot=ImageRef.from_path(image, root=root) if image.is_file() else None,
                raw_response=f"Thought: {thought}\nAction: {record['Action']}",
                thought=thought,
                action_text=action_text,
                parse_error=why,
                context={
                    "observation": observation,
                    "original_action": record["Action"],
                    **extra,
                },
            )
        )
    images = sorted(shot for p in folder.glob("*.jpg") if (shot := id_from_text(p.stem)) is not None)
    final = None
    if images and images[-1] == numbers[-1] + 1:
        final = ImageRef.from_path(folder / f"{images[-1]}.jpg", root=root)
    elif len(images) != len(numbers):
        warnings.append(
            ImportWarning(
                WarningCode.SCREENSHOTS_UNMATCHED,
                gettext("%(images)s screenshots for %(steps)s steps") % {"images": len(images), "steps": len(numbers)},
            )
        )
    instruction_file = folder / "instruction.txt"
    instruction = instruction_file.read_text(encoding="utf-8").strip() if instruction_file.is_file() else ""
    if not instruction:
        warnings.append(
            ImportWarning(
                WarningCode.INSTRUCTION_MISSING,
                gettext(
                    "the instruction is not recorded in Mobile-Agent's files; add instruction.txt beside data.json"
                ),
            )
        )
    relative = folder.relative_to(root) if folder != root else Path(folder.name)
    return ImportedTrace(
        external_id=f"mobile-agent/{relative.as_posix()}",
        instruction=instruction,
        source="mobile-agent",
        steps=steps,
        source_path=relative.as_posix(),
        # A run that does not end with "stop" was stopped by hand (Mobile-Agent's README): it failed.
        outcome="unknown" if last_action == "stop" else "failure",
        metadata={
            "app": relative.parts[0] if len(relative.parts) > 1 else "",
            "platform": "mobile",
            "coordinate_convention_hint": "relative-1000",
        },
        final_screenshot=final,
        warnings=warnings,
    )


register(MobileAgentImporter())
