"""Sharded imports: the import job kind's plan, shard work and summary (traces/jobs.py; run by studio/engine.py).

The engine claims the job and has it planned once (import_plan_make): it unpacks the upload, finds the trace units
its importer reads (a trace folder, a trace file, a JSONL of traces) and cuts them, in order, into shards of
IMPORT_SHARD_TRACES. For an archive it stores each shard's part (the files its units may open: unit_files) in
storage, so a shard on any machine reads its traces from there, never from the planning worker's disk; a server
path (the import command) or a single uploaded file is read as it is. Each trace is written behind the shard's
write guard; a re-run shard finds its earlier traces stored (one trace per (project, external_id)) and reports
them as this job's. The run that completes the last shard sums the shards' results and ends the job."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import shutil
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import DataError, IntegrityError, transaction
from django.db.models import Count, Sum

from studio.engine import job_run_here
from studio.jobs import JobCancelled, JobFailed, job_workdir
from studio.models import JobShard
from studio.shards import ShardFatal, ShardProgress, shards_of
from studio.storage import stored_file_fetch, stored_file_save_moved, stored_folder_delete
from studio.words import in_words
from traces.importers import (
    IMPORTERS,
    ArchiveError,
    ImageRef,
    TraceReadError,
    UnknownFormat,
    archive_folder_name,
    importer_for,
    matching_formats,
    opened_source,
    unit_files,
)
from traces.importers.archive import COPIED_AS_THEY_ARE, ExtractReport, member_copy, safe_extract
from traces.models import ImportJob, Step
from traces.selectors import awaits_instruction
from traces.services.import_reports import (
    already_present_report,
    distinct_id_report,
    import_job_summary,
    instruction_missing_report,
    off_screen_report,
    trace_off_screen_steps,
)
from traces.services.trace_import import trace_import_one

if TYPE_CHECKING:
    from traces.importers import TraceOrError


@contextlib.contextmanager
def _job_source(job: ImportJob, scratch: Path) -> Iterator[Path]:
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


@dataclass
class _ShardSource:
    """What a shard reads its units from: ``root``, the folder (or file); ``refused``, what unpacking its part
    refused that the plan did not report; and, for a part, the part itself with the screenshots left in it
    (``ExtractReport.left_in_archive``), which the shard's traces read from there."""

    root: Path
    refused: list[dict]
    part: zipfile.ZipFile | None = None
    left_in_part: dict[Path, zipfile.ZipInfo] = field(default_factory=dict)


@contextlib.contextmanager
def _import_shard_source(job: ImportJob, shard: JobShard, scratch: Path) -> Iterator[_ShardSource]:
    """The shard's source: its part of the upload, fetched from storage and unpacked, each screenshot checked (the
    plan copied them into it unread: a damaged one is found here) but left in the part, where its trace reads it;
    or, with no parts (a server path, one uploaded file), the source itself."""
    plan = job.plan
    if not plan["parts"]:
        with _job_source(job, scratch) as local, opened_source(local, scratch=scratch) as (root, _):
            yield _ShardSource(root, [])
        return
    part = scratch / "part.zip"
    stored_file_fetch(plan["parts"][shard.index], part)
    # Written out, a screenshot is a file made and written to be read once, and not even that for those no step
    # names (a plan's or an evaluation's screen): the trace reads it from the part instead.
    report = safe_extract(part, scratch / "unpacked", left_in_archive=_plan_placeholder)
    left = {path: report.members[path] for path in report.left_in_archive}
    with zipfile.ZipFile(part) as archive:
        yield _ShardSource(
            scratch / "unpacked" / plan["root"], _import_part_refusals(plan, report.refused), archive, left
        )


def _screenshots_read_from_part(item: TraceOrError, source: _ShardSource) -> TraceOrError:
    """``item`` with each screenshot its importer found among the files left in the part read from the part."""
    if source.part is None or isinstance(item, TraceReadError):
        return item
    for step in item.steps:
        step.screenshot = _image_from_part(step.screenshot, source)
    item.final_screenshot = _image_from_part(item.final_screenshot, source)
    return item


def _image_from_part(ref: ImageRef | None, source: _ShardSource) -> ImageRef | None:
    if ref is None or ref.path is None or source.part is None:
        return ref
    # Unpacking keyed its files by their resolved paths, which most importers name them by (safe_child's).
    entry = source.left_in_part.get(ref.path) or source.left_in_part.get(ref.path.resolve())
    if entry is None:
        return ref
    return dataclasses.replace(ref, read=functools.partial(source.part.read, entry))


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
        with _import_shard_source(job, shard, scratch) as source:
            tally.errors.extend(source.refused)
            importer = IMPORTERS[job.plan["format"]]
            for name in shard.items:
                for item in importer.read_units(source.root, [source.root / name]):
                    item = _screenshots_read_from_part(item, source)
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


def import_summarize(job: ImportJob, shards: list[JobShard]) -> str:
    """The job's end, when its last shard completed (the job row is locked): the summary an unsharded run gave."""
    _import_tallies_record(job, shards)
    return import_job_summary(job)


def _import_one_into_job(
    job: ImportJob, item: TraceOrError, tally: ImportTally, *, shard: JobShard, progress: ShardProgress
) -> None:
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
