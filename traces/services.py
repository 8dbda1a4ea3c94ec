"""Writes for projects, screenshots, traces and imports."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from studio.db import atomic_with_retry
from studio.engine import job_enqueue, job_run_here, task_send
from studio.errors import Conflict, Invalid, NotFound, TooLarge
from studio.inputs import input_problem
from studio.jobs import JobCancelled, JobFailed, job_delete, job_workdir
from studio.models import JobShard, JobStatus
from studio.shards import ShardFatal, ShardProgress, shards_of
from studio.signals import round_annotated
from studio.storage import stored_file_fetch, stored_file_save_moved, stored_folder_delete
from studio.words import counted, in_words
from traces import grammar
from traces.identity import (
    DISTINCT_ID_DIGITS,
    TraceContent,
    content_differences,
    differences_text,
    distinct_external_id,
    received_instruction,
)
from traces.images import ImageInfo, ImageProblem, inspect_image, make_thumbnail
from traces.importers import (
    IMPORTERS,
    ArchiveError,
    ImportedStep,
    ImportedTrace,
    TraceReadError,
    UnknownFormat,
    archive_folder_name,
    importer_for,
    iter_traces,
    matching_formats,
    opened_source,
    unit_files,
)
from traces.importers.archive import COPIED_AS_THEY_ARE, ExtractReport, member_copy, safe_extract
from traces.importers.base import parse_json_bytes
from traces.importers.native import step_from_document
from traces.models import (
    CoordinateConvention,
    ImportJob,
    Membership,
    Outcome,
    Project,
    Round,
    Screenshot,
    Step,
    Trace,
    TraceDeletion,
    screenshot_path,
    thumbnail_path,
)
from traces.selectors import (
    ALREADY_PRESENT,
    INSTRUCTION_MISSING,
    OFF_SCREEN_POINT,
    STORED_UNDER_DISTINCT_ID,
    awaits_instruction,
    import_job_report,
    project_jobs,
    traces_awaiting_instruction,
)

log = logging.getLogger(__name__)


# --- Projects -------------------------------------------------------------------------------


def project_create(*, name: str, members=(), **fields) -> Project:
    project = Project.objects.create(name=name, **fields)
    for user in members:
        membership_add(project=project, user=user)
    return project


def membership_add(*, project: Project, user) -> Membership:
    membership, _ = Membership.objects.get_or_create(project=project, user=user)
    return membership


class ProjectRefused(Invalid):
    """A project set-up that cannot be saved as asked: ``field`` is the form field it concerns (also in the
    answer's body), the message says why."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)
        self.field = field


# Settings a lead may choose; the rest (prompt template, pixel budget, leases) stay with their defaults or the admin.
PROJECT_SETTINGS = (
    "name",
    "description",
    "platform",
    "coordinate_convention",
    "history_window",
    "history_full_images",
    "history_max_pixels",
    "error_categories",
    "double_annotation_share",
    "double_annotation_annotators",
)


@atomic_with_retry
def project_save(*, actor, fields: dict, members=None, project: Project | None = None) -> Project:
    """Create a project (``project`` None) or change its settings, and set its members when ``members`` is given.

    Refused: changing the coordinate convention once traces are stored (their points were read in the old one;
    a new project takes the new convention), and dropping an error category that annotations use. A lead who
    creates or manages a project stays one of its members (else the page would lock them out of it)."""
    unknown = set(fields) - set(PROJECT_SETTINGS)
    if unknown:
        raise ProjectRefused(sorted(unknown)[0], f"not a project setting: {', '.join(sorted(unknown))}")
    if project is not None:
        project = Project.objects.select_for_update().get(pk=project.pk)
        convention = fields.get("coordinate_convention", project.coordinate_convention)
        stored = project.traces.count() if convention != project.coordinate_convention else 0
        if stored:
            raise ProjectRefused(
                "coordinate_convention",
                f"This project already holds {counted(stored, Trace)} whose points are read in {project.coordinate_convention}; "
                f"changing the convention would move every point. Create a new project with {convention} instead.",
            )
        dropped = [
            c for c in project.error_categories if c not in fields.get("error_categories", project.error_categories)
        ]
        if dropped:
            from annotation.models import Annotation

            in_use = (
                Annotation.objects.filter(project=project, error_category__in=dropped)
                .values_list("error_category", flat=True)
                .distinct()
            )
            if in_use:
                raise ProjectRefused(
                    "error_categories",
                    "Annotations use these categories; keep them: " + ", ".join(sorted(in_use)) + ".",
                )
    else:
        project = Project()
    for name, value in fields.items():
        setattr(project, name, value)
    project.save()
    if members is not None:
        wanted = {user.pk for user in members}
        if not getattr(actor, "is_superuser", False) and actor is not None:
            wanted.add(actor.pk)
        project.memberships.exclude(user_id__in=wanted).delete()
        for user_id in wanted - set(project.memberships.values_list("user_id", flat=True)):
            Membership.objects.create(project=project, user_id=user_id)
    elif actor is not None and not getattr(actor, "is_superuser", False):
        membership_add(project=project, user=actor)
    return project


class ProjectDeleteRefused(Conflict):
    """A project cannot be deleted now: a job of it is still queued or running (its worker would write into rows
    that are going away); the message names the jobs."""


# Traces deleted per transaction: each batch's cascade (steps, annotations, their events and suggestions) is read
# into memory by Django's collector, so the batch bounds the memory and the lock time, whatever the project's size.
PROJECT_DELETE_BATCH = 500


def project_delete(*, project: Project, batch: int = PROJECT_DELETE_BATCH) -> dict[str, int]:
    """Delete a project with everything it holds: traces in batches of ``batch`` (a million-trace project is never
    loaded at once: ``project.delete()`` read every dependent row into memory, over 1.5 GB at a million pairs), its
    jobs and their shards, then the files only its jobs own (export bundles and their parts, import uploads and
    parts). Screenshots stay: they are stored once by content and other projects may show them.

    Refused while a job of the project is queued or running. Each batch commits on its own, so an interrupted
    deletion (a restart, a timeout) leaves a smaller project that the next call finishes. Returns what it removed."""
    jobs = project_jobs(project)
    unfinished = [job for job in jobs if not job.is_finished]
    if unfinished:
        named = ", ".join(f"{job._meta.verbose_name} {job.pk} ({job.status})" for job in unfinished[:5])
        more = f" and {len(unfinished) - 5} more" if len(unfinished) > 5 else ""
        raise ProjectDeleteRefused(
            f"The project {project.name!r} has jobs that have not ended: {named}{more}. "
            "Cancel them or let them end, then delete the project."
        )
    removed = {"traces": 0, "jobs": len(jobs)}
    while ids := list(project.traces.order_by("pk").values_list("pk", flat=True)[: max(1, batch)]):
        with transaction.atomic():
            Trace.objects.filter(pk__in=ids).delete()
        removed["traces"] += len(ids)
    for job in jobs:
        job_delete(job)  # with its shards (no foreign key: they would outlive it) and then its files
    project.delete()
    return removed


# --- Rounds -------------------------------------------------------------------------------------

ROUND_NAME_MAX: int = Round._meta.get_field("name").max_length or 0
CHECKPOINT_MAX: int = Round._meta.get_field("checkpoint").max_length or 0
WEIGHTS_HASH_MAX: int = Round._meta.get_field("weights_hash").max_length or 0


@atomic_with_retry
def round_mark_annotated(*, round_id: int) -> Round | None:
    """Record that every trace of the round has an accepted answer, the first time it is so; returns the round
    then (and sends ``studio.signals.round_annotated`` after the commit), else None. A round with no traces is not
    annotated. Later imports into the round or answers sent back do not send it again: it is the first completion."""
    from annotation.models import Annotation, AnnotationStatus

    with transaction.atomic():
        round_ = Round.objects.select_for_update().filter(pk=round_id, annotated_at__isnull=True).first()
        if round_ is None:
            return None
        traces = Trace.objects.filter(round_id=round_id)
        accepted = Annotation.objects.filter(trace__round_id=round_id, status=AnnotationStatus.ACCEPTED)
        if not traces.exists() or traces.exclude(pk__in=accepted.values("trace_id")).exists():
            return None
        round_.annotated_at = timezone.now()
        round_.save(update_fields=["annotated_at"])
        transaction.on_commit(lambda: round_annotated.send(sender=Round, round=round_))
    return round_


def round_create(
    *, project: Project, name: str, checkpoint: str, weights_hash: str = "", ran_at=None, actor=None
) -> Round:
    """A new round of ``project``: the checkpoint that produced its traces and when it ran (default: now).

    Invalid for a blank or too long name or checkpoint, a weights hash that is no hex digest; Conflict when the
    project already has a round of that name (``round`` in the answer is its id)."""
    name, checkpoint, weights_hash = (name or "").strip(), (checkpoint or "").strip(), (weights_hash or "").strip()
    for field_name, value, limit in (("name", name, ROUND_NAME_MAX), ("checkpoint", checkpoint, CHECKPOINT_MAX)):
        if not value:
            raise Invalid(f"{field_name}: give the round's {field_name}", field=field_name)
        if len(value) > limit:
            raise Invalid(f"{field_name}: at most {limit} characters", field=field_name)
    problem = input_problem({"name": name, "checkpoint": checkpoint})
    if problem:
        raise Invalid(problem)
    weights_hash = weights_hash.lower()
    if len(weights_hash) > WEIGHTS_HASH_MAX or any(c not in "0123456789abcdef" for c in weights_hash):
        raise Invalid(
            f"weights_hash: a hex digest of at most {WEIGHTS_HASH_MAX} digits (sha256 of the weight files)",
            field="weights_hash",
        )
    existing = Round.objects.filter(project=project, name=name).first()
    if existing is not None:
        raise Conflict(f"{project.name} already has a round named {name!r}", round=existing.pk)
    try:
        with transaction.atomic():
            return Round.objects.create(
                project=project,
                name=name,
                checkpoint=checkpoint,
                weights_hash=weights_hash,
                ran_at=ran_at or timezone.now(),
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
    except IntegrityError:  # made at the same moment by another request
        existing = Round.objects.get(project=project, name=name)
        raise Conflict(f"{project.name} already has a round named {name!r}", round=existing.pk) from None


# --- Screenshots ----------------------------------------------------------------------------


def screenshot_store(*, data: bytes, name: str) -> tuple[Screenshot, bool]:
    """Keep an image once by content hash; returns (screenshot, created). Raises ImageProblem."""
    try:
        [shot], created = screenshots_store(images=[(data, name)])
    except ScreenshotProblem as exc:
        raise ImageProblem(exc.message) from None
    return shot, bool(created)


SCREENSHOT_BATCH = 64


class ScreenshotProblem(Exception):
    def __init__(self, position: int, message: str):
        super().__init__(message)
        self.position = position
        self.message = message


def screenshots_store(*, images: list[tuple[bytes, str]], decode: bool = True) -> tuple[list[Screenshot], int]:
    """Keep many images once each by content hash with one lookup and one insert.

    Returns the screenshots in the order given and how many were new. An unusable image raises
    ``ScreenshotProblem`` with its position; files already written stay (content-addressed, reused).
    ``decode=False`` (web requests): checked from their headers only, stored without a thumbnail, which a worker
    is asked to make once the transaction commits (``traces.images.inspect_image``).
    """
    digests = [hashlib.sha256(data).hexdigest() for data, _ in images]
    known = {shot.sha256: shot for shot in Screenshot.objects.filter(sha256__in=set(digests))}
    new: dict[str, Screenshot] = {}
    unseen: dict[str, int] = {}
    for position, digest in enumerate(digests):
        if digest not in known and digest not in unseen:
            unseen[digest] = position

    def inspected(position: int) -> ImageInfo | ImageProblem:
        data, name = images[position]
        try:
            return inspect_image(data, name, decode=decode)
        except ImageProblem as exc:
            return exc

    # Every new image is decoded once to be checked; Pillow decodes without the interpreter lock, so the checks run
    # side by side on the writer threads.
    infos = dict(zip(unseen.values(), _storage_writer().map(inspected, unseen.values())))
    files: dict[str, tuple[str, bytes, str, bytes]] = {}  # sha256 -> (image name, bytes, thumbnail name, bytes)
    for digest, position in unseen.items():
        info = infos[position]
        if isinstance(info, ImageProblem):
            raise ScreenshotProblem(position, str(info))
        data, name = images[position]
        shot = Screenshot(sha256=digest, format=info.format, width=info.width, height=info.height, byte_size=len(data))
        files[digest] = (screenshot_path(shot, name), data, thumbnail_path(shot, name), info.thumbnail)
        new[digest] = shot

    # Creating files is slow on a busy disk (and S3 is a round trip each): the writes run side by side. The
    # thumbnail goes beside its screenshot, so pages never make one in a web request.
    def write(shot: Screenshot) -> tuple[str, str]:
        image_name, data, thumb_name, thumb = files[shot.sha256]
        return _screenshot_file_write(image_name, data), _screenshot_file_write(thumb_name, thumb) if thumb else ""

    for shot, (image_name, thumb_name) in zip(new.values(), _storage_writer().map(write, new.values())):
        shot.image.name, shot.thumbnail.name = image_name, thumb_name
    if new:
        _screenshots_insert(list(new.values()))
        known.update((shot.sha256, shot) for shot in Screenshot.objects.filter(sha256__in=list(new)))
        for shot in new.values():
            if not shot.thumbnail.name:
                transaction.on_commit(partial(screenshot_thumbnail_request, screenshot=known[shot.sha256]))
    return [known[digest] for digest in digests], len(new)


def _screenshot_file_write(name: str, data: bytes) -> str:
    # Content-addressed: a file already there (an earlier, interrupted import) holds these very bytes.
    if default_storage.exists(name):
        return name
    return default_storage.save(name, ContentFile(data))


_WRITER: ThreadPoolExecutor | None = None


def _storage_writer() -> ThreadPoolExecutor:
    global _WRITER
    if _WRITER is None:
        _WRITER = ThreadPoolExecutor(max_workers=settings.IMPORT_WRITE_THREADS, thread_name_prefix="screenshot-write")
    return _WRITER


@atomic_with_retry
def _screenshots_insert(shots: list[Screenshot]) -> None:
    # Another import may have stored the same image a moment ago: its row wins, the file is the same.
    Screenshot.objects.bulk_create(shots, ignore_conflicts=True)


def _screenshot_thumbnail_write(screenshot: Screenshot) -> str:
    # Files only (no database), so it runs on the writer threads.
    with screenshot.image.open("rb") as handle:
        data = handle.read()
    return _screenshot_file_write(thumbnail_path(screenshot, ""), make_thumbnail(data, str(screenshot.image.name)))


def screenshot_thumbnail_make(*, screenshot: Screenshot) -> bool:
    """Make the thumbnail of a screenshot stored before imports made them (a worker task or
    ``manage.py make_thumbnails``, never a web request); False when it already had one. Raises ImageProblem."""
    if Screenshot.objects.filter(pk=screenshot.pk).exclude(thumbnail="").exists():
        return False
    screenshot.thumbnail.name = _screenshot_thumbnail_write(screenshot)
    Screenshot.objects.filter(pk=screenshot.pk, thumbnail="").update(thumbnail=screenshot.thumbnail.name)
    return True


def screenshots_thumbnails_make(*, batch: int = SCREENSHOT_BATCH) -> Iterator[tuple[Screenshot, str | None]]:
    """Make every missing thumbnail; yields each screenshot with None, or what went wrong with it. Decoding runs on
    the writer threads (IMPORT_WRITE_THREADS at once, which bounds the memory), the database in this thread."""

    def attempt(shot: Screenshot) -> str | Exception:
        try:
            return _screenshot_thumbnail_write(shot)
        except (ImageProblem, OSError) as exc:
            return exc

    after = 0
    while True:
        shots = list(Screenshot.objects.filter(thumbnail="", pk__gt=after).order_by("pk")[:batch])
        if not shots:
            return
        after = shots[-1].pk
        for shot, outcome in zip(shots, _storage_writer().map(attempt, shots)):
            if isinstance(outcome, Exception):
                yield shot, str(outcome)
                continue
            Screenshot.objects.filter(pk=shot.pk, thumbnail="").update(thumbnail=outcome)
            shot.thumbnail.name = outcome
            yield shot, None


def screenshot_thumbnail_make_by_hash(*, sha256: str) -> None:
    """The worker task's side: a screenshot gone meanwhile (swept) or unreadable is logged, never retried."""
    shot = Screenshot.objects.filter(sha256=sha256).first()
    if shot is None:
        return
    try:
        screenshot_thumbnail_make(screenshot=shot)
    except (ImageProblem, FileNotFoundError) as exc:
        log.warning("no thumbnail for screenshot %s: %s", sha256[:12], exc)


def screenshot_thumbnail_request(*, screenshot: Screenshot) -> None:
    """Ask a worker for a missing thumbnail, once per screenshot in a while: a page shows a few dozen at once and
    reloads. Best effort: the page has the image itself meanwhile, and ``make_thumbnails`` makes any that remain."""
    from django.core.cache import cache

    try:
        if cache.add(f"thumbnail-asked:{screenshot.sha256}", 1, timeout=THUMBNAIL_ASK_AGAIN_S):
            task_send("traces.tasks.make_thumbnail", args=[screenshot.sha256], retry=False)
    except Exception as exc:  # noqa: BLE001 - a broker or cache outage must not cost the page its image
        log.warning("could not ask for the thumbnail of %s: %s", screenshot.sha256[:12], exc)


THUMBNAIL_ASK_AGAIN_S = 600


# --- Steps ----------------------------------------------------------------------------------


@dataclass
class ParsedReply:
    thought: str
    reflection: str
    action_summary: str
    action_text: str
    actions: list[dict]
    error: str


def reply_parse(raw: str) -> ParsedReply:
    """Split a recorded model reply into its parts; an unparseable action is kept raw with the reason."""
    try:
        parsed = grammar.parse_response(raw)
    except grammar.ActionSyntaxError as exc:
        thought, _, after_label = raw.partition("Action:")
        thought = thought.strip()
        for prefix in ("Thought:",):
            if prefix in thought:
                thought = thought.split(prefix, 1)[1].strip()
        start = exc.action_start
        section = raw[start:] if start is not None else ""
        shown = section.strip()
        if start is None or not shown:
            # No action was read (no label, an open <think>, nothing after the label): the reason alone, since a
            # position would count into a text the page does not show as the action.
            return ParsedReply(thought, "", "", after_label.strip() or raw.strip(), [], exc.message)
        # The page shows the action section, as a parsed step's action_text is: the position counts from it, not
        # from the start of the whole reply ("Thought: …\nAction: …").
        offset = start + len(section) - len(section.lstrip())
        return ParsedReply(thought, "", "", shown, [], str(exc.counted_from(offset)))
    return ParsedReply(
        parsed.thought or "",
        parsed.reflection or "",
        parsed.action_summary or "",
        parsed.action_text,
        [action.to_json() for action in parsed.actions],
        "",
    )


def reply_from_parts(*, thought: str, action_text: str) -> ParsedReply:
    """For sources that record the action apart from the reply (already in our grammar, or kept raw)."""
    try:
        actions = grammar.parse_actions(action_text)
    except grammar.ActionSyntaxError as exc:
        return ParsedReply(thought, "", "", action_text, [], str(exc))
    if not actions:
        return ParsedReply(thought, "", "", action_text, [], "no action recorded")
    return ParsedReply(thought, "", "", action_text, [action.to_json() for action in actions], "")


# --- Import ---------------------------------------------------------------------------------


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


class TraceDeleteRefused(Invalid):
    """A deletion asked without what it needs (a reason); the message says what."""


@atomic_with_retry
def trace_delete(*, trace: Trace, user, reason: str) -> TraceDeletion:
    """Delete a trace with its steps and annotations, leaving an audit record (who, when, why, what it held)."""
    reason = (reason or "").strip()
    if not reason:
        raise TraceDeleteRefused("reason: say why the trace is deleted (kept in the audit record)", field="reason")
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
    trace.delete()
    return record


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

    # Images first (outside the transaction, content-addressed, so a retry reuses them), a batch at a
    # time: a few queries per batch instead of several per image, and bounded memory for long traces.
    where = imported.source_path or imported.external_id
    refs = [(f"{where} step {number}", step.screenshot) for number, step in enumerate(imported.steps, start=1)]
    if imported.final_screenshot:
        refs.append((where, imported.final_screenshot))
    stored = 0
    shots: list[Screenshot | None] = []
    for start in range(0, len(refs), SCREENSHOT_BATCH):
        batch = refs[start : start + SCREENSHOT_BATCH]
        present = [(label, ref) for label, ref in batch if ref is not None]
        blobs = []
        for label, ref in present:
            try:
                blobs.append((ref.read(), ref.name))
            except OSError as exc:
                raise TraceReadError(label, f"{ref.name}: cannot be read ({exc.strerror or exc})") from None
        try:
            found, created = screenshots_store(images=blobs)
        except ScreenshotProblem as exc:
            label = present[exc.position][0]
            raise TraceReadError(label, exc.message if label != where else f"final screenshot: {exc.message}") from None
        stored += created
        found_iter = iter(found)
        shots.extend(next(found_iter) if ref is not None else None for _, ref in batch)
    final = shots.pop() if imported.final_screenshot else None

    convention = trace_convention_for(project=project, imported=imported, job=job)
    steps = [
        step_build(index=number, imported=step, screenshot=shot, convention=convention, project=project)
        for number, (step, shot) in enumerate(zip(imported.steps, shots), start=1)
    ]
    unparsed = sum(bool(step.parse_error) for step in steps)
    off_screen = [(step.index, step.off_screen_point) for step in steps if step.off_screen_point]
    metadata = dict(imported.metadata)
    if imported.warnings:
        metadata["import_warnings"] = imported.warnings
    content = TraceContent.of(
        imported.instruction, [(shot.sha256 if shot else "", step.action_text) for step, shot in zip(steps, shots)]
    )
    content_hash = content.hash

    @atomic_with_retry
    def save() -> TraceImportResult | None:
        trace = Trace(
            project=project,
            coordinate_convention=convention,
            external_id=imported.external_id,
            instruction=imported.instruction,
            source=imported.source,
            source_path=imported.source_path[:500],
            outcome=imported.outcome,
            metadata=metadata,
            final_screenshot=final,
            step_count=len(steps),
            import_job=job,
            round=round,
            content_hash=content_hash,
        )
        differs = ""
        try:
            # Trace and steps in one transaction: a worker killed in between must not leave a trace
            # without steps that the redelivered task would then skip as already imported.
            with transaction.atomic():
                if guard is not None:
                    guard()
                _content_lock(project, content_hash)
                same = Trace.objects.filter(project=project, content_hash=content_hash).order_by("pk").first()
                if same is not None:
                    return TraceImportResult(same, created=False)
                taken = Trace.objects.filter(project=project, external_id=imported.external_id).first()
                if taken is not None:
                    differs = _content_conflict(taken, content)
                    if not distinct_id_when_taken:
                        advice = (
                            "push its next steps, or end it, instead of pushing it whole"
                            if taken.receiving
                            else "an external_id names one trace, so this one needs another"
                        )
                        raise TraceIdTaken(f"{differs}: {advice}", trace=taken.pk)
                    trace.external_id = _distinct_external_id(project, imported.external_id, content_hash)
                trace.save()
                for step in steps:
                    step.trace = trace
                Step.objects.bulk_create(steps)
        except IntegrityError:  # a concurrent or redelivered import got there first: look again
            return None
        return TraceImportResult(trace, True, len(steps), stored, unparsed, off_screen, differs)

    for _ in range(3):
        result = save()
        if result is not None:
            return result
    raise TraceReadError(imported.source_path or imported.external_id, "could not be stored: its name kept being taken")


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


def step_build(
    *, index: int, imported: ImportedStep, screenshot: Screenshot | None, convention: str, project: Project
) -> Step:
    """Step ``index`` of a trace as it is stored (not saved yet), whichever way it came (an import, a whole push, a
    runner's step push): its action parsed by the grammar, an unparseable one kept raw with the reason, a point
    outside the screenshot flagged."""
    if imported.parse_error:
        reply = ParsedReply(
            imported.thought or "", "", "", imported.action_text or imported.raw_response, [], imported.parse_error
        )
    elif imported.action_text is not None:
        reply = reply_from_parts(thought=imported.thought or "", action_text=imported.action_text)
    else:
        reply = reply_parse(imported.raw_response)
    return Step(
        index=index,
        screenshot=screenshot,
        thought=imported.thought if imported.thought is not None else reply.thought,
        reflection=reply.reflection,
        action_summary=reply.action_summary,
        action_text=imported.action_text if imported.action_text is not None else reply.action_text,
        raw_response=imported.raw_response,
        parsed_actions=reply.actions,
        parse_error=reply.error,
        off_screen_point=step_off_screen_point(
            parsed_actions=reply.actions, screenshot=screenshot, convention=convention, project=project
        ),
        human_edited_response=imported.human_edited_response,
        context=imported.context,
    )


# --- Runners push a trace ------------------------------------------------------------------------

PUSH_TRACE_FILE = "trace.json"
PUSH_FOLDER_PREFIX = "push-"  # studio.jobs.jobs_sweep_files removes what a killed process leaves


def trace_push(
    *,
    project: Project,
    round: Round | None,
    archive=None,
    document: bytes | None = None,
    screenshots=(),
    fmt: str = "",
) -> TraceImportResult:
    """Store one trace a runner sends while it runs, through the importers' own path: either ``archive`` (a .zip
    in any import layout, holding one trace) or ``document`` (a native trace object, docs/formats.md §1) with
    ``screenshots`` (uploaded files whose names are the paths the document gives).

    Idempotent by content (traces/identity.py): a trace the project already has, under whichever external_id, is
    answered as it is (``created`` False), unless it lies in another round than ``round`` (Conflict, naming both).
    An external_id the project holds with other content, or for a trace still receiving steps, is a
    ``TraceIdTaken`` (Conflict) saying what differs: a retried push is never answered with another trace. Invalid for
    a request that holds no trace, several, or one the importer cannot read (the message says where)."""
    if (archive is None) == (document is None):
        raise Invalid("send the trace either as file (a .zip) or as trace (a native trace object) with screenshots")
    if fmt and fmt not in IMPORTERS:
        raise Invalid(f"format: unknown format {fmt!r} (known: {', '.join(sorted(IMPORTERS))})", field="format")
    spool = Path(settings.FILE_UPLOAD_TEMP_DIR)
    spool.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=PUSH_FOLDER_PREFIX, dir=spool) as tmp:
        folder = Path(tmp) / "trace"
        folder.mkdir()
        if archive is not None:
            source = Path(tmp) / "push.zip"
            _upload_write(archive, source)
        else:
            source = folder
            _upload_write(document, folder / PUSH_TRACE_FILE)
            for upload in screenshots:
                name = Path(upload.name or "").name
                if not name or name != upload.name or name in (PUSH_TRACE_FILE, ".", ".."):
                    raise Invalid(f"screenshots: {upload.name!r} is no plain file name", field="screenshots")
                if (folder / name).exists():
                    raise Invalid(f"screenshots: {name} is sent twice", field="screenshots")
                _upload_write(upload, folder / name)
            fmt = fmt or "native"
        try:
            named = Path(getattr(archive, "name", "") or "").stem if archive is not None else ""
            with opened_source(source, scratch=Path(tmp), name=named) as (root, report):
                if report and report.refused:
                    raise Invalid("file: " + "; ".join(str(r.get("error", r)) for r in report.refused), field="file")
                found = iter_traces(root, fmt or None)
                first = next(found, None)
                if first is None:
                    raise Invalid("the request holds no trace", field="file" if archive is not None else "trace")
                if next(found, None) is not None:
                    raise Invalid("push one trace per request (use the import API for a batch)")
                if isinstance(first, TraceReadError):
                    raise Invalid(str(first).replace(str(Path(tmp)), ""))
                try:
                    result = trace_import_one(
                        project=project, imported=first, round=round, distinct_id_when_taken=False
                    )
                except TraceReadError as exc:
                    raise Invalid(str(exc)) from None
        except (ArchiveError, UnknownFormat) as exc:
            raise Invalid(str(exc).replace(str(Path(tmp)) + "/", "")) from None
    if not result.created and result.trace.round_id != (round.pk if round else None):
        held = result.trace.round.name if result.trace.round is not None else "no round"
        raise Conflict(
            f"trace {result.trace.external_id!r} is already stored, in {held}; "
            f"an external_id names one trace of the project, whichever round",
            trace=result.trace.pk,
        )
    return result


def _upload_write(content, path: Path) -> None:
    """Bytes, or an uploaded file (read in chunks), to ``path``."""
    with path.open("wb") as out:
        if isinstance(content, bytes | bytearray):
            out.write(content)
            return
        for chunk in content.chunks() if hasattr(content, "chunks") else iter(lambda: content.read(1 << 20), b""):
            out.write(chunk)


# --- Runners push a trace step by step ---------------------------------------------------------------


@dataclass
class StepPushResult:
    trace: Trace
    step: Step
    created: bool  # False: the same step was stored already (a retried push)


def _pushed_image(upload, label: str) -> Screenshot:
    """An uploaded screenshot kept by content hash like an import's; Invalid naming ``label`` when unusable."""
    data = upload if isinstance(upload, bytes | bytearray) else b"".join(upload.chunks())
    try:
        [shot], _ = screenshots_store(images=[(bytes(data), getattr(upload, "name", "") or label)], decode=False)
    except ScreenshotProblem as exc:
        raise Invalid(f"{label}: {exc.message}", field=label) from None
    return shot


def _pushed_trace(project: Project, external_id: str) -> Trace | None:
    return Trace.objects.select_for_update().filter(project=project, external_id=external_id).first()


# What makes a pushed step the same step (with its screenshot's hash); raw_response last: it is made of the others
# and named only when nothing else tells the difference (reflection, action_summary).
STEP_PUSH_COMPARED = ("thought", "action_text", "human_edited_response", "context", "raw_response")


def trace_step_push(
    *,
    project: Project,
    external_id: str,
    index,
    step,
    screenshot=None,
    instruction: str = "",
    round: Round | None = None,
    coordinates: str = "",
    source: str = "",
    metadata=None,
) -> StepPushResult:
    """Store step ``index`` (1-based) of a trace its runner sends while it runs: ``step`` is one step object of the
    native format (docs/formats.md §1, JSON), ``screenshot`` its image (an uploaded file or bytes). Step 1 makes
    the trace, receiving steps (``instruction``, ``round``, ``coordinates``, ``source`` and ``metadata``, a JSON
    object as text or a dict, as an import's trace has them, are read then); each next index appends.

    The same index again with the same content (screenshot and texts) answers the stored step (``created`` False: a
    retried push, also after the trace was ended). Conflict for other content at a stored index, for a gap (naming
    the missing step), for a new step of an ended trace and for a trace of another round; Invalid for what cannot be
    read."""
    external_id = (external_id or "").strip()
    problem = input_problem(external_id, name="external_id") if external_id else None
    if not external_id or len(external_id) > 255 or problem:
        raise Invalid(problem or "external_id must be 1 to 255 characters", field="external_id")
    try:
        number = int(str(index).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise Invalid(f"index: the step's 1-based position in the trace, not {str(index)[:40]!r}", field="index")
    if coordinates and coordinates not in CoordinateConvention.values:
        raise Invalid(
            f"coordinates: one of {', '.join(CoordinateConvention.values)}, not {coordinates[:40]!r}",
            field="coordinates",
        )
    problem = input_problem(instruction or "", name="instruction")
    if problem:
        raise Invalid(problem, field="instruction")
    source, metadata = pushed_source_and_metadata(source, metadata)
    if isinstance(step, str):
        step = step.encode("utf-8")
    where = f"step {number}"
    try:
        document = parse_json_bytes(step or b"", where)
        # The screenshot travels apart (stored below), not by the path a trace folder would give.
        imported = step_from_document(document, where=where, screenshot=None)
    except TraceReadError as exc:
        raise Invalid(str(exc), field="step") from None
    problem = input_problem(_imported_step_fields(imported), name=where)
    if problem:
        raise Invalid(problem, field="step")
    # The image first, outside the transaction: content-addressed, so a retry or a refused push reuses it.
    shot = _pushed_image(screenshot, "screenshot") if screenshot is not None else None
    if round is not None and round.project_id != project.pk:
        raise Invalid(f"round: {round.name!r} is a round of another project", field="round")

    @atomic_with_retry
    def save() -> StepPushResult:
        trace = _pushed_trace(project, external_id)
        if trace is None and number == 1:
            trace = Trace(
                project=project,
                external_id=external_id,
                instruction=instruction or "",
                source=source or "native",
                metadata=metadata,
                coordinate_convention=coordinates or project.coordinate_convention,
                round=round,
                receiving=True,
            )
            try:
                with transaction.atomic():
                    trace.save()
            except IntegrityError:  # the same first step pushed twice at once: the other request made it
                trace = _pushed_trace(project, external_id)
        count = trace.step_count if trace is not None else 0
        if trace is not None and round is not None and trace.round_id != round.pk:
            held = trace.round.name if trace.round is not None else "no round"
            raise Conflict(f"trace {external_id!r} is in {held}, not in {round.name}", trace=trace.pk)
        if number > count + 1:
            raise Conflict(
                f"step {number} of {external_id!r} cannot come yet: step {count + 1} is missing "
                f"(the trace has {count} step{'s' if count != 1 else ''})",
                step_count=count,
            )
        assert trace is not None  # number <= count + 1 with no trace means number == 1, which made it
        built = step_build(
            index=number, imported=imported, screenshot=shot, convention=trace.coordinate_convention, project=project
        )
        built.trace = trace
        if number <= count:
            stored = trace.steps.select_related("screenshot").get(index=number)
            differs = [name for name in STEP_PUSH_COMPARED if getattr(stored, name) != getattr(built, name)]
            if stored.screenshot_id != built.screenshot_id:
                differs.insert(0, "screenshot")
            if len(differs) > 1 and differs[-1] == "raw_response":
                differs.pop()
            if differs:
                raise Conflict(
                    f"step {number} of {external_id!r} is stored already with another {', '.join(differs)}; "
                    f"the next step is {count + 1}",
                    step_count=count,
                )
            return StepPushResult(trace, stored, created=False)
        if not trace.receiving:
            raise Conflict(
                f"trace {external_id!r} was ended (it has {count} steps): it takes no more steps", trace=trace.pk
            )
        built.save()
        trace.step_count = number
        trace.save(update_fields=["step_count"])
        return StepPushResult(trace, built, created=True)

    return save()


SOURCE_MAX: int = Trace._meta.get_field("source").max_length or 0


def pushed_source_and_metadata(source, metadata) -> tuple[str, dict]:
    """A runner's ``source`` (the agent or format its trace comes from, as an importer names it) and ``metadata``
    (a JSON object, as text or parsed) for a pushed trace, checked as an import's are; Invalid naming the field."""
    source = (source or "").strip()
    problem = input_problem(source, name="source")
    if problem or len(source) > SOURCE_MAX:
        raise Invalid(problem or f"source: at most {SOURCE_MAX} characters", field="source")
    if isinstance(metadata, bytes | bytearray):
        metadata = metadata.decode("utf-8", "replace")
    if isinstance(metadata, str):
        try:
            metadata = parse_json_bytes(metadata.encode("utf-8", "surrogatepass"), "metadata") if metadata else {}
        except TraceReadError as exc:
            raise Invalid(str(exc), field="metadata") from None
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise Invalid(f"metadata: a JSON object, not {type(metadata).__name__}", field="metadata")
    problem = input_problem(metadata, name="metadata")
    if problem:
        raise Invalid(problem, field="metadata")
    return source, metadata


def trace_end(*, project: Project, external_id: str, final_screenshot=None, outcome: str = "") -> Trace:
    """The runner is done: the trace stops receiving steps and joins the annotation queue and pre-scoring, with its
    ``final_screenshot`` (the screen after the last action) and ``outcome`` when sent. Ending an ended trace again
    answers it as it is; Conflict when that asks for another outcome or final screenshot than the stored ones."""
    if outcome and outcome not in Outcome.values:
        raise Invalid(f"outcome: one of {', '.join(Outcome.values)}, not {outcome[:40]!r}", field="outcome")
    shot = _pushed_image(final_screenshot, "final_screenshot") if final_screenshot is not None else None

    @atomic_with_retry
    def save() -> Trace:
        trace = _pushed_trace(project, (external_id or "").strip())
        if trace is None:
            raise NotFound(f"{project.name} has no trace {external_id[:255]!r}: push its step 1 first")
        if not trace.receiving:
            differs = [
                name
                for name, asked, stored in (
                    ("outcome", outcome, trace.outcome),
                    ("final_screenshot", shot.pk if shot else None, trace.final_screenshot_id),
                )
                if asked and asked != stored
            ]
            if differs:
                raise Conflict(
                    f"trace {trace.external_id!r} was ended already with another {', '.join(differs)}", trace=trace.pk
                )
            return trace
        trace.receiving = False
        trace.outcome = outcome or trace.outcome
        trace.final_screenshot = shot or trace.final_screenshot
        # Its identity is settled now that its steps are (traces/identity.py); a copy of a trace the project holds
        # is listed by the trace_duplicates command.
        trace.content_hash = trace_stored_content(trace).hash
        trace.save(update_fields=["receiving", "outcome", "final_screenshot", "content_hash"])
        return trace

    return save()


def step_off_screen_point(
    *, parsed_actions: list[dict], screenshot: Screenshot | None, convention: str, project
) -> str:
    """Why a recorded step's points fall outside its screenshot in the trace's convention ("" when they are all
    inside, or when there is no screenshot to measure them against)."""
    if not parsed_actions or screenshot is None:
        return ""
    actions = [grammar.Action.from_json(item) for item in parsed_actions]
    return "; ".join(
        grammar.off_screen_points(
            actions,
            convention=convention,
            width=screenshot.width,
            height=screenshot.height,
            max_pixels=project.max_pixels,
        )
    )


def import_job_create(
    *,
    project: Project,
    user,
    upload_name: str,
    original_name: str = "",
    fmt: str = "",
    server_path: bool = False,
    enqueue: bool = True,
    coordinates: str = "",
    round: Round | None = None,
) -> ImportJob:
    if round is not None and round.project_id != project.pk:
        raise Invalid(f"round: {round.name!r} is a round of another project", field="round")
    if coordinates and coordinates not in CoordinateConvention.values:
        raise ValueError(f"coordinates must be one of {', '.join(CoordinateConvention.values)}, not {coordinates!r}")
    job = ImportJob.objects.create(
        project=project,
        created_by=user,
        upload=upload_name,
        upload_is_server_path=server_path,
        original_name=original_name,
        format=fmt,
        coordinate_convention=coordinates,
        round=round,
    )
    if enqueue:
        job_enqueue(job)
    return job


class UploadTooLarge(TooLarge):
    """An upload over STUDIO_IMPORT_MAX_UPLOAD_BYTES."""


def import_upload_store(*, uploaded_file) -> str:
    """Put an uploaded archive in storage so any worker (another machine, in the full stack) can read it."""
    if uploaded_file.size > settings.IMPORT_MAX_UPLOAD_BYTES:
        raise UploadTooLarge(
            f"upload of {uploaded_file.size} bytes is over the {settings.IMPORT_MAX_UPLOAD_BYTES}-byte limit"
        )
    return default_storage.save("imports/upload.zip", uploaded_file)


def import_upload_release(*, job: ImportJob) -> None:
    """An ended import's upload: deleted once it succeeded (unless IMPORT_KEEP_UPLOADS); a failed or cancelled
    one's stays for IMPORT_FAILED_UPLOAD_DAYS (``import_uploads_sweep``). A server path is never ours to delete.
    The shards' parts of it go however the import ended."""
    import_parts_delete(job=job)
    if job.status == JobStatus.SUCCEEDED and not settings.IMPORT_KEEP_UPLOADS:
        _upload_remove(job)


def import_job_files_delete(*, job: ImportJob) -> None:
    """Every stored file of an import, its row being deleted: the shards' parts and the upload (a server path is
    never ours to delete)."""
    import_parts_delete(job=job)
    _upload_remove(job)


def import_uploads_sweep(*, now) -> int:
    """Delete the uploads of failed or cancelled imports that ended more than IMPORT_FAILED_UPLOAD_DAYS ago (and of
    succeeded ones whose deletion at their end did not happen, e.g. storage was down); returns how many."""
    if settings.IMPORT_KEEP_UPLOADS:
        return 0
    ended = ImportJob.objects.filter(upload_is_server_path=False, upload_removed_at__isnull=True)
    due = ended.filter(status=JobStatus.SUCCEEDED) | ended.filter(
        status__in=[JobStatus.FAILED, JobStatus.CANCELLED],
        finished_at__lt=now - timedelta(days=settings.IMPORT_FAILED_UPLOAD_DAYS),
    )
    removed = 0
    for job in due.order_by("pk")[:500]:
        _upload_remove(job)
        removed += 1
    return removed


def _upload_remove(job: ImportJob) -> None:
    if job.upload_is_server_path or job.upload_removed_at is not None:
        return
    default_storage.delete(job.upload)  # no error when it is already gone
    import_parts_delete(job=job)  # (when their deletion at the end failed)
    job.upload_removed_at = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(upload_removed_at=job.upload_removed_at)


@contextlib.contextmanager
def _job_source(job: ImportJob, scratch: Path):
    """The upload as a local path: a server path as it is, else a copy of the stored upload in ``scratch``."""
    if job.upload_is_server_path:
        yield Path(job.upload)
        return
    with tempfile.TemporaryDirectory(prefix="upload-", dir=scratch) as tmp:
        # Named as the user named it, so messages name their file ("batch.jsonl line 2"), unless that name is no file
        # name here (a long non-ASCII name is longer than a file system allows: archive_folder_name); its kind is
        # kept for the format detection.
        suffix = ".jsonl" if (job.original_name or job.upload).lower().endswith(".jsonl") else ".zip"
        local = Path(tmp) / f"{archive_folder_name(job.original_name or 'upload')}{suffix}"
        stored_file_fetch(job.upload, local)
        yield local


# --- Sharded imports (the import job kind, traces/jobs.py; run by studio/engine.py) ------------------------------------------------------------------------
#
# The engine claims the job and has it planned once (import_plan_make): it unpacks the upload, finds the trace units
# its importer reads (a trace folder, a trace file, a JSONL of traces) and cuts them, in order, into shards of
# IMPORT_SHARD_TRACES. For an archive it stores each shard's part (the files its units may open: unit_files) in
# storage, so a shard on any machine reads its traces from there, never from the planning worker's disk; a server
# path (the import command) or a single uploaded file is read as it is. Each trace is written behind the shard's
# write guard; a re-run shard finds its earlier traces stored (one trace per (project, external_id)) and reports
# them as this job's. The run that completes the last shard sums the shards' results and ends the job.

# Packed into a part as they are: deflating compressed files again costs time and saves nothing (a file that
# member_copy cannot copy from the upload as it is: one compressed with bzip2 or LZMA).
IMPORT_PART_COMPRESSED = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".zip", ".gz"}

# What a plan does not unpack: screenshots (their bytes are most of an upload). Importers find their trace units from
# folders and trace files, where a screenshot's presence is all they look at; the plan makes each an empty file, and
# its compressed bytes go from the upload into its shard's part as they are, unpacked (and checked) by the shard.
IMPORT_PLAN_PLACEHOLDERS = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")


def _plan_placeholder(name: str) -> bool:
    return name.lower().endswith(IMPORT_PLAN_PLACEHOLDERS)


def import_parts_prefix(job: ImportJob) -> str:
    """Where an import's shards' parts of the upload are stored (shared by every worker) until the import ends."""
    return f"imports/job-{job.pk}-parts"


def import_parts_delete(*, job: ImportJob) -> int:
    """Delete every stored part of an import (it ended however it ended); returns how many."""
    return stored_folder_delete(import_parts_prefix(job))


def _unit_name(root: Path, unit: Path) -> str:
    return unit.relative_to(root).as_posix() if unit != root else "."


def _import_parts_store(
    job: ImportJob, root: Path, chunks: list[list[Path]], scratch: Path, *, upload: Path, report: ExtractReport
) -> list[str]:
    """Store each shard's part of the upload: the files its units may open, under the name of the folder the traces
    are read from (so messages name files as the whole upload would), copied from the upload's zip as they are
    (``report`` says which entry each unpacked file, or placeholder, came from). Under the planning attempt's own
    folder: a plan a killed worker left half-stored never mixes with the next one's."""
    names = []
    # Every file here was unpacked under its entry's name, never through a link (safe_extract makes none): its
    # resolved path, the report's key, is the resolved root's joined with its own relative path.
    resolved_root = root.resolve()
    with upload.open("rb") as raw:
        for index, chunk in enumerate(chunks):
            files = sorted({file for unit in chunk for file in unit_files(root, unit)})
            local = scratch / f"part-{index:05d}.zip"
            with zipfile.ZipFile(local, "w") as part:
                for file in files:
                    relative = file.relative_to(root)
                    name = f"{root.name}/{relative.as_posix()}"
                    entry = report.members.get(resolved_root / relative)
                    if entry is not None and entry.compress_type in COPIED_AS_THEY_ARE:
                        try:
                            member_copy(raw, entry, part, name)
                        except zipfile.BadZipFile as exc:  # the file is left out; its trace says it is missing
                            report.refused.append(
                                {"file": entry.filename, "error": f"{entry.filename} is damaged: {exc}"}
                            )
                        continue
                    packed = (
                        zipfile.ZIP_STORED if file.suffix.lower() in IMPORT_PART_COMPRESSED else zipfile.ZIP_DEFLATED
                    )
                    part.write(file, name, compress_type=packed, compresslevel=1)
            names.append(stored_file_save_moved(f"{import_parts_prefix(job)}/{job.attempts}/{index:05d}.zip", local))
    return names


def _named_as_uploaded(message: str, local: Path | None, upload: str) -> str:
    """``message`` naming the upload as its user named it, never the server's temporary folders nor the stored copy's
    own name (the archive check names a file by its base name, ``upload.zip``, a file the user never had)."""
    if local is None:
        return message
    message = message.replace(str(local), upload)
    return upload + message[len(local.name) :] if message.startswith(f"{local.name}:") else message


# Refused entries named in a job's message; all of them are in its errors.
REFUSED_NAMED = 5


def _refused_phrase(upload: str, report: ExtractReport) -> str:
    """The refused entries of an upload in one phrase, for a job that found nothing to read."""
    refused = report.refused
    head = (
        f"every file of {upload} was refused ({len(refused)})"
        if not report.extracted
        else f"{in_words(len(refused), 'file', 'files')} of {upload} refused"
    )
    named = "; ".join(entry["error"] for entry in refused[:REFUSED_NAMED])
    more = len(refused) - REFUSED_NAMED
    return f"{head}: {named}" + (f"; and {more} more, listed in the job's errors" if more > 0 else "")


def _import_part_refusals(plan: dict, refused: list[dict]) -> list[dict]:
    """What unpacking a shard's part refused (a screenshot the plan copied unread is damaged), named as the upload
    names it: a part holds its files under the plan's root, the upload under its top folder, or none."""
    inside, top = plan["root"] + "/", plan.get("top", plan["root"])
    named = []
    for refusal in refused:
        original = refusal["file"].removeprefix(inside)
        original = f"{top}/{original}" if top else original
        named.append({"file": original, "error": refusal["error"].replace(refusal["file"], original)})
    return named


def import_plan_make(*, job: ImportJob, scratch: Path) -> list[tuple[list[str], int]]:
    """Plan the import: its format, its trace units cut into shards (returned: each shard's unit names and count),
    each shard's part stored. Raises JobFailed with the reason when the upload cannot be read (not an archive, no
    known layout, a format that finds nothing)."""
    upload = job.original_name or Path(job.upload).name
    local: Path | None = None
    unpacked: tuple[Path, ExtractReport | None] | None = None
    try:
        with (
            _job_source(job, scratch) as local,
            opened_source(local, scratch=scratch, placeholder=_plan_placeholder, name=upload) as (root, report),
        ):
            unpacked = root, report
            importer = importer_for(root, job.format or None)
            units = importer.units(root)
            if job.format and not units:
                others = [name for name in matching_formats(root) if name != job.format]
                raise JobFailed(
                    f"the {job.format} format found no traces in {upload}; "
                    + (f"it looks like: {', '.join(others)}" if others else "no known format matches it")
                )
            size = max(1, settings.IMPORT_SHARD_TRACES)
            chunks = [units[start : start + size] for start in range(0, len(units), size)] or [[]]
            parts = _import_parts_store(job, root, chunks, scratch, upload=local, report=report) if report else []
            plan = {
                "format": importer.format_name,
                "root": root.name,
                # The upload's top folder ("" when it has none, and its files lie in the plan's root itself).
                "top": root.name if report and root != report.folder else "",
                "parts": parts,
                "errors": list(report.refused) if report else [],
            }
            pieces = [([_unit_name(root, unit) for unit in chunk], len(chunk)) for chunk in chunks]
    except (ArchiveError, UnknownFormat, TraceReadError) as exc:
        message = _named_as_uploaded(str(exc), local, upload)
        read_as, unpacking = unpacked if unpacked is not None else (None, None)
        if read_as is not None and unpacking is not None and read_as == unpacking.folder:
            if message.startswith(f"{read_as.name}:"):  # the folder the archive was read as is the upload itself
                message = upload + message[len(read_as.name) :]
        if unpacking is not None and unpacking.refused:
            # What was refused may be why nothing was found (every entry refused): each entry with its reason
            # goes in the job's errors, and the message says so first.
            job.errors = list(unpacking.refused)
            ImportJob.objects.filter(pk=job.pk).update(errors=job.errors)
            message = _refused_phrase(upload, unpacking) + "; " + message
        raise JobFailed(message) from exc
    job.plan, job.errors, job.progress_total = plan, plan["errors"], len(units)
    ImportJob.objects.filter(pk=job.pk).update(
        plan=plan, errors=plan["errors"], progress_total=len(units), progress_done=0
    )
    return pieces


def import_job_run(*, job_id: int, attempt: int | None = None) -> ImportJob:
    """Run (or take over, after a worker died) an import in this process (the import command, tests): the same
    plan and shard runs a worker makes, one shard after the other. Each trace is stored whole or reported."""
    return job_run_here(ImportJob.objects.get(pk=job_id), attempt=attempt)


@contextlib.contextmanager
def _import_shard_source(job: ImportJob, shard: JobShard, scratch: Path):
    """The folder (or file) the shard's units are read from, and what unpacking it refused that the plan did not
    report: its part of the upload, fetched from storage and unpacked (the plan copied the screenshots into it
    unread: a damaged one is found here); or, with no parts (a server path, one uploaded file), the source itself."""
    plan = job.plan
    if not plan["parts"]:
        with _job_source(job, scratch) as local, opened_source(local, scratch=scratch) as (root, _):
            yield root, []
        return
    part = scratch / "part.zip"
    stored_file_fetch(plan["parts"][shard.index], part)
    report = safe_extract(part, scratch / "unpacked")
    part.unlink()
    yield scratch / "unpacked" / plan["root"], _import_part_refusals(plan, report.refused)


@dataclass
class ImportTally:
    """What one shard's run met, kept in its JobShard.result: the job's tallies are the sums over its shards."""

    screenshots_stored: int = 0
    traces_failed: int = 0
    traces_skipped: int = 0
    errors: list[dict] = field(default_factory=list)
    # The traces this run stored or met, by id: the same content met again in the run is already present (not
    # recounted, and not mistaken for what a killed run of the shard stored).
    met: set[int] = field(default_factory=set)

    def result(self, *, complete: bool) -> dict:
        return {
            "complete": complete,
            "screenshots_stored": self.screenshots_stored,
            "traces_failed": self.traces_failed,
            "traces_skipped": self.traces_skipped,
            "errors": self.errors,
        }


def import_shard_work(job: ImportJob, shard: JobShard, progress: ShardProgress) -> None:
    """Import the shard's units from its start. Problems met are reported again by a re-run (its report replaces
    the killed run's); the screenshots an earlier run stored are counted on (the re-run finds them stored)."""
    scratch = job_workdir(job) / f"shard-{shard.index:05d}-{shard.attempts}"
    scratch.mkdir(parents=True, exist_ok=True)
    tally = ImportTally(screenshots_stored=(shard.result or {}).get("screenshots_stored", 0))
    progress.start(done=0)
    try:
        with _import_shard_source(job, shard, scratch) as (root, refused):
            tally.errors.extend(refused)
            importer = IMPORTERS[job.plan["format"]]
            for name in shard.items:
                for item in importer.read_units(root, [root / name]):
                    _import_one_into_job(job, item, tally, shard=shard, progress=progress)
                if settings.IMPORT_THROTTLE_S:
                    time.sleep(settings.IMPORT_THROTTLE_S)
                progress.add(done=1)
        with transaction.atomic():
            progress.guard()
            JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts).update(result=tally.result(complete=True))
            _import_tallies_record(ImportJob.objects.get(pk=job.pk))
    except (ArchiveError, UnknownFormat, TraceReadError) as exc:
        raise ShardFatal(str(exc)) from exc
    except JobCancelled:
        _import_tallies_record(ImportJob.objects.get(pk=job.pk))  # what the shards stored before the cancel
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        with contextlib.suppress(OSError):  # the attempt's folder, unless another shard here still works in it
            scratch.parent.rmdir()


