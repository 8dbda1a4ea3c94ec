"""An export job: made (and queued), planned into shards, each shard's part built and stored, the bundle assembled and
saved, summarised, cancelled; and the in-process run of the management command."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils.translation import gettext, ngettext

from exports import lineage
from exports.builders import (
    BuildStats,
    ExportOptions,
    OptionsError,
    SplitPlan,
    export_plan_annotations,
    split_plan,
    traces_with_samples,
)
from exports.formats import export_format
from exports.models import ExportJob
from exports.services.assembly import Filters, _stored_file, export_assemble
from exports.services.parts import (
    REDUCED_FOLDER,
    ExportPart,
    deflated_path,
    earlier_objects_frozen,
    export_part_build,
)
from exports.storage import bundle_delete, bundle_part_save, bundle_save
from insights.selectors import slice_annotation_ids
from studio.db import atomic_with_retry
from studio.engine import job_enqueue, job_run_here
from studio.errors import Invalid
from studio.jobs import JobFailed, job_add_error, job_cancel, job_progress, job_workdir
from studio.models import JobShard, JobStatus
from studio.shards import ShardProgress, shards_results
from traces.models import Project

MAX_JOB_ERRORS = 200


class ExportError(Invalid):
    """A problem that stops an export, said for people (an Invalid kind when a request asked for it)."""


def export_plan(annotation_ids: list[int]) -> list[tuple[list[int], int]]:
    """The export's shards: its annotations in order, ``EXPORT_SHARD_ANNOTATIONS`` a shard (the last one shorter;
    one empty shard when there are none, so an empty bundle is assembled the same way). Depends on the inputs and
    that setting alone, never on the workers."""
    size = max(1, settings.EXPORT_SHARD_ANNOTATIONS)
    pieces = [
        (annotation_ids[i : i + size], len(annotation_ids[i : i + size])) for i in range(0, len(annotation_ids), size)
    ]
    return pieces or [([], 0)]


@atomic_with_retry
def export_job_create(
    *, project: Project, user: User | None, fmt: str, options: dict | None = None, enqueue: bool = True
) -> ExportJob:
    """Validate and queue an export; raises ExportError / OptionsError naming a bad field."""
    export_format(fmt)  # refuses a format that is not declared (exports.formats)
    parsed = ExportOptions.parse(options)
    if parsed.since_export is not None:
        export_base(project=project, export_id=parsed.since_export)
    if parsed.slice is not None:
        slice_annotation_ids(project=project, slice_id=parsed.slice)  # refuses a slice of another project
    job = ExportJob.objects.create(
        project=project, created_by=user, format=fmt, options=parsed.to_json(), split_seed=parsed.split_seed
    )
    if enqueue:
        job_enqueue(job)
    return job


def export_base(*, project: Project, export_id: int) -> ExportJob:
    """The export an incremental export builds on; raises OptionsError naming why it cannot be one."""
    base = ExportJob.objects.filter(pk=export_id, project=project).first()
    if base is None:
        raise OptionsError(
            gettext("since_export: project %(project)s has no export %(id)s")
            % {"project": repr(project.name), "id": export_id}
        )
    if base.status != JobStatus.SUCCEEDED:
        raise OptionsError(
            gettext("since_export: export %(id)s is %(status)s; only a finished export can be a base")
            % {"id": export_id, "status": base.status}
        )
    if base.sources is None:
        raise OptionsError(
            gettext(
                "since_export: export %(id)s was made before bundle lineage was kept, so which annotations it "
                "holds is unknown; export the whole project once and build on that"
            )
            % {"id": export_id}
        )
    return base


def _export_base_of(job: ExportJob, options: ExportOptions) -> ExportJob | None:
    if options.since_export is None:
        return None
    return export_base(project=job.project, export_id=options.since_export)


def export_plan_make(job: ExportJob) -> list[tuple[list[int], int]]:
    """The export's shards (the export job kind's plan, exports/jobs.py). The plan's count of annotations an
    incremental export leaves out waits in ``counts`` for the assembly; a bad base or slice fails the job, said why."""
    try:
        stats = BuildStats()
        options = ExportOptions.parse(job.options)
        base = _export_base_of(job, options)
        held = lineage.sources_pairs(base.sources or []) if base is not None else None
        annotation_ids = export_plan_annotations(
            job.project,
            held,
            stats,
            slice_id=options.slice,
            min_gold_accuracy=options.min_gold_accuracy,
            verified_only=options.verified_only,
        )
        pieces = export_plan(annotation_ids)
        split = export_split_plan(job, options, annotation_ids, stats.trace_ids)
    except (ExportError, OptionsError) as exc:
        raise JobFailed(str(exc)) from exc
    if split.validation_trace is not None:  # the shards read the split from the options
        job.options = {**job.options, "validation_trace": split.validation_trace}
    elif split.train_only:
        job.options = {**job.options, "train_only": True}
    counts: dict = {"already_exported": stats.already_exported}
    if stats.quality_filter is not None:
        counts["quality_filter"] = stats.quality_filter
    if stats.replay_filter is not None:
        counts["replay_filter"] = stats.replay_filter
    ExportJob.objects.filter(pk=job.pk).update(counts=counts, options=job.options)
    return pieces


def export_split_plan(
    job: ExportJob, options: ExportOptions, annotation_ids: list[int], trace_ids: list[int]
) -> SplitPlan:
    """The export's split, drawn among its traces that give samples of its format (``builders.split_plan``): a trace
    the format takes nothing of never fills the validation split, nor leaves it empty."""
    annotation_of = dict(zip(trace_ids, annotation_ids, strict=True))
    sample_set = export_format(job.format).writer.sample_set

    def gives_samples(ids: list[int]) -> set[int]:
        return traces_with_samples(job.project, [annotation_of[pk] for pk in ids], options, sample_set=sample_set)

    return split_plan(trace_ids, options, gives_samples)


def export_job_run(*, job_id: int) -> ExportJob:
    """Run an export in this process (the management command, tests): the same plan, shard runs and assembly a
    worker makes, the shards one after the other."""
    return job_run_here(ExportJob.objects.get(pk=job_id))


def export_shard_work(job: ExportJob, shard: JobShard, progress: ShardProgress) -> None:
    """Build the shard's data files from its start (a re-run replaces nothing: each run stores its files under its
    own attempt), then store them and record the shard's result in one guarded transaction: nothing is stored
    after a cancel was acknowledged, and the bundle takes exactly the files of the run that recorded its result."""
    scratch = job_workdir(job) / f"shard-{shard.index:05d}-{shard.attempts}"
    progress.start(done=0)
    reported = 0

    def on_batch(done: int) -> None:
        nonlocal reported
        progress.add(done=done - reported)
        reported = done

    try:
        part = export_part_build(
            project=job.project,
            fmt=job.format,
            options=ExportOptions.parse(job.options),
            annotation_ids=shard.items,
            workdir=scratch,
            on_batch=on_batch,
        )
        with transaction.atomic():
            progress.guard()
            for stem, file in part.files.items():
                file.stored = bundle_part_save(job, shard, deflated_path(scratch / f"{stem}{part.suffix}"))
            part.reduced_images = {
                key: image._replace(stored=bundle_part_save(job, shard, scratch / REDUCED_FOLDER / image.stored))
                for key, image in part.reduced_images.items()
            }
            JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts).update(result=part.to_json())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def export_assemble_work(job: ExportJob) -> str:
    """The export's last step, after its shards (the job kind's assembly): the bundle from the shards' files."""
    workdir = job_workdir(job) / "assembly"  # job_run removes the attempt's folder when it ends
    job.errors = []
    ExportJob.objects.filter(pk=job.pk).update(errors=[])

    def progress(done: int, total: int | None) -> None:
        job_progress(job, done=done, total=total)

    try:
        options = ExportOptions.parse(job.options)

        def parts() -> Iterator[ExportPart]:
            for part in shards_results(job):
                if part is None:
                    raise ExportError(
                        gettext("a shard of this export completed without recording its files; export again")
                    )
                yield ExportPart.from_json(part)

        with earlier_objects_frozen():
            result = export_assemble(
                project=job.project,
                fmt=job.format,
                options=options,
                parts=parts(),
                stored=lambda file: _stored_file(file.stored),
                workdir=workdir,
                filters=Filters(
                    already_exported=(job.counts or {}).get("already_exported", 0),
                    quality_filter=(job.counts or {}).get("quality_filter"),
                    replay_filter=(job.counts or {}).get("replay_filter"),
                ),
                base=_export_base_of(job, options),
                progress=progress,
            )
        for skip in result.skipped[:MAX_JOB_ERRORS]:
            job_add_error(
                job, {"error": f"annotation {skip.annotation_id} (trace {skip.trace_id}), {skip.kind}: {skip.reason}"}
            )
        name = bundle_save(job, result.archive)
        ExportJob.objects.filter(pk=job.pk).update(
            bundle_name=name,
            bundle_sha256=result.sha256,
            bundle_size=result.size,
            counts=result.counts,
            sources=result.sources,
        )
        job.bundle_name, job.bundle_sha256, job.bundle_size, job.counts, job.sources = (
            name,
            result.sha256,
            result.size,
            result.counts,
            result.sources,
        )
        return export_summary(result.counts)
    except (ExportError, OptionsError) as exc:
        raise JobFailed(str(exc)) from exc


