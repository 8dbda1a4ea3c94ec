"""Writes for exports: create, run, cancel and recover export jobs; build a bundle."""

from __future__ import annotations

import logging
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from exports import bundle as archive
from exports import lineage, uitars_reward
from exports.builders import (
    SCHEMA_VERSION,
    BuildStats,
    ExportOptions,
    OptionsError,
    Skip,
    count_sources,
    iter_samples,
)
from exports.models import ExportFormat, ExportJob
from exports.storage import bundle_delete, bundle_save
from exports.writers import GRAMMAR_MODULE, REWARD_MODULE, WRITERS, VerlWriter, image_path
from studio.db import atomic_with_retry
from studio.errors import Invalid
from studio.jobs import JobFailed, job_add_error, job_cancel, job_enqueue, job_progress, job_run, job_workdir
from studio.models import JobStatus
from traces import actions as grammar
from traces.models import Project, Round

log = logging.getLogger(__name__)
MAX_JOB_ERRORS = 200


class ExportError(Invalid):
    """A problem that stops an export, said for people (an Invalid kind when a request asked for it)."""


@dataclass
class BuildResult:
    archive: Path
    sha256: str
    size: int
    counts: dict
    skipped: list[Skip]
    sources: list[list[int]]  # [annotation id, version], sorted: the bundle's lineage


def pixel_contract(project: Project) -> dict:
    """What a trainer must match so trained points land on the pixels the labels assume (manifest, README, configs):
    the images' resize rule and bounds, the coordinate space of the points, the prompt's template and window."""
    return {
        "model_family": "qwen2_5_vl" if project.coordinate_convention == grammar.SMART_RESIZE_PIXELS else "qwen2_vl",
        "coordinate_convention": project.coordinate_convention,
        "min_pixels": grammar.MIN_PIXELS,
        "max_pixels": project.max_pixels,
        "resize": {
            "rule": "smart_resize",
            "factor": grammar.IMAGE_FACTOR,
            "rounding": "round half to even (Python's round), as Qwen2-VL and UI-TARS do",
        },
        "template": "qwen2_vl",
        "history_window": project.history_window,
        # Each sample's ``target_box``: the element box of its trained target, in the same space as the points.
        "target_box": f"[x1, y1, x2, y2] in {project.coordinate_convention}, or null when none was drawn",
    }


# What a `prm` record's labels mean (manifest and README).
PRM_LABELS = {
    "per": "trace: steps 1..τ of an accepted `error` answer, every step of an accepted `no_error` answer",
    "true": "the step is correct (before τ, or any step of a `no_error` trace)",
    "false": "the step is the first error τ (its recorded action)",
    "images": "images[k] is o_k, the screenshot completions[k] acted on",
}


def reward_contract(writer) -> dict | None:
    """The reward a `verl` bundle ships (manifest and README): its files, entry point, scoring and point radius."""
    if not isinstance(writer, VerlWriter):
        return None
    return {
        "module": REWARD_MODULE,
        "function": "compute_score",
        "grammar": GRAMMAR_MODULE,
        "grammar_source": "traces/actions.py, copied byte for byte",
        "radius_px": uitars_reward.DEFAULT_RADIUS_PX,
        "scoring": "0 if the reply does not parse; per action in order: 0 for another type, else "
        "(1 + matched arguments) / (1 + scored arguments); summed and divided by the larger action count; the target "
        "point inside ground_truth.box when there is one, other points within radius_px",
        "rows_with_box": writer.rows_with_box,
        "max_image_tokens": writer.max_image_tokens,
        "recorded_step_scores_1": writer.indistinct,
    }


def _prompt_settings(project: Project) -> dict:
    # What a model trained on this bundle must be scored with (pre-scoring uses the same builder).
    return {
        "system_prompt": project.system_prompt,
        "prompt_template": project.prompt_template,
        "prompt_language": project.prompt_language,
        "history_window": project.history_window,
        "box_tokens": project.box_tokens,
        "coordinate_convention": project.coordinate_convention,
        "max_pixels": project.max_pixels,
        "platform": project.platform,
    }


def rounds_of_sources(by_round: Counter) -> list[dict]:
    """The rounds (and so the checkpoints) whose traces the bundle's annotations come from, oldest first; traces in
    no round are counted under a round named null."""
    rounds = Round.objects.filter(pk__in=[pk for pk in by_round if pk is not None]).order_by("ran_at", "id")
    listed = [
        {
            "id": r.pk,
            "name": r.name,
            "checkpoint": r.checkpoint,
            "weights_hash": r.weights_hash,
            "ran_at": r.ran_at.isoformat(),
            "annotations": by_round[r.pk],
        }
        for r in rounds
    ]
    if by_round.get(None):
        listed.append({"id": None, "name": None, "annotations": by_round[None]})
    return listed


def _stored_file(name: str):
    """An opener of one stored file, for the archive writer to call when it packs it."""
    return lambda: default_storage.open(name, "rb")