def _import_tallies_record(job: ImportJob, shards: list[JobShard] | None = None) -> None:
    """The job's counts and report from the database and its shards' recorded results (the plan's problems first,
    then each shard's in plan order: the order an unsharded read meets them)."""
    shards = shards if shards is not None else shards_of(job)
    results = [shard.result for shard in shards if shard.result]
    complete = [result for result in results if result.get("complete")]
    job.screenshots_stored = sum(result["screenshots_stored"] for result in results)
    job.traces_failed = sum(result["traces_failed"] for result in complete)
    job.traces_skipped = sum(result["traces_skipped"] for result in complete)
    job.errors = [*(job.plan or {}).get("errors", []), *(error for result in complete for error in result["errors"])]
    ImportJob.objects.filter(pk=job.pk).update(
        screenshots_stored=job.screenshots_stored,
        traces_failed=job.traces_failed,
        traces_skipped=job.traces_skipped,
        errors=job.errors,
    )
    _import_job_count(job)


def import_summarize(job, shards: list[JobShard]) -> str:
    """The job's end, when its last shard completed (the job row is locked): the summary an unsharded run gave."""
    _import_tallies_record(job, shards)
    return import_job_summary(job)


def _import_one_into_job(job: ImportJob, item, tally: ImportTally, *, shard: JobShard, progress: ShardProgress) -> None:
    if isinstance(item, TraceReadError):
        tally.errors.append({"file": item.where, "error": str(item)})
        tally.traces_failed += 1
        return
    try:
        result = trace_import_one(project=job.project, imported=item, job=job, guard=progress.guard)
    except (TraceReadError, DataError, IntegrityError) as exc:
        # One trace the database refuses (a value it cannot store) costs that trace only; the message names the
        # trace, never the SQL. A lost connection is not caught here: the shard is run again (studio.shards).
        where = exc.where if isinstance(exc, TraceReadError) else (item.source_path or item.external_id)
        error = (
            str(exc)
            if isinstance(exc, TraceReadError)
            else (f"{where}: the database refused a value of this trace ({exc.__class__.__name__})")
        )
        tally.errors.append({"file": where, "error": error})
        tally.traces_failed += 1
        return
    # This job's own traces are reported, also when an earlier run of the shard stored them; the same content met
    # again (earlier in this run, or stored from another folder of the upload) is already present.
    met_before = result.trace.pk in tally.met
    tally.met.add(result.trace.pk)
    own = result.created or (
        result.trace.import_job_id == job.pk and not met_before and result.trace.source_path == item.source_path[:500]
    )
    if result.taken_by_other_content:
        tally.errors.append(distinct_id_report(item, result.trace, result.taken_by_other_content))
    elif not own and result.trace.external_id != item.external_id:
        tally.errors.append(already_present_report(item, result.trace))
    if own and awaits_instruction(result.trace):
        tally.errors.append(instruction_missing_report(item, result.trace))
    if result.created:
        off_screen = result.off_screen
    else:
        off_screen = trace_off_screen_steps(result.trace) if own else []
    if off_screen:
        tally.errors.append(off_screen_report(item, result.trace, off_screen))
    if not own:
        tally.traces_skipped += 1
    if result.screenshots_stored:
        tally.screenshots_stored += result.screenshots_stored
        # Kept as it goes: a run taken over after this counts on from here, not from zero.
        JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts).update(result=tally.result(complete=False))


