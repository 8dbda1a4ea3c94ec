"""UI-TARS runs saved as an OpenAI-style chat message list with the screenshots as files beside it.

Layout (dart-gui's ``examples/osworld_trajectory``): ``final_messages.json`` = system message, the user
prompt (UI-TARS computer-use prompt ending in ``## User Instruction\\n<instruction>``) plus the first
image, then alternating assistant replies and user images. An image is referenced by name
(``{"type": "image", "image": "image_0001"}``) and lives next to the JSON as ``image_0001.png``.
Images after the last reply show the screen after the last action (the trace's final screenshot).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.utils.translation import gettext

from studio.catalog import gettext_noop

from .base import (
    ImageRef,
    ImportedStep,
    ImportedTrace,
    ImportWarning,
    TraceOrError,
    TraceReadError,
    UnitImporter,
    WarningCode,
    read_each,
    read_json,
    safe_child,
)
from .registry import register

MESSAGES_FILE = "final_messages.json"
IMAGE_SUFFIXES = ("", ".png", ".jpg", ".jpeg", ".webp")
INSTRUCTION_HEADING = "## User Instruction"


class UITarsMessagesImporter(UnitImporter):
    format_name = "uitars-messages"
    label = gettext_noop("UI-TARS chat messages (JSONL)")
    detect_order = 10

    def detect(self, root: Path) -> bool:
        return root.is_dir() and ((root / MESSAGES_FILE).is_file() or any(root.glob(f"*/{MESSAGES_FILE}")))

    def units(self, root: Path) -> list[Path]:
        return [root / MESSAGES_FILE] if (root / MESSAGES_FILE).is_file() else sorted(root.glob(f"*/{MESSAGES_FILE}"))

    def read_units(self, root: Path, units: list[Path]) -> Iterator[TraceOrError]:
        def where(path: Path) -> str:
            return f"{path.parent.name}/{MESSAGES_FILE}"

        def read_file(path: Path) -> ImportedTrace:
            return trace_from_messages(
                read_json(path, root=path.parent.parent),
                path.parent,
                where=where(path),
                digest=hashlib.sha256(path.read_bytes()).hexdigest(),
            )

        yield from read_each(units, read_file, where=where)


def _parts(content: Any, where: str) -> list[dict]:
    """A message's content as a list of typed parts; a plain string is one text part."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise TraceReadError(
            where, gettext("content must be a string or a list, found %(found)s") % {"found": type(content).__name__}
        )
    parts = []
    for part in content:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise TraceReadError(where, gettext("each content part must be an object with a 'type'"))
        parts.append(part)
    return parts


def _image_name(part: dict) -> str | None:
    if part["type"] == "image":
        value = part.get("image")
    elif part["type"] == "image_url":
        value = part.get("image_url")
        value = value.get("url") if isinstance(value, dict) else value
    else:
        return None
    if not isinstance(value, str) or not value:
        return None
    return value.removeprefix("file://")


def _resolve_image(folder: Path, name: str, where: str) -> Path:
    if name.startswith(("data:", "http://", "https://")):
        raise TraceReadError(
            where,
            gettext("image '%(name)s' is inline or remote; only image files next to the JSON are read")
            % {"name": name[:40]},
        )
    for suffix in IMAGE_SUFFIXES:
        candidate = folder / f"{name}{suffix}"
        try:
            present = candidate.is_file()
        except (OSError, ValueError):  # a name the file system refuses: safe_child below says which and why
            break
        if present:
            return safe_child(folder, f"{name}{suffix}", where)
    return safe_child(folder, name, where)  # raises a clear "does not exist" (or "outside", "too long") error


def instruction_from_prompt(prompt: str) -> str:
    head, found, tail = prompt.rpartition(INSTRUCTION_HEADING)
    return tail.strip() if found else ""


def trace_from_messages(messages: Any, folder: Path, *, where: str, digest: str) -> ImportedTrace:
    if not isinstance(messages, list) or not messages:
        raise TraceReadError(where, gettext("expected a non-empty list of chat messages"))
    system_prompt = ""
    prompt_texts: list[str] = []
    steps: list[ImportedStep] = []
    warnings: list[ImportWarning | str] = []
    current: ImageRef | None = None  # the latest screenshot not yet answered by a reply
    for number, message in enumerate(messages, start=1):
        here = f"{where} message {number}"
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise TraceReadError(here, gettext("each message must be an object with role system, user or assistant"))
        parts = _parts(message.get("content", ""), here)
        texts = [p.get("text", "") for p in parts if p["type"] == "text" and isinstance(p.get("text"), str)]
        if message["role"] == "system":
            system_prompt = "\n".join(texts)
        elif message["role"] == "user":
            if not steps:
                prompt_texts.extend(t for t in texts if t.strip())
            for part in parts:
                name = _image_name(part)
                if name is not None:
                    if current is not None:
                        warnings.append(
                            ImportWarning(
                                WarningCode.SCREENSHOTS_UNMATCHED,
                                gettext("%(where)s: screenshot '%(name)s' was never answered; the later one is used")
                                % {"where": here, "name": current.name},
                            )
                        )
                    current = ImageRef.from_path(_resolve_image(folder, name, here), root=folder.parent)
        else:
            reply = "\n".join(texts).strip()
            if not reply:
                raise TraceReadError(here, gettext("assistant message has no text"))
            if current is None:
                warnings.append(
                    ImportWarning(
                        WarningCode.SCREENSHOT_MISSING,
                        gettext("%(where)s: step %(step)s has no screenshot before it")
                        % {"where": here, "step": len(steps) + 1},
                    )
                )
            steps.append(ImportedStep(screenshot=current, raw_response=reply))
            current = None
    if not steps:
        raise TraceReadError(where, gettext("no assistant replies, so no steps"))
    prompt = "\n".join(prompt_texts)
    instruction = instruction_from_prompt(prompt)
    if not instruction:
        warnings.append(
            ImportWarning(
                WarningCode.INSTRUCTION_MISSING,
                gettext("%(where)s: no '%(heading)s' section in the first user message; instruction left empty")
                % {"where": where, "heading": INSTRUCTION_HEADING},
            )
        )
    return ImportedTrace(
        external_id=f"{folder.name}-{digest[:12]}",
        instruction=instruction,
        source=UITarsMessagesImporter.format_name,
        steps=steps,
        source_path=f"{folder.name}/{MESSAGES_FILE}",
        metadata={
            "prompt": prompt,
            "system_prompt": system_prompt,
            # Our observation: the dart-gui/OSWorld runs record points in pixels of the screenshot as sent.
            "coordinate_convention_hint": "screen-pixels",
        },
        final_screenshot=current,
        warnings=warnings,
    )


register(UITarsMessagesImporter())
