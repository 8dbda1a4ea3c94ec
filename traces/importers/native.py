"""Our native format (docs/formats.md): a folder with trace.json per trace, or a JSONL of traces."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from studio.catalog import gettext_noop
from traces.languages import language_problem

from .base import (
    ELEMENTS,
    ImageRef,
    ImportedStep,
    ImportedTrace,
    TraceOrError,
    TraceReadError,
    UnitImporter,
    optional,
    parse_json_bytes,
    read_each,
    read_elements,
    read_json,
    require,
    safe_child,
)
from .registry import register

FORMAT_TAG = "trace-studio/v1"
OUTCOMES = {"success", "failure", "unknown"}


class NativeImporter(UnitImporter):
    format_name = "native"
    label = gettext_noop("Trace Studio native (trace.json or JSONL)")
    detect_order = 1000  # its markers (any *.jsonl, any trace.json) are the loosest: tried last

    def detect(self, root: Path) -> bool:
        if root.is_file():
            return root.suffix == ".jsonl"
        return (root / "trace.json").is_file() or any(root.glob("*/trace.json")) or any(root.glob("*.jsonl"))

    def units(self, root: Path) -> list[Path]:
        # A JSONL file with no record (empty, or blank lines only) holds no trace: it is not a unit, so an import
        # of nothing else is refused for finding no traces instead of succeeding with none.
        if root.is_file():
            return [root] if _holds_a_record(root) else []
        folders = [root] if (root / "trace.json").is_file() else sorted(p.parent for p in root.glob("*/trace.json"))
        return folders + [path for path in sorted(root.glob("*.jsonl")) if _holds_a_record(path)]

    def read_units(self, root: Path, units: list[Path]) -> Iterator[TraceOrError]:
        def read_folder(folder: Path) -> ImportedTrace:
            document = read_json(folder / "trace.json", root=root.parent if folder == root else root)
            return trace_from_document(document, folder, where=f"{folder.name}/trace.json")

        for unit in units:
            if unit.is_file():  # a JSONL of traces: the uploaded file itself, or one beside the trace folders
                yield from self._read_jsonl(unit, root.parent if unit == root else root)
            else:
                yield from read_each([unit], read_folder, where=lambda folder: f"{folder.name}/trace.json")

    def _read_jsonl(self, path: Path, base: Path) -> Iterator[TraceOrError]:
        if path.stat().st_size > settings.IMPORT_MAX_JSON_BYTES:
            yield TraceReadError(path.name, f"file is over the {settings.IMPORT_MAX_JSON_BYTES}-byte limit")
            return
        with path.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path.name} line {number}"
                try:
                    trace = trace_from_document(parse_json_bytes(line, where), base, where=where)
                except TraceReadError as exc:
                    yield exc
                    continue
                trace.source_path = where  # the line, not the folder the file was read from
                yield trace


def metadata_with_platform(metadata: dict, platform: str | None) -> dict:
    """A trace's metadata as stored: a trace object's ``platform`` (an import's, a runner's step 1) is copied into it as
    ``metadata.platform``, over one the metadata names."""
    return {**metadata, **({"platform": platform} if platform else {})}


def trace_from_document(document: Any, folder: Path, *, where: str) -> ImportedTrace:
    if not isinstance(document, dict):
        raise TraceReadError(where, gettext("a trace must be a JSON object"))
    tag = document.get("format", FORMAT_TAG)
    if tag != FORMAT_TAG:
        raise TraceReadError(
            where, gettext("unknown format '%(tag)s', expected '%(expected)s'") % {"tag": tag, "expected": FORMAT_TAG}
        )
    external_id = require(document, "external_id", str, where).strip()
    if not external_id or len(external_id) > 255:
        raise TraceReadError(where, gettext("external_id must be 1 to 255 characters"))
    instruction = require(document, "instruction", str, where)
    outcome = optional(document, "outcome", str, where, "unknown")
    if outcome not in OUTCOMES:
        raise TraceReadError(
            where,
            gettext("outcome must be one of %(outcomes)s, not %(outcome)s")
            % {"outcomes": sorted(OUTCOMES), "outcome": repr(outcome[:40])},
        )
    metadata = optional(document, "metadata", dict, where, {})
    source = optional(document, "source", str, where) or "native"
    platform = optional(document, "platform", str, where)
    language = optional(document, "language", str, where, "").strip()
    problem = language_problem(language)
    if problem:
        raise TraceReadError(where, problem)
    steps_doc = require(document, "steps", list, where)
    if not steps_doc:
        raise TraceReadError(where, gettext("a trace needs at least one step"))
    steps = []
    for number, step in enumerate(steps_doc, start=1):
        step_where = f"{where} step {number}"
        shot = optional(step, "screenshot", str, step_where) if isinstance(step, dict) else None
        ref = ImageRef.from_path(safe_child(folder, shot, step_where), root=folder.parent) if shot else None
        steps.append(step_from_document(step, where=step_where, screenshot=ref))
    final = optional(document, "final_screenshot", str, where)
    return ImportedTrace(
        external_id=external_id,
        instruction=instruction,
        source=source,
        steps=steps,
        source_path=str(folder.name),
        outcome=outcome,
        metadata=metadata_with_platform(metadata, platform),
        language=language,
        final_screenshot=ImageRef.from_path(safe_child(folder, final, f"{where} final_screenshot"), root=folder.parent)
        if final
        else None,
    )


def step_from_document(step: Any, *, where: str, screenshot: ImageRef | None) -> ImportedStep:
    """One step object of the native format (docs/formats.md §1) with its screenshot already found: by the trace
    reader from the step's ``screenshot`` path, by a runner's step push from the uploaded file."""
    action = require(step, "action", str, where)
    thought = optional(step, "thought", str, where, "")
    reflection = optional(step, "reflection", str, where, "")
    action_summary = optional(step, "action_summary", str, where, "")
    human_edited_response = optional(step, "human_edited_response", str, where, "")
    context = optional(step, "context", dict, where, {})
    missing = step.get("missing_before")
    if missing is not None:
        # The source dropped steps before this one: a count, or true when it does not say how many.
        if missing is True:
            missing = 1
        if isinstance(missing, bool) or not isinstance(missing, int) or missing < 1:
            raise TraceReadError(where, gettext("missing_before must be a positive number of steps (or true)"))
        context = {**context, "missing_before": missing}
    if "elements" in step:
        context = {**context, ELEMENTS: read_elements(step["elements"], where)}
    raw = "\n".join(
        part
        for part in (
            f"Reflection: {reflection}" if reflection else "",
            f"Action_Summary: {action_summary}" if action_summary else "",
            f"Thought: {thought}" if thought else "",
            f"Action: {action}",
        )
        if part
    )
    return ImportedStep(
        screenshot=screenshot,
        raw_response=raw,
        human_edited_response=human_edited_response,
        context=context,
    )


def _holds_a_record(path: Path) -> bool:
    """Whether a JSONL file has anything but whitespace (read until the first such byte, not the whole file)."""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 16):
            if chunk.strip():
                return True
    return False


register(NativeImporter())