def _import_job_count(job: ImportJob) -> None:
    # Counted from the database, so a job taken over after a crash reports every trace it stored once.
    totals = job.traces.aggregate(traces=Count("id"), steps=Sum("step_count"))
    job.traces_imported = totals["traces"]
    job.steps_imported = totals["steps"] or 0
    job.unparsed_actions = Step.objects.filter(trace__import_job=job).exclude(parse_error="").count()
    job.off_screen_steps = Step.objects.filter(trace__import_job=job).exclude(off_screen_point="").count()
    ImportJob.objects.filter(pk=job.pk).update(
        traces_imported=job.traces_imported,
        steps_imported=job.steps_imported,
        unparsed_actions=job.unparsed_actions,
        off_screen_steps=job.off_screen_steps,
    )


def import_job_summary(job: ImportJob) -> str:
    """The job's message when it ran to its end: what was lost first (a lead must not read "succeeded" past five
    failed traces), then the counts. Notes on kept traces are counted by what they say (awaiting an instruction,
    off-screen steps), never as errors."""
    awaiting = traces_awaiting_instruction(job.traces.all()).count()
    report = import_job_report(job)
    attention = report.attention
    distinct = sum(note.get("kind") == STORED_UNDER_DISTINCT_ID for note in report.notes)
    return (
        (f"{attention}. " if attention else "")
        + f"{in_words(job.traces_imported, 'trace', 'traces')}, {in_words(job.steps_imported, 'step', 'steps')}, "
        f"{in_words(job.screenshots_stored, 'screenshot', 'screenshots')} stored, "
        f"{in_words(job.traces_skipped, 'trace', 'traces')} already present, {job.traces_failed} failed, "
        f"{in_words(job.unparsed_actions, 'unparsed action', 'unparsed actions')}, "
        f"{off_screen_phrase(job.off_screen_steps)}"
        + (f", {awaiting} awaiting an instruction" if awaiting else "")
        + (f", {distinct} stored under a distinct id (its own was taken by other content)" if distinct else "")
    )


