"""One trace stored whole or not at all, identified by its content (traces/identity.py): the path every import,
whole push and sharded import's trace takes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils.translation import gettext

from studio.db import atomic_with_retry
from studio.errors import Conflict
from studio.inputs import input_problem
from traces.identity import (
    DISTINCT_ID_DIGITS,
    TraceContent,
    content_differences,
    differences_text,
    distinct_external_id,
    received_instruction,
)
from traces.importers import ImportedStep, ImportedTrace, TraceReadError
from traces.languages import trace_language
from traces.models import CoordinateConvention, ImportJob, Project, Round, Screenshot, Step, Trace
from traces.services.screenshots import SCREENSHOT_BATCH, ScreenshotProblem, screenshots_store
from traces.services.steps import step_build


@dataclass
class TraceImportResult:
    trace: Trace
    created: bool  # False: the same content was stored already (``trace``, under whichever external_id)
    steps: int = 0
    screenshots_stored: int = 0
    unparsed_actions: int = 0
    off_screen: list[tuple[int, str]] = field(default_factory=list)  # (step index, why) of flagged steps
    # Stored under a distinct external_id: the one asked for names another trace, whose content differs (what).
    taken_by_other_content: str = ""


def trace_convention_for(*, project: Project, imported: ImportedTrace, job: ImportJob | None) -> str:
    """The convention of a trace's recorded points: what the uploader said, else what the source says (its
    importer's hint, when it names one convention), else the project's."""
    if job is not None and job.coordinate_convention:
        return job.coordinate_convention
    hint = imported.metadata.get("coordinate_convention_hint")
    return hint if hint in CoordinateConvention.values else project.coordinate_convention


def imported_trace_problem(imported: ImportedTrace) -> str | None:
    """What in a trace cannot be stored (studio.inputs: NUL, lone surrogates, NaN), named by field; None if all is
    well. Checked before anything is written, so such a trace is reported and the batch goes on."""
    fields = {
        "external_id": imported.external_id,
        "instruction": imported.instruction,
        "source": imported.source,
        "outcome": imported.outcome,
        "metadata": imported.metadata,
    }
    for number, step in enumerate(imported.steps, start=1):
        fields[f"step {number}"] = _imported_step_fields(step)
    return input_problem(fields)


def _imported_step_fields(step: ImportedStep) -> dict:
    return {
        "raw_response": step.raw_response,
        "thought": step.thought,
        "action_text": step.action_text,
        "human_edited_response": step.human_edited_response,
        "context": step.context,
        "parse_error": step.parse_error,
    }


class TraceIdTaken(Conflict):
    """A pushed trace's external_id names a stored trace with other content: two traces are never merged, and the
    message says what differs."""


def trace_stored_content(trace: Trace) -> TraceContent:
    """What identifies a stored trace (traces/identity.py): the instruction it was received with, each step's
    screenshot hash and action text."""
    steps = trace.steps.order_by("index").values_list("screenshot__sha256", "action_text")
    return TraceContent.of(received_instruction(trace.instruction, trace.metadata), steps)


def _content_lock(project: Project, content_hash: str) -> None:
    """Serialise, until the transaction ends, the writers of one content in one project, so two imports of the same
    trace under two names at once store it once. SQLite's transactions are serialised already (IMMEDIATE)."""
    if connection.vendor == "postgresql":
        key = int.from_bytes(hashlib.sha256(f"{project.pk}:{content_hash}".encode()).digest()[:8], "big", signed=True)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


@dataclass
class _StoredImages:
    """A trace's screenshots as stored: one per step (None: a step without one), its final one, and how many of
    them were new."""

    steps: list[Screenshot | None]
    final: Screenshot | None
    created: int


def _images_store(imported: ImportedTrace) -> _StoredImages:
    """Store a trace's images (outside any transaction, content-addressed, so a retry reuses them), a batch at a
    time: a few queries per batch instead of several per image, and bounded memory for long traces. A file that
    cannot be read or is no image raises a TraceReadError naming its step."""
    where = imported.source_path or imported.external_id
    refs = [(f"{where} step {number}", step.screenshot) for number, step in enumerate(imported.steps, start=1)]
    if imported.final_screenshot:
        refs.append((where, imported.final_screenshot))
    created = 0
    shots: list[Screenshot | None] = []
    for start in range(0, len(refs), SCREENSHOT_BATCH):
        batch = refs[start : start + SCREENSHOT_BATCH]
        found, stored = _images_batch_store(batch, where)
        created += stored
        found_iter = iter(found)
        shots.extend(next(found_iter) if ref is not None else None for _, ref in batch)
    final = shots.pop() if imported.final_screenshot else None
    return _StoredImages(shots, final, created)


