"""ScreenAgent sessions: ``<session>/<timestamp>_translate.json`` per step + ``images/<timestamp>.jpg``.

Each step file holds the model's original reply (``LLM_response``, prose + a JSON action list) and the
human-corrected reply (``LLM_response_editer``/``_en``) whose actions (``actions``) were executed.
Execution steps (MouseAction/KeyboardAction/WaitAction) become our steps; plan (PlanAction) and
sub-task evaluation (EvaluateSubTaskAction) replies become context of the next step and are listed in
the trace metadata. ``_neg_plan``/``_neg_eval`` files (alternative replies) are kept as context too.

Actions are rendered in our UI-TARS grammar in screen pixels of the 1024×768 screenshot (the
convention ScreenAgent itself uses): click/right_single/left_double, ``move`` → hover, ``move`` then
``drag`` → drag(start, end) (a lone drag starts at the last known pointer position), scroll_up/down →
scroll(direction) at the pointer, text → type, press → hotkey, WaitAction → wait().
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from django.utils.translation import gettext

from studio.catalog import gettext_noop
from traces import grammar

from .base import (
    FolderImporter,
    ImageRef,
    ImportedStep,
    ImportedTrace,
    TraceReadError,
    find_folders,
    optional,
    read_json,
    safe_child,
)
from .registry import register

STEP_SUFFIX = "_translate.json"
NEGATIVE_SUFFIXES = ("_translate_neg_plan.json", "_translate_neg_eval.json")
EXECUTION_TYPES = {"MouseAction", "KeyboardAction", "WaitAction"}
JSON_BLOCK = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
X_KEYSYMS = {
    "return": "enter",
    "kp_enter": "enter",
    "escape": "esc",
    "backspace": "backspace",
    "delete": "delete",
    "tab": "tab",
    "space": "space",
    "control_l": "ctrl",
    "control_r": "ctrl",
    "control": "ctrl",
    "ctrl": "ctrl",
    "shift_l": "shift",
    "shift_r": "shift",
    "alt_l": "alt",
    "alt_r": "alt",
    "super_l": "win",
    "super_r": "win",
    "page_up": "pageup",
    "prior": "pageup",
    "page_down": "pagedown",
    "next": "pagedown",
}
MOUSE_BUTTON_CLICKS = {"left": "click", "right": "right_single"}


class ActionConversionError(ValueError):
    pass


class ScreenAgentImporter(FolderImporter):
    format_name = "screenagent"
    label = gettext_noop("ScreenAgent sessions")
    detect_order = 30

    def folders(self, root: Path, *, first_only: bool = False) -> list[Path]:
        return find_folders(root, f"*{STEP_SUFFIX}", max_depth=4, first_only=first_only)

    def read_folder(self, folder: Path, *, root: Path) -> ImportedTrace:
        return trace_from_session(folder, root=root)


# --- reading the JSON inside replies ---------------------------------------------------------


def _literal_actions(value: Any, where: str) -> list[dict]:
    """``actions`` is a list, or (in older files) the Python repr of one."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
            raise TraceReadError(
                where,
                gettext("field 'actions' is not a readable list (%(problem)s)") % {"problem": exc.__class__.__name__},
            ) from None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(a, dict) for a in value):
        raise TraceReadError(where, gettext("field 'actions' must be a list of objects"))
    for number, action in enumerate(value, start=1):
        optional(action, "action_type", str, f"{where} action {number}")
    return value


def actions_in_reply(reply: str) -> list[dict] | None:
    """The first JSON action list in a model reply (fenced or bare); None when there is none."""
    candidates = JSON_BLOCK.findall(reply) or [
        reply[min((i for i in (reply.find("["), reply.find("{")) if i >= 0), default=0) :]
    ]
    for candidate in candidates:
        # The model writes Markdown-escaped keys ("action\\_type"), which is not valid JSON.
        text = candidate.replace("\\_", "_").strip()
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            value = [value]
        if isinstance(value, list) and value and all(isinstance(a, dict) and "action_type" in a for a in value):
            return value
    return None