def export_build(
    *,
    project: Project,
    fmt: str,
    options: ExportOptions,
    workdir: Path,
    progress: Callable[[int, int | None], None] | None = None,
    base: ExportJob | None = None,
) -> BuildResult:
    """Build the bundle of ``project`` in ``workdir`` (emptied first); returns the finished archive.

    ``base`` makes it incremental: annotations ``base`` held at the same version are left out.
    Streaming: samples go straight to data files; images are copied from storage into the
    archive in chunks. ``progress(done, total)`` may raise JobCancelled."""
    if fmt not in WRITERS:
        raise ExportError(f"unknown format {fmt!r}; use one of {', '.join(WRITERS)}")
    shutil.rmtree(workdir, ignore_errors=True)
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True)
    progress = progress or (lambda done, total: None)
    throttle = settings.EXPORT_THROTTLE_S

    images: dict[str, tuple[str, int, str]] = {}  # sha256 -> (storage name, size, bundle path)

    def image_bytes(shot) -> bytes:
        with default_storage.open(shot.image.name, "rb") as handle:
            return handle.read()

    writer = WRITERS[fmt](data_dir, image_bytes=image_bytes, pixels=pixel_contract(project))
    sources = count_sources(project)
    progress(0, sources)
    stats = BuildStats()
    by_kind: dict[str, int] = {}
    on_policy: dict[tuple[str, str], int] = {}  # (model name, weights hash) -> dpo_on_policy pairs
    by_split: dict[str, int] = {}
    skipped: list[Skip] = []

    def on_batch(done: int) -> None:
        if throttle:
            time.sleep(throttle)
        progress(done, None)

    already_held = lineage.sources_pairs(base.sources or []) if base is not None else None
    for item in iter_samples(
        project, options, stats, on_annotation=on_batch, already_held=already_held, sample_set=writer.sample_set
    ):
        if isinstance(item, Skip):
            skipped.append(item)
            continue
        writer.add(item)
        by_kind[item.kind] = by_kind.get(item.kind, 0) + 1
        if item.on_policy:
            checkpoint = (item.on_policy["model_name"], item.on_policy["weights_hash"])
            on_policy[checkpoint] = on_policy.get(checkpoint, 0) + 1
        by_split[item.split] = by_split.get(item.split, 0) + 1
        for shot in item.prompt.images:
            if shot.sha256 not in images:
                images[shot.sha256] = (shot.image.name, shot.byte_size, image_path(shot))
    data_files = writer.close()

    counts = {
        "by_kind": by_kind,
        "by_split": by_split,
        "by_file": {f"{stem}{writer.suffix}": n for stem, n in writer.counts.items()},
        "annotations": len(stats.annotations),
        "already_exported": stats.already_exported,
        "images": len(images) if writer.uses_image_folder else 0,
        "skipped": len(skipped),
        "skipped_by_reason": dict(sorted(Counter(s.code for s in skipped).items())),
    }
    lineage_block = {
        # What this bundle was built after: an incremental bundle holds only what changed since its base.
        "since_export": None
        if base is None
        else {"id": base.pk, "bundle_sha256": base.bundle_sha256, "annotations": len(base.sources or [])},
        "already_exported": stats.already_exported,
        "rounds": rounds_of_sources(stats.by_round),
    }
    reward = reward_contract(writer)
    readme = archive.readme_text(
        project_name=project.name,
        fmt=fmt,
        data_files=data_files,
        counts=counts,
        options=options.to_json(),
        pixels=pixel_contract(project),
        lineage=lineage_block,
        reward=reward,
    )
    (data_dir / "README.md").write_text(readme, encoding="utf-8")
    files = {
        name: {"sha256": archive.file_sha256(data_dir / name), "size": (data_dir / name).stat().st_size}
        for name in [*data_files, "README.md"]
    }
    entries = [archive.local_entry(data_dir / name, name) for name in files]
    if writer.uses_image_folder:
        for sha, (storage_name, size, path) in images.items():
            files[path] = {"sha256": sha, "size": size}
            entries.append(archive.Entry(path, size, _stored_file(storage_name), compress=False))
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "app_version": settings.APP_VERSION,
        "format": fmt,
        "project": {"id": project.pk, "name": project.name},
        "prompt": _prompt_settings(project),
        "pixels": pixel_contract(project),
        "filters": {
            "status": "accepted",
            "one_per_trace": "adjudicated first, else latest reviewed",
            "exclude_verdicts": ["unusable"],
            **options.to_json(),
        },
        "counts": counts,
        **({"reward": reward} if reward else {}),
        # Pairs whose rejected side a checkpoint sampled (kind dpo_on_policy): on-policy for that checkpoint only.
        **(
            {
                "on_policy": {
                    "kind": "dpo_on_policy",
                    "pairs": sum(on_policy.values()),
                    "checkpoints": [
                        {"model_name": name, "weights_hash": weights, "pairs": n}
                        for (name, weights), n in sorted(on_policy.items())
                    ],
                }
            }
            if on_policy
            else {}
        ),
        **({"labels": PRM_LABELS} if fmt == ExportFormat.PRM else {}),
        "sources": [{"annotation_id": pk, "version": version} for pk, version in stats.annotations],
        "lineage": lineage_block,
        "skipped": [
            {
                "annotation_id": s.annotation_id,
                "trace_id": s.trace_id,
                "kind": s.kind,
                "code": s.code,
                "reason": s.reason,
            }
            for s in skipped
        ],
        "files": files,
    }
    (data_dir / "manifest.json").write_bytes(archive.manifest_json(manifest))
    entries.append(archive.local_entry(data_dir / "manifest.json", "manifest.json"))

    total = sources + len(entries)
    progress(sources, total)
    target = workdir / "bundle.zip.part"
    archive.write_archive(
        target, entries, on_entry=lambda n: progress(sources + n, None) if n % 200 == 0 or n == len(entries) else None
    )
    held = sorted([pk, version] for pk, version in stats.annotations)
    return BuildResult(target, archive.file_sha256(target), target.stat().st_size, counts, skipped, held)