def _images_batch_store(batch: list[tuple[str, Any]], where: str) -> tuple[list[Screenshot], int]:
    """One batch's present images stored (``screenshots_store``): their rows, in order, and how many were new."""
    present = [(label, ref) for label, ref in batch if ref is not None]
    blobs = []
    for label, ref in present:
        try:
            blobs.append((ref.read(), ref.name))
        except OSError as exc:
            raise TraceReadError(
                label,
                gettext("%(name)s: cannot be read (%(problem)s)") % {"name": ref.name, "problem": exc.strerror or exc},
            ) from None
    try:
        return screenshots_store(images=blobs)
    except ScreenshotProblem as exc:
        label = present[exc.position][0]
        raise TraceReadError(
            label,
            exc.message if label != where else gettext("final screenshot: %(problem)s") % {"problem": exc.message},
        ) from None


@dataclass
class _TraceToStore:
    """A trace made ready to store (its row's fields and its steps, unsaved) and what identifies it."""

    fields: dict[str, Any]  # the Trace row's, made anew for each try to store it
    steps: list[Step]
    content: TraceContent
    screenshots_stored: int

    def result(self, trace: Trace, differs: str) -> TraceImportResult:
        """The import's answer once ``trace`` was stored (``differs``: what differs from the trace whose
        external_id it asked for)."""
        return TraceImportResult(
            trace,
            True,
            len(self.steps),
            self.screenshots_stored,
            sum(bool(step.parse_error) for step in self.steps),
            [(step.index, step.off_screen_point) for step in self.steps if step.off_screen_point],
            differs,
        )


def _trace_prepare(
    *, project: Project, imported: ImportedTrace, job: ImportJob | None, round: Round | None
) -> _TraceToStore:
    """The trace's images stored, its steps built (each action parsed in the trace's convention) and its row's fields,
    nothing of it saved."""
    images = _images_store(imported)
    convention = trace_convention_for(project=project, imported=imported, job=job)
    steps = [
        step_build(index=number, imported=step, screenshot=shot, convention=convention, project=project)
        for number, (step, shot) in enumerate(zip(imported.steps, images.steps), start=1)
    ]
    metadata = dict(imported.metadata)
    if imported.warnings:
        # Stored as the words people read (the shape every stored trace's list has); the codes serve the notes the
        # import makes as it reads.
        metadata["import_warnings"] = [str(warning) for warning in imported.warnings]
    content = TraceContent.of(
        imported.instruction,
        [(shot.sha256 if shot else "", step.action_text) for step, shot in zip(steps, images.steps)],
    )
    fields = dict(
        project=project,
        coordinate_convention=convention,
        external_id=imported.external_id,
        instruction=imported.instruction,
        source=imported.source,
        source_path=imported.source_path[:500],
        outcome=imported.outcome,
        metadata=metadata,
        final_screenshot=images.final,
        step_count=len(steps),
        import_job=job,
        round=round,
        content_hash=content.hash,
        language=trace_language(
            said=imported.language, project_language=project.text_language, instruction=imported.instruction
        ),
    )
    return _TraceToStore(fields, steps, content, images.created)


def _taken_id_resolve(trace: Trace, taken: Trace, content: TraceContent, *, distinct_id_when_taken: bool) -> str:
    """What differs from the trace ``taken`` that has ``trace``'s external_id; ``trace`` takes a distinct id, or
    (``distinct_id_when_taken`` False) a TraceIdTaken refuses it."""
    differs = _content_conflict(taken, content)
    if not distinct_id_when_taken:
        advice = (
            "push its next steps, or end it, instead of pushing it whole"
            if taken.receiving
            else "an external_id names one trace, so this one needs another"
        )
        raise TraceIdTaken(f"{differs}: {advice}", trace=taken.pk)
    trace.external_id = _distinct_external_id(trace.project, trace.external_id, content.hash)
    return differs