def prose_of(reply: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", JSON_BLOCK.sub("", reply)).strip()


# --- converting to our grammar ---------------------------------------------------------------


def _position(action: dict) -> tuple[int | float, int | float]:
    position = action.get("mouse_position")
    if not isinstance(position, dict):
        raise ActionConversionError(f"{action.get('mouse_action_type')} has no mouse_position")
    x, y = position.get("width"), position.get("height")
    if isinstance(x, bool) or isinstance(y, bool) or not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
        raise ActionConversionError(f"mouse_position must hold numbers, found {position!r}")
    return (x, y)


def _keys(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ActionConversionError(f"keyboard_key must be a key name, found {name!r}")
    keys = [part.strip() for part in re.split(r"[+ ]", name) if part.strip()]
    return " ".join(X_KEYSYMS.get(key.lower(), key.lower()) for key in keys)


def convert_actions(items: list[dict], cursor: tuple | None) -> tuple[list[grammar.Action], tuple | None]:
    """ScreenAgent actions → our actions, and the pointer position after them."""
    result: list[grammar.Action] = []
    pending_move: tuple | None = None
    for item in items:
        kind = item.get("action_type")
        mouse = item.get("mouse_action_type")
        if pending_move is not None and not (kind == "MouseAction" and mouse == "drag"):
            result.append(grammar.Action("hover", {"start_box": pending_move}))
            pending_move = None
        if kind == "MouseAction":
            if mouse == "move":
                pending_move = cursor = _position(item)
            elif mouse == "drag":
                end = _position(item)
                start = pending_move or cursor or end
                result.append(grammar.Action("drag", {"start_box": start, "end_box": end}))
                pending_move, cursor = None, end
            elif mouse in ("click", "double_click"):
                button = item.get("mouse_button", "left")
                cursor = _position(item)
                if mouse == "double_click":
                    if button != "left":
                        raise ActionConversionError(f"double_click with the {button} button has no UI-TARS action")
                    result.append(grammar.Action("left_double", {"start_box": cursor}))
                elif button in MOUSE_BUTTON_CLICKS:
                    result.append(grammar.Action(MOUSE_BUTTON_CLICKS[button], {"start_box": cursor}))
                else:
                    raise ActionConversionError(f"a {button!r}-button click has no UI-TARS action")
            elif mouse in ("scroll_up", "scroll_down"):
                args = {"direction": mouse.removeprefix("scroll_")}
                if cursor is not None:
                    args["start_box"] = cursor
                result.append(grammar.Action("scroll", args))
            else:
                raise ActionConversionError(f"unknown mouse_action_type {mouse!r}")
        elif kind == "KeyboardAction":
            keyboard = item.get("keyboard_action_type")
            if keyboard == "text":
                text = item.get("keyboard_text")
                if not isinstance(text, str):
                    raise ActionConversionError("text action without keyboard_text")
                result.append(grammar.Action("type", {"content": text}))
            elif keyboard == "press":
                result.append(grammar.Action("hotkey", {"key": _keys(item.get("keyboard_key"))}))
            else:
                raise ActionConversionError(f"unknown keyboard_action_type {keyboard!r}")
        elif kind == "WaitAction":
            result.append(grammar.Action("wait", {}))
        else:
            raise ActionConversionError(f"{kind!r} is not an execution action")
    if pending_move is not None:
        result.append(grammar.Action("hover", {"start_box": pending_move}))
    return result, cursor


def render(actions: list[grammar.Action]) -> str:
    return "\n\n".join(grammar.render_action(action, box_tokens=False) for action in actions)


# --- one session -----------------------------------------------------------------------------


def _kind(items: list[dict]) -> str:
    types = {item.get("action_type") for item in items}
    if types & EXECUTION_TYPES:
        return "execution"
    if "PlanAction" in types:
        return "plan"
    if "EvaluateSubTaskAction" in types:
        return "evaluation"
    return "other"


def _note(path: Path, document: dict, items: list[dict]) -> dict:
    """A plan/evaluation/alternative reply, kept whole enough to be read next to the step it precedes."""
    return {
        "file": path.name,
        "kind": _kind(items),
        "actions": items,
        "reply": document.get("LLM_response", ""),
        "edited_reply_en": document.get("LLM_response_editer_en", ""),
    }


def _alternative(path: Path, folder: Path) -> dict:
    where = f"{folder.name}/{path.name}"
    document = read_json(path, root=folder.parent)
    if not isinstance(document, dict):
        raise TraceReadError(where, gettext("a step file must be a JSON object"))
    return _note(path, document, _literal_actions(document.get("actions", []), where))


def trace_from_session(folder: Path, *, root: Path) -> ImportedTrace:
    session = folder.name
    files = sorted(folder.glob(f"*{STEP_SUFFIX}"))
    negatives: dict[str, list[Path]] = {}
    for suffix in NEGATIVE_SUFFIXES:
        for path in folder.glob(f"*{suffix}"):
            negatives.setdefault(path.name.removesuffix(suffix), []).append(path)

    steps: list[ImportedStep] = []
    plans: list[dict] = []
    evaluations: list[dict] = []
    pending: dict[str, list] = {}
    cursor: tuple | None = None
    instruction = ""
    task_zh = ""
    after_last_step: ImageRef | None = None
    screen = None
    for path in files:
        where = f"{session}/{path.name}"
        document = read_json(path, root=folder.parent)
        if not isinstance(document, dict):
            raise TraceReadError(where, gettext("a step file must be a JSON object"))
        items = _literal_actions(document.get("actions", []), where)
        instruction = instruction or (
            optional(document, "task_prompt_en", str, where) or optional(document, "task_prompt", str, where, "")
        )
        task_zh = task_zh or optional(document, "task_prompt_zh", str, where, "")
        screen = screen or (document.get("video_width"), document.get("video_height"))
        image_name = document.get("saved_image_name")
        image = (
            ImageRef.from_path(safe_child(folder, f"images/{image_name}", where), root=root.parent)
            if isinstance(image_name, str) and image_name
            else None
        )
        kind = _kind(items)
        stem = path.name.removesuffix(STEP_SUFFIX)
        alternatives = [_alternative(neg, folder) for neg in sorted(negatives.get(stem, []))]
        if kind != "execution":
            note = _note(path, document, items)
            (plans if kind == "plan" else evaluations).append(note)
            pending.setdefault("plans" if kind == "plan" else "evaluations", []).append(note)
            if alternatives:
                pending.setdefault("alternatives", []).extend(alternatives)
            if steps and after_last_step is None:
                after_last_step = image
            continue
        if image is None:
            raise TraceReadError(where, gettext("execution step names no saved_image_name"))
        steps.append(_execution_step(document, items, image, cursor, where, pending, alternatives))
        try:
            _, cursor = convert_actions(items, cursor)  # the human-corrected actions are the ones executed
        except ActionConversionError:
            # Kept on the step (context.human_action_error); where they left the pointer is not known.
            cursor = None
        pending = {}
        after_last_step = None

    if not steps:
        raise TraceReadError(session, gettext("no execution steps (MouseAction/KeyboardAction/WaitAction)"))
    metadata: dict[str, Any] = {
        "session_id": session,
        "task_prompt_zh": task_zh,
        "plans": plans,
        "evaluations": evaluations,
        "screen": {"width": screen[0], "height": screen[1]} if screen else None,
        "coordinate_convention_hint": "screen-pixels",
    }
    if pending:
        metadata["after_last_step"] = pending
    return ImportedTrace(
        external_id=f"screenagent-{session}",
        instruction=instruction,
        source=ScreenAgentImporter.format_name,
        steps=steps,
        source_path=session,
        metadata=metadata,
        final_screenshot=after_last_step,
    )


def _execution_step(
    document: dict,
    executed: list[dict],
    image: ImageRef,
    cursor: tuple | None,
    where: str,
    pending: dict,
    alternatives: list[dict],
) -> ImportedStep:
    original = optional(document, "LLM_response", str, where, "")
    edited = optional(document, "LLM_response_editer", str, where)
    edited_en = optional(document, "LLM_response_editer_en", str, where) or edited or ""
    context: dict = {**pending, "screenagent": {"file": where.split("/", 1)[1], "executed_actions": executed}}
    if alternatives:
        context["alternatives"] = alternatives
    try:
        corrected, _ = convert_actions(executed, cursor)
        context["human_action_text"] = render(corrected)
    except ActionConversionError as exc:
        context["human_action_error"] = str(exc)
    if isinstance(document.get("current_task"), str):
        context["current_subtask"] = document["current_task"]

    parse_error = ""
    if original.strip():
        raw = original
        model_items = actions_in_reply(original)
        if model_items is None:
            action_text, parse_error = original.strip(), "no JSON action list could be read from the model's reply"
        else:
            try:
                action_text = render(convert_actions(model_items, cursor)[0])
            except ActionConversionError as exc:
                action_text, parse_error = json.dumps(model_items, ensure_ascii=False), f"model action: {exc}"
        thought = prose_of(original)
    else:
        # No original reply recorded: the corrected one is all there is.
        raw = edited or ""
        action_text = context.get("human_action_text", raw)
        parse_error = "" if "human_action_text" in context else context.get("human_action_error", "")
        thought = prose_of(raw)
    human = edited_en if edited is not None and edited.strip() != original.strip() else ""
    return ImportedStep(
        screenshot=image,
        raw_response=raw,
        thought=thought,
        action_text=action_text,
        human_edited_response=human,
        context=context,
        parse_error=parse_error,
    )


register(ScreenAgentImporter())
