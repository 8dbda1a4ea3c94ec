"""What a trace is, whatever it was called: its identity by content (docs/architecture.md, "Trace identity").

A trace's identity is its instruction and, step by step in order, the sha256 of the step's screenshot and its action
text. Folder, zip and file names are no part of it: the same run imported through the CLI, a hand-made zip or the
upload page is one trace, and two runs zipped under the same folder name are two. ``Trace.content_hash`` keeps the
hash of what the trace held when it was received (a lead's later edit of the instruction does not change what was
received); a trace still receiving steps from its runner has none until it is ended.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Differences named in one message; the rest are counted.
DIFFERENCES_NAMED = 3


@dataclass(frozen=True)
class TraceContent:
    """What identifies a trace: its instruction and each step's (screenshot sha256 or "", action text), in order."""

    instruction: str
    steps: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, instruction: str, steps: Iterable[tuple[str | None, str]]) -> TraceContent:
        return cls(instruction or "", tuple((sha or "", action or "") for sha, action in steps))

    @property
    def hash(self) -> str:
        return trace_content_hash(self.instruction, self.steps)


def trace_content_hash(instruction: str, steps: Iterable[tuple[str | None, str]]) -> str:
    """The one identity of a trace: sha256 of ``[instruction, [[screenshot sha256, action text], ...]]`` as
    canonical JSON (a step without a screenshot has ""). Migration 0016 keeps a frozen copy for existing traces."""
    document = [instruction or "", [[sha or "", action or ""] for sha, action in steps]]
    encoded = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()


def received_instruction(instruction: str, metadata: dict | None) -> str:
    """The instruction a trace came with: a lead's edits keep the one before in ``metadata["instruction_edits"]``
    (traces.services.trace_instruction_set), the first of which is what was received."""
    edits = (metadata or {}).get("instruction_edits") or []
    if edits and isinstance(edits[0], dict) and isinstance(edits[0].get("before"), str):
        return edits[0]["before"]
    return instruction


def content_differences(incoming: TraceContent, stored: TraceContent) -> list[str]:
    """What differs between two traces' contents, in words, first differences first ("step 3's screenshot
    differs"); [] when they are the same trace."""
    found: list[str] = []
    if incoming.instruction != stored.instruction:
        found.append("the instruction differs")
    for number, (ours, theirs) in enumerate(zip(incoming.steps, stored.steps), start=1):
        if ours[0] != theirs[0]:
            found.append(f"step {number}'s screenshot differs")
        if ours[1] != theirs[1]:
            found.append(f"step {number}'s action differs")
    if len(incoming.steps) != len(stored.steps):
        found.append(f"it has {_steps(len(incoming.steps))} where the stored one has {_steps(len(stored.steps))}")
    return found


def differences_text(differences: Sequence[str]) -> str:
    """``content_differences`` as one phrase: the first DIFFERENCES_NAMED named, the rest counted."""
    named = "; ".join(differences[:DIFFERENCES_NAMED])
    more = len(differences) - DIFFERENCES_NAMED
    return named + (f"; and {more} more difference{'s' if more != 1 else ''}" if more > 0 else "")


def _steps(count: int) -> str:
    return f"{count} step{'s' if count != 1 else ''}"


# A trace stored under a distinct external_id, because its own was taken by another trace, is named with this mark
# and the start of its content hash: the same content gets the same name on every import.
DISTINCT_ID_MARK = "~"
DISTINCT_ID_DIGITS = 12


def distinct_external_id(external_id: str, content_hash: str, *, digits: int = DISTINCT_ID_DIGITS, limit: int = 255):
    """``external_id`` made distinct by the start of ``content_hash`` (cut to fit ``limit`` characters)."""
    suffix = f"{DISTINCT_ID_MARK}{content_hash[:digits]}"
    return external_id[: limit - len(suffix)] + suffix