@atomic_with_retry
def _trace_save(
    prepared: _TraceToStore, *, guard: Callable[[], None] | None, distinct_id_when_taken: bool
) -> TraceImportResult | None:
    """Store the prepared trace and its steps in one transaction, unless the project holds its content already;
    None when a concurrent or redelivered import took its name first (look again)."""
    trace = Trace(**prepared.fields)
    project = trace.project
    differs = ""
    try:
        # Trace and steps in one transaction: a worker killed in between must not leave a trace
        # without steps that the redelivered task would then skip as already imported.
        with transaction.atomic():
            if guard is not None:
                guard()
            _content_lock(project, prepared.content.hash)
            same = Trace.objects.filter(project=project, content_hash=prepared.content.hash).order_by("pk").first()
            if same is not None:
                return TraceImportResult(same, created=False)
            taken = Trace.objects.filter(project=project, external_id=trace.external_id).first()
            if taken is not None:
                differs = _taken_id_resolve(
                    trace, taken, prepared.content, distinct_id_when_taken=distinct_id_when_taken
                )
            trace.save()
            for step in prepared.steps:
                step.trace = trace
            Step.objects.bulk_create(prepared.steps)
    except IntegrityError:  # a concurrent or redelivered import got there first: look again
        return None
    return prepared.result(trace, differs)


def trace_import_one(
    *,
    project: Project,
    imported: ImportedTrace,
    job: ImportJob | None = None,
    round: Round | None = None,
    guard: Callable[[], None] | None = None,
    distinct_id_when_taken: bool = True,
) -> TraceImportResult:
    """Store one trace whole or not at all, in ``round`` (default: the job's round, if any). ``guard`` is called in
    the transaction that writes the trace, first (a sharded import's write guard: it raises instead of writing after a
    cancel).

    Identity by content (traces/identity.py): a trace whose instruction, screenshots and actions the project holds
    already, under any external_id, is not stored again (``created`` False, the stored trace, which stays in its
    round). Other content under a taken external_id is never merged into the trace that has it: it is stored under
    a distinct id made from its content hash (``taken_by_other_content`` says what differs), or, with
    ``distinct_id_when_taken`` False (a runner's push, which names its trace), refused with a ``TraceIdTaken``."""
    if round is None and job is not None:
        round = job.round
    problem = imported_trace_problem(imported)
    if problem:
        # The name itself may hold the refused character: say it escaped.
        raise TraceReadError(imported.source_path or ascii(imported.external_id)[:200], problem)
    prepared = _trace_prepare(project=project, imported=imported, job=job, round=round)
    for _ in range(3):
        result = _trace_save(prepared, guard=guard, distinct_id_when_taken=distinct_id_when_taken)
        if result is not None:
            return result
    raise TraceReadError(
        imported.source_path or imported.external_id, gettext("could not be stored: its name kept being taken")
    )


def _content_conflict(taken: Trace, content: TraceContent) -> str:
    """Why ``content`` is not the trace ``taken`` that has its external_id, in words."""
    if taken.receiving:
        return f"trace {taken.external_id!r} is receiving steps pushed one by one ({taken.step_count} so far)"
    differs = content_differences(content, trace_stored_content(taken))
    return f"trace {taken.external_id!r} is stored already with other content ({_differences_phrase(differs)})"


def _differences_phrase(differences: list[str]) -> str:
    # Two contents with different hashes differ somewhere; a stored trace whose content was changed around the
    # services (an admin's SQL) may show none of the compared fields: said so rather than nothing.
    return differences_text(differences) if differences else "its content hash differs"


def _distinct_external_id(project: Project, external_id: str, content_hash: str) -> str:
    """A free external_id for content whose own is taken: the name and the start of its content hash, longer where
    that is taken too (by a trace of other content, which the content lookup did not find)."""
    for digits in (DISTINCT_ID_DIGITS, 24, 64):
        candidate = distinct_external_id(external_id, content_hash, digits=digits)
        if not Trace.objects.filter(project=project, external_id=candidate).exists():
            return candidate
    return candidate  # the insert's constraint refuses it; the caller looks again