def off_screen_phrase(count: int) -> str:
    return in_words(count, "off-screen step", "off-screen steps")


OFF_SCREEN_LISTED = 5  # steps named in one trace's entry; the trace page lists them all


def trace_off_screen_steps(trace: Trace) -> list[tuple[int, str]]:
    return list(trace.steps.exclude(off_screen_point="").order_by("index").values_list("index", "off_screen_point"))


def off_screen_report(imported: ImportedTrace, trace: Trace, off_screen: list[tuple[int, str]]) -> dict:
    """The job's entry for a trace with recorded points off the screen: which steps, why, and what follows (shown
    to annotators, never trained on unless corrected)."""
    where = imported.source_path or imported.external_id
    named = "; ".join(f"step {index}: {why}" for index, why in off_screen[:OFF_SCREEN_LISTED])
    more = len(off_screen) - OFF_SCREEN_LISTED
    return {
        "file": where,
        "kind": OFF_SCREEN_POINT,
        "trace": trace.pk,
        "steps": [index for index, _ in off_screen],
        "error": (
            f"{where}: {off_screen_phrase(len(off_screen))} ({named}"
            + (f"; and {more} more steps, listed on the trace page" if more > 0 else "")
            + "); annotators see the step flagged, and exports never train on it unless the annotator corrects it"
        ),
    }


