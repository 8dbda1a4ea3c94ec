"""Writes for projects, screenshots, traces and imports."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import tempfile
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
    digest = hashlib.sha256(data).hexdigest()
    existing = Screenshot.objects.filter(sha256=digest).first()
    if existing:
        return existing, False
    info = inspect_image(data, name)
    shot = Screenshot(sha256=digest, format=info.format, width=info.width, height=info.height, byte_size=len(data))
    storage_name = screenshot_path(shot, name)
    # Content-addressed: a file already there (an earlier, interrupted import) holds these very bytes.
    if not default_storage.exists(storage_name):
        storage_name = default_storage.save(storage_name, ContentFile(data))
    shot.image.name = storage_name
    try:
        with transaction.atomic():
            shot.save()
    except IntegrityError:  # another import stored the same image a moment ago
        return Screenshot.objects.get(sha256=digest), False
    return shot, True


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

    # Images first (outside the transaction, content-addressed, so a retry reuses them).
    stored = 0
    shots: list[Screenshot | None] = []
    for number, step in enumerate(imported.steps, start=1):
        if step.screenshot is None:
            shots.append(None)
            continue
        try:
            shot, created = screenshot_store(data=step.screenshot.read(), name=step.screenshot.name)
        except (ImageProblem, OSError) as exc:
            raise TraceReadError(f"{imported.source_path or imported.external_id} step {number}", str(exc)) from None
        stored += created
        shots.append(shot)
    final = None
    if imported.final_screenshot:
        try:
            final, created = screenshot_store(data=imported.final_screenshot.read(), name=imported.final_screenshot.name)
        except (ImageProblem, OSError) as exc:
            raise TraceReadError(imported.source_path or imported.external_id, f"final screenshot: {exc}") from None
        stored += created

    steps = []
    unparsed = 0
    for number, (step, shot) in enumerate(zip(imported.steps, shots), start=1):
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
            with transaction.atomic():
                trace.save()
        except IntegrityError:  # a concurrent or redelivered import got there first
            return None
        for step in steps:
            step.trace = trace
        Step.objects.bulk_create(steps)
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
