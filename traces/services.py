"""Writes for projects, screenshots, traces and imports."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Count, Sum

from studio.db import atomic_with_retry
from studio.jobs import JobCancelled, job_add_error, job_enqueue, job_fail, job_finish, job_mark_cancelled, job_progress, job_start
from traces import actions as grammar
from traces.images import ImageProblem, inspect_image, make_thumbnail
from traces.importers import ArchiveError, ImportedTrace, TraceReadError, UnknownFormat, iter_traces, opened_source
from traces.models import ImportJob, Membership, Project, Screenshot, Step, Trace, screenshot_path

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


def screenshots_store(*, images: list[tuple[bytes, str]]) -> tuple[list[Screenshot], int]:
    """Keep many images once each by content hash with one lookup and one insert.

    Returns the screenshots in the order given and how many were new. An unusable image raises
    ``ScreenshotProblem`` with its position; files already written stay (content-addressed, reused).
    """
    digests = [hashlib.sha256(data).hexdigest() for data, _ in images]
    known = {shot.sha256: shot for shot in Screenshot.objects.filter(sha256__in=set(digests))}
    new: dict[str, Screenshot] = {}
    for position, ((data, name), digest) in enumerate(zip(images, digests)):
        if digest in known or digest in new:
            continue
        try:
            info = inspect_image(data, name)
        except ImageProblem as exc:
            raise ScreenshotProblem(position, str(exc)) from None
        shot = Screenshot(sha256=digest, format=info.format, width=info.width, height=info.height, byte_size=len(data))
        shot.image.name = screenshot_path(shot, name)
        new[digest] = shot
    # Creating files is slow on a busy disk (and S3 is a round trip each): the writes run side by side.
    blobs = {digest: data for (data, _), digest in zip(images, digests) if digest in new}
    for shot, stored_name in zip(new.values(), _storage_writer().map(
        lambda shot: _screenshot_file_write(shot.image.name, blobs[shot.sha256]), new.values()
    )):
        shot.image.name = stored_name
    if new:
        _screenshots_insert(list(new.values()))
        known.update((shot.sha256, shot) for shot in Screenshot.objects.filter(sha256__in=list(new)))
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


def screenshot_ensure_thumbnail(*, screenshot: Screenshot) -> Screenshot:
    """Thumbnails are made on first use and cached in storage, keeping imports fast."""
    if screenshot.thumbnail:
        return screenshot
    with screenshot.image.open("rb") as handle:
        data = handle.read()
    screenshot.thumbnail.save(f"{screenshot.sha256}.webp", ContentFile(make_thumbnail(data)), save=False)
    Screenshot.objects.filter(pk=screenshot.pk).update(thumbnail=screenshot.thumbnail.name)
    return screenshot


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
        thought, _, action_text = raw.partition("Action:")
        thought = thought.strip()
        for prefix in ("Thought:",):
            if prefix in thought:
                thought = thought.split(prefix, 1)[1].strip()
        return ParsedReply(thought, "", "", action_text.strip() or raw.strip(), [], str(exc))
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
    trace: Trace | None
    created: bool
    steps: int = 0
    screenshots_stored: int = 0
    unparsed_actions: int = 0


def trace_import_one(*, project: Project, imported: ImportedTrace, job: ImportJob | None = None) -> TraceImportResult:
    """Store one trace whole or not at all. Idempotent: a trace already in the project is skipped."""
    existing = Trace.objects.filter(project=project, external_id=imported.external_id).first()
    if existing:
        return TraceImportResult(existing, created=False)

    # Images first (outside the transaction, content-addressed, so a retry reuses them), a batch at a
    # time: a few queries per batch instead of several per image, and bounded memory for long traces.
    where = imported.source_path or imported.external_id
    refs = [(f"{where} step {number}", step.screenshot) for number, step in enumerate(imported.steps, start=1)]
    if imported.final_screenshot:
        refs.append((where, imported.final_screenshot))
    stored = 0
    shots: list[Screenshot | None] = []
    for start in range(0, len(refs), SCREENSHOT_BATCH):
        batch = refs[start:start + SCREENSHOT_BATCH]
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

    steps = []
    unparsed = 0
    for number, (step, shot) in enumerate(zip(imported.steps, shots), start=1):
        if step.parse_error:
            reply = ParsedReply(step.thought or "", "", "", step.action_text or step.raw_response, [], step.parse_error)
        elif step.action_text is not None:
            reply = reply_from_parts(thought=step.thought or "", action_text=step.action_text)
        else:
            reply = reply_parse(step.raw_response)
        unparsed += bool(reply.error)
        steps.append(
            Step(
                index=number,
                screenshot=shot,
                thought=step.thought if step.thought is not None else reply.thought,
                reflection=reply.reflection,
                action_summary=reply.action_summary,
                action_text=step.action_text if step.action_text is not None else reply.action_text,
                raw_response=step.raw_response,
                parsed_actions=reply.actions,
                parse_error=reply.error,
                human_edited_response=step.human_edited_response,
                context=step.context,
            )
        )
    metadata = dict(imported.metadata)
    if imported.warnings:
        metadata["import_warnings"] = imported.warnings

    @atomic_with_retry
    def save() -> Trace | None:
        trace = Trace(
            project=project,
            external_id=imported.external_id,
            instruction=imported.instruction,
            source=imported.source,
            source_path=imported.source_path[:500],
            outcome=imported.outcome,
            metadata=metadata,
            final_screenshot=final,
            step_count=len(steps),
            import_job=job,
        )
        try:
            # Trace and steps in one transaction: a worker killed in between must not leave a trace
            # without steps that the redelivered task would then skip as already imported.
            with transaction.atomic():
                trace.save()
                for step in steps:
                    step.trace = trace
                Step.objects.bulk_create(steps)
        except IntegrityError:  # a concurrent or redelivered import got there first
            return None
        return trace

    trace = save()
    if trace is None:
        return TraceImportResult(Trace.objects.get(project=project, external_id=imported.external_id), created=False)
    return TraceImportResult(trace, True, len(steps), stored, unparsed)


def import_job_create(*, project: Project, user, upload_name: str, original_name: str = "", fmt: str = "",
                      server_path: bool = False, enqueue: bool = True) -> ImportJob:
    job = ImportJob.objects.create(
        project=project, created_by=user, upload=upload_name, upload_is_server_path=server_path,
        original_name=original_name, format=fmt,
    )
    if enqueue:
        from traces.tasks import run_import

        job_enqueue(run_import, job)
    return job


def import_upload_store(*, uploaded_file) -> str:
    """Put an uploaded archive in storage so any worker (another machine, in the full stack) can read it."""
    if uploaded_file.size > settings.IMPORT_MAX_UPLOAD_BYTES:
        raise ValueError(f"upload of {uploaded_file.size} bytes is over the {settings.IMPORT_MAX_UPLOAD_BYTES}-byte limit")
    return default_storage.save("imports/upload.zip", uploaded_file)


@contextlib.contextmanager
def _job_source(job: ImportJob):
    if job.upload_is_server_path:
        yield Path(job.upload)
        return
    with tempfile.TemporaryDirectory(prefix="trace-upload-") as tmp:
        local = Path(tmp) / (Path(job.original_name or job.upload).name or "upload.zip")
        with default_storage.open(job.upload, "rb") as src, local.open("wb") as out:
            shutil.copyfileobj(src, out, 1024 * 1024)
        yield local


def import_job_run(*, job_id: int) -> ImportJob:
    """Run (or resume after a worker died) an import; each trace is stored whole or reported."""
    job = ImportJob.objects.select_related("project").get(pk=job_id)
    if not job_start(job):
        return job
    done = 0
    try:
        with _job_source(job) as path, opened_source(path) as (root, extract_report):
            if extract_report:
                for refused in extract_report.refused:
                    job_add_error(job, refused)
            for item in iter_traces(root, job.format or None):
                if isinstance(item, TraceReadError):
                    job_add_error(job, {"file": item.where, "error": str(item)})
                    ImportJob.objects.filter(pk=job.pk).update(traces_failed=job.traces_failed + 1)
                    job.traces_failed += 1
                else:
                    try:
                        result = trace_import_one(project=job.project, imported=item, job=job)
                    except TraceReadError as exc:
                        job_add_error(job, {"file": exc.where, "error": str(exc)})
                        job.traces_failed += 1
                        ImportJob.objects.filter(pk=job.pk).update(traces_failed=job.traces_failed)
                    else:
                        if not result.created:
                            job.traces_skipped += 1
                            ImportJob.objects.filter(pk=job.pk).update(traces_skipped=job.traces_skipped)
                        job.screenshots_stored += result.screenshots_stored
                        job.unparsed_actions += result.unparsed_actions
                        ImportJob.objects.filter(pk=job.pk).update(
                            screenshots_stored=job.screenshots_stored, unparsed_actions=job.unparsed_actions
                        )
                done += 1
                job_progress(job, done=done, total=max(done, job.progress_total))
    except JobCancelled:
        _import_job_count(job)
        job_mark_cancelled(job)
        return job
    except (ArchiveError, UnknownFormat, TraceReadError) as exc:
        _import_job_count(job)
        job_fail(job, message=str(exc))
        return job
    except Exception as exc:  # reported on the job page; the worker log keeps the traceback
        log.exception("import job %s failed", job.pk)
        _import_job_count(job)
        job_fail(job, message=f"unexpected error: {exc.__class__.__name__}: {exc}")
        raise
    _import_job_count(job)
    job_finish(job, message=import_job_summary(job))
    return job


def _import_job_count(job: ImportJob) -> None:
    # Counted from the database, so a job resumed after a crash reports every trace it stored once.
    totals = job.traces.aggregate(traces=Count("id"), steps=Sum("step_count"))
    job.traces_imported = totals["traces"]
    job.steps_imported = totals["steps"] or 0
    ImportJob.objects.filter(pk=job.pk).update(traces_imported=job.traces_imported, steps_imported=job.steps_imported)


def import_job_summary(job: ImportJob) -> str:
    return (
        f"{job.traces_imported} traces, {job.steps_imported} steps, {job.screenshots_stored} screenshots stored, "
        f"{job.traces_skipped} already present, {job.traces_failed} failed, {job.unparsed_actions} unparsed actions"
        + (f", {len(job.errors)} errors" if job.errors else "")
    )