def distinct_id_report(imported: ImportedTrace, trace: Trace, differs: str) -> dict:
    """The job's entry for a trace stored under a distinct external_id: its own names another trace of the project,
    whose content differs (two traces are never merged)."""
    where = imported.source_path or imported.external_id
    return {
        "file": where,
        "kind": STORED_UNDER_DISTINCT_ID,
        "trace": trace.pk,
        "error": f"{where}: stored as {trace.external_id!r}, because {differs}",
    }


def already_present_report(imported: ImportedTrace, trace: Trace) -> dict:
    """The job's entry for a trace whose content the project holds under another external_id (another folder or zip
    name): nothing was stored."""
    where = imported.source_path or imported.external_id
    return {
        "file": where,
        "kind": ALREADY_PRESENT,
        "trace": trace.pk,
        "error": (
            f"{where}: already present as trace {trace.external_id!r} (the same instruction, screenshots and "
            "actions); nothing stored"
        ),
    }


def instruction_missing_report(imported: ImportedTrace, trace: Trace) -> dict:
    """The job's entry for a trace stored without its instruction: what is missing, what the importer said about
    where it looked, and what happens now (kept out of the queue until a lead writes it on the trace page)."""
    where = imported.source_path or imported.external_id
    said = [w for w in imported.warnings if "instruction" in w.lower()]
    return {
        "file": where,
        "kind": INSTRUCTION_MISSING,
        "trace": trace.pk,
        "error": (
            f"{where}: no instruction found in the source"
            + (f" ({'; '.join(said)})" if said else "")
            + "; the trace is kept out of the annotation queue until a lead writes its instruction on the "
            "trace page"
        ),
    }


class TraceEditRefused(Invalid):
    """An edit of a trace that cannot be made as asked; the message names the problem."""


# The longest instruction a lead may write (the trace page's form says it too).
INSTRUCTION_MAX_CHARS = 10_000


def instruction_problem(instruction: str) -> str:
    """What keeps ``instruction`` from being a trace's instruction, or "": the one rule of the trace page's form,
    the bulk file and the API. A blank one would send the trace back out of the queue."""
    text = (instruction or "").strip()
    if not text:
        return "The instruction cannot be blank: write the task the agent was given."
    if len(text) > INSTRUCTION_MAX_CHARS:
        return f"The instruction is {len(text)} characters long; keep it under {INSTRUCTION_MAX_CHARS}."
    return ""


@atomic_with_retry
def trace_instruction_set(*, trace_id: int, actor, instruction: str) -> Trace:
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
def trace_instructions_fill(*, project: Project, actor, rows, replace: bool = False) -> InstructionsReport:
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

        def refuse(reason: str, row=row) -> None:
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
