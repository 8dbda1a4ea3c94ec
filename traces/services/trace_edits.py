"""A lead's edits of a stored trace: its deletion (with an audit record) and its instruction, one at a time or a file
of them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.utils import timezone
from django.utils.translation import gettext

from studio.db import atomic_with_retry
from studio.errors import Invalid
from studio.inputs import input_problem
from studio.signals import trace_deleting
from studio.words import counted, in_words
from traces.models import Project, Trace, TraceDeletion
from traces.selectors import traces_awaiting_instruction

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.instructions import InstructionRow


class TraceDeleteRefused(Invalid):
    """A deletion asked without what it needs (a reason); the message says what."""


@atomic_with_retry
def trace_delete(*, trace: Trace, user: User, reason: str) -> TraceDeletion:
    """Delete a trace with its steps and annotations, leaving an audit record (who, when, why, what it held)."""
    reason = (reason or "").strip()
    if not reason:
        raise TraceDeleteRefused(
            gettext("reason: say why the trace is deleted (kept in the audit record)"), field="reason"
        )
    problem = input_problem(reason, name="reason")
    if problem:
        raise TraceDeleteRefused(problem, field="reason")
    record = TraceDeletion.objects.create(
        project=trace.project,
        trace_id=trace.pk,
        external_id=trace.external_id[:500],
        instruction=trace.instruction[:2000],
        step_count=trace.step_count,
        annotation_count=trace.annotations.count(),
        deleted_by=user,
        reason=reason,
    )
    trace_deleting.send(sender=Trace, trace=trace)
    trace.delete()
    return record


class TraceEditRefused(Invalid):
    """An edit of a trace that cannot be made as asked; the message names the problem."""


# The longest instruction a lead may write (the trace page's form says it too).
INSTRUCTION_MAX_CHARS = 10_000


def instruction_problem(instruction: str) -> str:
    """What keeps ``instruction`` from being a trace's instruction, or "": the one rule of the trace page's form,
    the bulk file and the API. A blank one would send the trace back out of the queue."""
    text = (instruction or "").strip()
    if not text:
        return gettext("The instruction cannot be blank: write the task the agent was given.")
    if len(text) > INSTRUCTION_MAX_CHARS:
        return gettext("The instruction is %(length)s characters long; keep it under %(limit)s.") % {
            "length": len(text),
            "limit": INSTRUCTION_MAX_CHARS,
        }
    return ""


@atomic_with_retry
def trace_instruction_set(*, trace_id: int, actor: User, instruction: str) -> Trace:
    """A lead writes (or mends) a trace's instruction. The one before is kept in ``metadata["instruction_edits"]``
    with who changed it and when; a blank instruction is refused (``instruction_problem``)."""
    problem = instruction_problem(instruction)
    if problem:
        raise TraceEditRefused(problem)
    text = instruction.strip()
    trace = Trace.objects.select_for_update().get(pk=trace_id)
    if text == trace.instruction:
        return trace
    edits = list(trace.metadata.get("instruction_edits") or [])
    edits.append({"before": trace.instruction, "by": getattr(actor, "username", ""), "at": timezone.now().isoformat()})
    trace.metadata = {**trace.metadata, "instruction_edits": edits}
    trace.instruction = text
    trace.save(update_fields=["instruction", "metadata"])
    return trace


@dataclass
class InstructionsReport:
    """What an instruction file did: the traces whose instruction it set, the rows it refused (with their line and
    why) and the traces it left as they were (an instruction already there and no replace asked, or the same text),
    and how many of the project's traces still await an instruction afterwards."""

    set: list[str] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)
    left: list[dict] = field(default_factory=list)
    still_awaiting: int = 0

    @property
    def summary(self) -> str:
        return (
            f"{in_words(len(self.set), 'instruction', 'instructions')} set, {len(self.refused)} refused, "
            f"{len(self.left)} left as they were; {counted(self.still_awaiting, Trace)} still "
            f"{'awaits' if self.still_awaiting == 1 else 'await'} an instruction"
        )

    def as_dict(self) -> dict:
        return {
            "summary": self.summary,
            "set": self.set,
            "refused": self.refused,
            "left": self.left,
            "still_awaiting": self.still_awaiting,
        }


@atomic_with_retry
def trace_instructions_fill(
    *, project: Project, actor: User, rows: Iterable[InstructionRow], replace: bool = False
) -> InstructionsReport:
    """A lead's instruction file (``traces.instructions``) applied to ``project``'s traces, whole, in one
    transaction: each row through ``trace_instruction_set`` (its rule, its record of the text before). A trace that
    has an instruction keeps it unless ``replace``; a row naming no trace of the project, an empty instruction, an
    unreadable row or a trace named twice is refused with its line."""
    report = InstructionsReport()
    wanted = sorted({row.external_id for row in rows if row.external_id})
    traces: dict[str, Trace] = {}
    for start in range(0, len(wanted), 500):  # SQLite's bound on a query's parameters
        chunk = Trace.objects.filter(project=project, external_id__in=wanted[start : start + 500])
        traces.update((trace.external_id, trace) for trace in chunk)
    first_line: dict[str, int] = {}
    for row in rows:

        def refuse(reason: str, row: InstructionRow = row) -> None:
            report.refused.append({"line": row.line, "external_id": row.external_id, "reason": reason})

        trace = traces.get(row.external_id)
        if row.problem:
            refuse(row.problem)
        elif not row.external_id:
            refuse("no external_id")
        elif row.external_id in first_line:
            refuse(f"the trace is named again (first on line {first_line[row.external_id]})")
        elif trace is None:
            refuse("unknown id: no trace of this project has it")
        elif problem := instruction_problem(row.instruction):
            refuse(problem)
        elif trace.instruction.strip() and not replace:
            report.left.append({"line": row.line, "external_id": row.external_id, "reason": "has an instruction"})
        elif trace.instruction == row.instruction.strip():
            report.left.append({"line": row.line, "external_id": row.external_id, "reason": "the same instruction"})
        else:
            trace_instruction_set(trace_id=trace.pk, actor=actor, instruction=row.instruction)
            report.set.append(row.external_id)
        if row.external_id:
            first_line.setdefault(row.external_id, row.line)
    report.still_awaiting = traces_awaiting_instruction(project.traces.all()).count()
    return report
