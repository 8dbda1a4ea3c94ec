"""Instruction files: many traces' instructions at once, as a lead writes them (``traces.services.trace_instructions_fill``
applies them). Two layouts, one row per trace:

- CSV with the header ``external_id,instruction`` (a spreadsheet's export; quoted fields may hold commas and lines);
- JSONL: one object per line, ``{"external_id": "…", "instruction": "…"}``.

Reading is pure: a row keeps its line number, so the report can name it; a row that cannot be read is kept as a
problem of that line, the rest of the file still counts."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from django.utils.translation import gettext

from studio.errors import Invalid

COLUMNS = ("external_id", "instruction")
# One file's rows: a project's round is hundreds of traces; a file of more is a mistake (or another file).
INSTRUCTIONS_MAX_ROWS = 50_000


@dataclass(frozen=True)
class InstructionRow:
    line: int
    external_id: str
    instruction: str
    problem: str = ""  # the row could not be read: why


def instructions_read(data: bytes, *, name: str = "") -> list[InstructionRow]:
    """The rows of an instruction file (CSV or JSONL, by its name or else its first character); an Invalid names
    what makes the whole file unreadable (not UTF-8, no header, too many rows)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Invalid(gettext("The instruction file is not UTF-8 text: save it as UTF-8 CSV or JSONL.")) from None
    if "\x00" in text:
        raise Invalid(gettext("The instruction file holds NUL characters: it is not a text file."))
    lowered = name.lower()
    as_jsonl = lowered.endswith((".jsonl", ".json", ".ndjson")) or (
        not lowered.endswith((".csv", ".txt")) and text.lstrip().startswith("{")
    )
    rows = _jsonl_rows(text) if as_jsonl else _csv_rows(text)
    if not rows:
        raise Invalid(
            gettext("The instruction file has no rows: write one line per trace, external_id and instruction.")
        )
    if len(rows) > INSTRUCTIONS_MAX_ROWS:
        raise Invalid(
            gettext("The instruction file has %(rows)s rows; send at most %(most)s at once.")
            % {"rows": len(rows), "most": INSTRUCTIONS_MAX_ROWS}
        )
    return rows


def _jsonl_rows(text: str) -> list[InstructionRow]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            item = None
        if not isinstance(item, dict) or not isinstance(item.get("external_id"), (str, int)):
            rows.append(InstructionRow(number, "", "", 'not a JSON object with "external_id" and "instruction"'))
            continue
        instruction = item.get("instruction")
        rows.append(
            InstructionRow(
                number,
                str(item["external_id"]).strip(),
                instruction if isinstance(instruction, str) else "",
                "" if instruction is None or isinstance(instruction, str) else '"instruction" is not text',
            )
        )
    return rows


def _csv_rows(text: str) -> list[InstructionRow]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [cell.strip().lower() for cell in next(reader)]
    except StopIteration:
        return []
    except csv.Error as exc:
        raise Invalid(gettext("The instruction file is not CSV: %(problem)s") % {"problem": exc}) from None
    if header[:2] != list(COLUMNS):
        raise Invalid(
            gettext(
                "The instruction file's first line is its header: external_id,instruction (it reads %(header)s); "
                "or send JSONL."
            )
            % {"header": repr(",".join(header)[:80])}
        )
    rows = []
    try:
        for cells in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) > 2:
                rows.append(
                    InstructionRow(number, cells[0].strip(), "", "more than two columns (quote the instruction)")
                )
                continue
            rows.append(InstructionRow(number, cells[0].strip(), cells[1] if len(cells) > 1 else ""))
    except csv.Error as exc:
        raise Invalid(
            gettext("The instruction file is not CSV at line %(line)s: %(problem)s")
            % {"line": reader.line_num, "problem": exc}
        ) from None
    return rows