# --- jobs ------------------------------------------------------------------------------------------


@atomic_with_retry
def export_job_create(
    *, project: Project, user, fmt: str, options: dict | None = None, enqueue: bool = True
) -> ExportJob:
    """Validate and queue an export; raises ExportError / OptionsError naming a bad field."""
    if fmt not in ExportFormat.values:
        raise ExportError(f"unknown format {fmt!r}; use one of {', '.join(ExportFormat.values)}")
    parsed = ExportOptions.parse(options)
    if parsed.since_export is not None:
        export_base(project=project, export_id=parsed.since_export)
    job = ExportJob.objects.create(
        project=project, created_by=user, format=fmt, options=parsed.to_json(), split_seed=parsed.split_seed
    )
    if enqueue:
        from exports.tasks import run_export

        job_enqueue(run_export, job)
    return job


def export_base(*, project: Project, export_id: int) -> ExportJob:
    """The export an incremental export builds on; raises OptionsError naming why it cannot be one."""
    base = ExportJob.objects.filter(pk=export_id, project=project).first()
    if base is None:
        raise OptionsError(f"since_export: project {project.name!r} has no export {export_id}")
    if base.status != JobStatus.SUCCEEDED:
        raise OptionsError(f"since_export: export {export_id} is {base.status}; only a finished export can be a base")
    if base.sources is None:
        raise OptionsError(
            f"since_export: export {export_id} was made before bundle lineage was kept, so which annotations it "
            "holds is unknown; export the whole project once and build on that"
        )
    return base


def export_job_run(*, job_id: int, attempt: int | None = None) -> ExportJob:
    """Run an export job (again from the start when a run is taken over: the build is deterministic)."""
    job = ExportJob.objects.select_related("project").get(pk=job_id)
    return job_run(job, _export_work, attempt=attempt)


def _export_work(job: ExportJob) -> str:
    workdir = job_workdir(job) / "bundle"  # job_run removes the attempt's folder when it ends
    job.errors = []
    ExportJob.objects.filter(pk=job.pk).update(errors=[])

    def progress(done: int, total: int | None) -> None:
        job_progress(job, done=done, total=total)

    try:
        options = ExportOptions.parse(job.options)
        base = (
            None if options.since_export is None else export_base(project=job.project, export_id=options.since_export)
        )
        result = export_build(
            project=job.project, fmt=job.format, options=options, workdir=workdir, progress=progress, base=base
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
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.get("by_kind", {}).items())) or "no samples"
    reasons = ", ".join(f"{n} {code}" for code, n in (counts.get("skipped_by_reason") or {}).items())
    held = counts.get("already_exported") or 0
    return (
        f"{kinds} from {counts.get('annotations', 0)} accepted annotations; {counts.get('skipped', 0)} skipped"
        + (f" ({reasons})" if reasons else "")
        + (f"; {held} left out, already in the base export" if held else "")
    )


def export_job_cancel(*, job: ExportJob) -> tuple[ExportJob, bool, str]:
    """Cancel an export in any state; returns the job, whether anything changed, and what happened."""
    changed, said = job_cancel(job)
    job.refresh_from_db()
    return job, changed, said


def export_job_delete_bundle(*, job: ExportJob) -> None:
    bundle_delete(job.bundle_name)
    ExportJob.objects.filter(pk=job.pk).update(bundle_name="")


def export_to_path(*, project: Project, user, fmt: str, options: dict | None, out: Path) -> ExportJob:
    """Run an export in this process (the management command) and copy the bundle to ``out``."""
    job = export_job_create(project=project, user=user, fmt=fmt, options=options, enqueue=False)
    job = export_job_run(job_id=job.pk)
    if job.status != JobStatus.SUCCEEDED:
        raise ExportError(job.message or f"export {job.pk} ended {job.status}")
    with default_storage.open(job.bundle_name, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1024 * 1024)
    return job