def export_summary(counts: dict) -> str:
    """What an export made and left out, in the language of whoever reads it (the job runs in its starter's)."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.get("by_kind", {}).items())) or gettext("no samples")
    reasons = ", ".join(f"{n} {code}" for code, n in (counts.get("skipped_by_reason") or {}).items())
    accepted = counts.get("annotations", 0)
    skipped = gettext("%(count)s skipped") % {"count": counts.get("skipped", 0)}
    parts = [
        ngettext(
            "%(kinds)s from %(count)s accepted annotation", "%(kinds)s from %(count)s accepted annotations", accepted
        )
        % {"kinds": kinds, "count": accepted},
        gettext("%(skipped)s (%(reasons)s)") % {"skipped": skipped, "reasons": reasons} if reasons else skipped,
    ]
    return gettext("; ").join(parts + _export_left_out(counts, accepted))


def _export_left_out(counts: dict, accepted: int) -> list[str]:
    held = counts.get("already_exported") or 0
    quality = counts.get("quality_filter") or {}
    parts = []
    if held:
        parts.append(gettext("%(count)s left out, already in the base export") % {"count": held})
    if quality.get("left_out"):
        parts.append(
            gettext("%(count)s left out by the quality filter (%(reason)s)")
            % {"count": quality["left_out"], "reason": quality["reason"]}
        )
    # An empty bundle succeeds (an engineer's pipeline may export on a schedule), but says why it is empty: an
    # engineer who downloads a few kilobytes of nothing should not have to guess.
    if not accepted:
        parts.append(
            gettext("the bundle is empty: every accepted annotation is already in the base export")
            if held
            else gettext(
                "the bundle is empty: no annotation of this project is accepted yet (leads accept them on the review "
                "queue)"
            )
        )
    return parts


def export_job_cancel(*, job: ExportJob) -> tuple[ExportJob, bool, str]:
    """Cancel an export in any state; returns the job, whether anything changed, and what happened."""
    changed, said = job_cancel(job)
    job.refresh_from_db()
    return job, changed, said


def export_job_delete_bundle(*, job: ExportJob) -> None:
    bundle_delete(job.bundle_name)
    ExportJob.objects.filter(pk=job.pk).update(bundle_name="")


def export_to_path(*, project: Project, user: User | None, fmt: str, options: dict | None, out: Path) -> ExportJob:
    """Run an export in this process (the management command) and copy the bundle to ``out``."""
    job = export_job_create(project=project, user=user, fmt=fmt, options=options, enqueue=False)
    job = export_job_run(job_id=job.pk)
    if job.status != JobStatus.SUCCEEDED:
        raise ExportError(
            job.message or gettext("export %(id)s ended %(status)s") % {"id": job.pk, "status": job.status}
        )
    with default_storage.open(job.bundle_name, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1024 * 1024)
    return job
