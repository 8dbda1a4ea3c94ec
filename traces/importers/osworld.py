"""OSWorld result folders: ``traj.jsonl`` + ``step_N_<timestamp>.png`` + ``result.txt`` (docs/formats.md).

OSWorld saves the screen *after* each action, so the observation before step i is the file of step
i-1, the first observation is only there when a runner also saved ``step_0.png``/``initial_state.png``,
and the file of the last step is the trace's final screenshot. A UI-TARS prediction with several
actions is written as several lines with the same ``step_num``; they form one step.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
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
    find_folders,
    name_within,
    parse_json_bytes,
    read_each,
    read_json,
    safe_child,
)
from .registry import register

TRAJECTORY_FILE = "traj.jsonl"
INITIAL_SCREENSHOTS = ("step_0.png", "initial_state.png", "step_0.jpg", "initial_state.jpg")
# Result folders are results/<action_space>/<observation>/<model>/<domain>/<example_id>/.
MAX_DEPTH = 6


class OSWorldImporter(UnitImporter):
    format_name = "osworld"
    label = gettext_noop("OSWorld result folders")
    detect_order = 20

    def detect(self, root: Path) -> bool:
        return root.is_dir() and bool(_trajectory_files(root, first_only=True))

    def units(self, root: Path) -> list[Path]:
        return _trajectory_files(root)

    def read_units(self, root: Path, units: list[Path]) -> Iterator[TraceOrError]:
        def where(path: Path) -> str:
            return name_within(path, root.parent)

        yield from read_each(
            units,
            lambda path: trace_from_folder(path.parent, root=root, where=where(path)),
            where=where,
        )


def _trajectory_files(root: Path, *, first_only: bool = False) -> list[Path]:
    folders = find_folders(
        root,
        TRAJECTORY_FILE,
        max_depth=MAX_DEPTH,
        first_only=first_only,
        accept=lambda folder: (folder / TRAJECTORY_FILE).is_file(),
    )
    return [folder / TRAJECTORY_FILE for folder in folders]


def _instruction(folder: Path, where: str) -> tuple[str, str]:
    """(instruction, where it came from): task.json, instruction.txt, or <example_id>.json beside the folder."""
    for candidate in (folder / "task.json", folder.parent / f"{folder.name}.json"):
        if candidate.is_file():
            document = read_json(candidate, root=folder.parent)
            if isinstance(document, dict) and isinstance(document.get("instruction"), str):
                return document["instruction"], candidate.name
            raise TraceReadError(f"{where} ({candidate.name})", gettext("no string field 'instruction'"))
    text_file = folder / "instruction.txt"
    if text_file.is_file():
        try:
            return text_file.read_bytes().decode("utf-8").strip(), text_file.name
        except UnicodeDecodeError as exc:
            raise TraceReadError(
                f"{folder.name}/instruction.txt", gettext("not valid UTF-8 (byte %(byte)s)") % {"byte": exc.start}
            ) from None
    return "", ""


def _read_lines(path: Path, where: str) -> list[tuple[int, dict]]:
    if path.stat().st_size > settings.IMPORT_MAX_JSON_BYTES:
        raise TraceReadError(
            where, gettext("file is over the %(limit)s-byte limit") % {"limit": settings.IMPORT_MAX_JSON_BYTES}
        )
    lines = []
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            here = f"{where} line {number}"
            record = parse_json_bytes(line, here)
            if not isinstance(record, dict):
                raise TraceReadError(here, gettext("each line must be a JSON object"))
            lines.append((number, record))
    return lines


def _outcome(folder: Path) -> tuple[str, float | None]:
    result = folder / "result.txt"
    if not result.is_file():
        return "unknown", None
    try:
        score = float(result.read_text(encoding="utf-8", errors="replace").strip())
    except ValueError:
        return "unknown", None
    return ("success" if score > 0 else "failure"), score


def trace_from_folder(folder: Path, *, root: Path, where: str) -> ImportedTrace:
    path = folder / TRAJECTORY_FILE
    warnings: list[ImportWarning | str] = []
    errors_logged: list[str] = []
    groups: list[tuple[object, list[tuple[int, dict]]]] = []
    for number, record in _read_lines(path, where):
        if "Error" in record and "step_num" not in record:
            errors_logged.append(str(record["Error"]))  # the runner's exception note, not a step
            continue
        step_num = record.get("step_num")
        if step_num is None:
            raise TraceReadError(f"{where} line {number}", gettext("missing field 'step_num'"))
        if groups and groups[-1][0] == step_num:
            groups[-1][1].append((number, record))
        else:
            groups.append((step_num, [(number, record)]))
    if not groups:
        raise TraceReadError(where, gettext("no steps"))

    after_files: list[Path | None] = []
    for step_num, records in groups:
        number, last = records[-1]
        name = last.get("screenshot_file")
        if isinstance(name, str) and name:
            after_files.append(safe_child(folder, name, f"{where} line {number}"))
        else:
            after_files.append(None)
            warnings.append(
                ImportWarning(
                    WarningCode.SCREENSHOT_MISSING,
                    gettext("%(file)s line %(line)s: step %(step)s names no screenshot_file")
                    % {"file": where, "line": number, "step": step_num},
                )
            )

    initial = next((folder / name for name in INITIAL_SCREENSHOTS if (folder / name).is_file()), None)
    if initial is None:
        warnings.append(
            ImportWarning(
                WarningCode.SCREENSHOT_MISSING,
                gettext(
                    "%(folder)s: no initial screenshot (step_0.png / initial_state.png); "
                    "step 1 has no observation, since OSWorld saves only the screen after each action"
                )
                % {"folder": folder.name},
            )
        )
    observations = [initial, *after_files[:-1]]

    steps = []
    for (step_num, records), before in zip(groups, observations):
        first = records[0][1]
        response = first.get("response")
        if not isinstance(response, str):
            response = json.dumps(response, ensure_ascii=False) if response is not None else ""
        steps.append(
            ImportedStep(
                screenshot=ImageRef.from_path(before, root=root.parent) if before else None,
                raw_response=response,
                context={
                    "osworld": {
                        "step_num": step_num,
                        "executed": [r.get("action") for _, r in records],
                        "reward": [r.get("reward") for _, r in records],
                        "done": any(bool(r.get("done")) for _, r in records),
                        "info": [r.get("info") for _, r in records],
                        "lines": [n for n, _ in records],
                    }
                },
            )
        )

    instruction, instruction_source = _instruction(folder, where)
    if not instruction:
        warnings.append(
            ImportWarning(
                WarningCode.INSTRUCTION_MISSING,
                gettext(
                    "%(folder)s: instruction not found (add task.json, instruction.txt or %(folder)s.json "
                    "beside the folder); left empty"
                )
                % {"folder": folder.name},
            )
        )
    outcome, score = _outcome(folder)
    relative = str(folder.relative_to(root.parent))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    metadata: dict[str, Any] = {
        "osworld_example_id": folder.name,
        "osworld_domain": folder.parent.name if folder != root else "",
        "score": score,
        "instruction_source": instruction_source,
        # OSWorld's UI-TARS-1.5 agents use smart-resized pixels; v1 agents use 0-1000; the importer only hints (docs/formats.md, "Coordinates").
        "coordinate_convention_hint": "smart-resize-pixels or relative-1000, depending on the agent version",
    }
    if errors_logged:
        metadata["runner_errors"] = errors_logged
    final = after_files[-1]
    return ImportedTrace(
        external_id=f"osworld-{folder.name}-{digest}",
        instruction=instruction,
        source=OSWorldImporter.format_name,
        steps=steps,
        source_path=relative,
        outcome=outcome,
        metadata=metadata,
        final_screenshot=ImageRef.from_path(final, root=root.parent) if final else None,
        warnings=warnings,
    )


register(OSWorldImporter())
