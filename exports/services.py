"""Writes for exports: create, run, cancel and recover export jobs; build a bundle.

An export is a sharded job (its kind: exports/jobs.py, run by studio/engine.py): its plan cuts its annotations, in
trace order, into shards of ``EXPORT_SHARD_ANNOTATIONS``; any worker builds a shard's data files (``export_part_build``) and stores them with
the shard's result; when the last shard is done the export's own task runs again and assembles the one bundle
(``export_assemble``), deterministically, then ends the job once (studio.jobs.job_run)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import logging
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction

from exports import bundle as archive
from exports import lineage, tokens
from exports.builders import (
    SCHEMA_VERSION,
    VALIDATION_MIN_TRACES,
    BuildStats,
    ExportOptions,
    OptionsError,
    Skip,
    export_plan_annotations,
    iter_samples,
    validation_empty_reason,
    validation_floor,
)
from exports.formats import export_format
from exports.models import ExportJob
from exports.storage import bundle_delete, bundle_part_save, bundle_save
from exports.writers import IMAGE_TABLE, data_file_name, image_path, write_image_table
from insights.selectors import slice_annotation_ids
from studio.db import atomic_with_retry
from studio.engine import job_enqueue, job_run_here
from studio.errors import Invalid
from studio.jobs import JobFailed, job_add_error, job_cancel, job_progress, job_workdir
from studio.models import JobShard, JobStatus
from studio.shards import ShardProgress, shards_results
from studio.words import in_words
from traces import grammar, prompting
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
    sources: list[tuple[int, int]]  # (annotation id, version), sorted: the bundle's lineage


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
        # The image budget (traces.prompting.ReducedImage): a prompt's last `full_images` screenshots within the
        # bounds above, older ones stored in the bundle already resized to their smart_resize size at
        # `older_max_pixels` (the processor leaves them so), their history actions' points in that size.
        "history_budget": {
            "full_images": project.history_full_images,
            "older_max_pixels": project.history_max_pixels if project.history_full_images else None,
        },
        # Each sample's ``target_box``: the element box of its trained target, in the same space as the points.
        "target_box": f"[x1, y1, x2, y2] in {project.coordinate_convention}, or null when none was drawn",
    }


def _prompt_settings(project: Project) -> dict:
    # What a model trained on this bundle must be scored with (pre-scoring uses the same builder).
    return {
        "system_prompt": project.system_prompt,
        "prompt_template": project.prompt_template,
        "prompt_language": project.prompt_language,
        "history_window": project.history_window,
        "history_full_images": project.history_full_images,
        "history_max_pixels": project.history_max_pixels,
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


REDUCED_FOLDER = "reduced"  # a shard's folder of the screenshots the image budget sends smaller


def reduced_png(view: prompting.ReducedImage, data: bytes) -> bytes:
    """The screenshot ``data`` at the size the image budget sends it (``view``), as PNG: deterministic bytes (no
    timestamps), so the same export gives the same bundle."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        out = io.BytesIO()
        view.resize(image).save(out, "PNG", optimize=False)
    return out.getvalue()


def _stored_bytes(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        return handle.read()


def deflated_path(path: Path) -> Path:
    """Where ``export_part_build`` writes a data file's deflated stream: what a shard stores, and the bundle takes."""
    return path.with_name(f"{path.name}.deflate")


def export_part_build(
    *,
    project: Project,
    fmt: str,
    options: ExportOptions,
    annotation_ids: list[int],
    workdir: Path,
    on_batch: Callable[[int], None] | None = None,
) -> dict:
    """Write the data files of one shard of an export (``annotation_ids``, in trace order) into ``workdir`` (emptied
    first), each beside its deflated stream (``deflated_path``); returns what the bundle's assembly needs of it
    (JSON): per file (its stem) the samples, sha256 and size, the deflated stream's CRC-32 and size, and the shard's
    counts, skips, sources, images and the format's own figures (``Writer.part_figures``). The same annotations give
    the same bytes.

    Streaming: samples go straight to the files. ``on_batch(annotations done)`` may raise JobCancelled."""
    writer_class = export_format(fmt).writer
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    throttle = settings.EXPORT_THROTTLE_S
    images: dict[str, list] = {}  # sha256 -> [storage name, size, bundle path]
    # Older history screenshots under the project's image budget, made here at the size they are sent at:
    # key -> [file name in workdir, size, bundle path, sha256]; the shard stores them beside its data files.
    reduced: dict[str, list] = {}

    def stored_bytes(shot) -> bytes:
        with default_storage.open(shot.image.name, "rb") as handle:
            return handle.read()

    def image_bytes(shot) -> bytes:
        if isinstance(shot, prompting.ReducedImage):
            return reduced_bytes(shot)
        return stored_bytes(shot)

    def reduced_bytes(view: prompting.ReducedImage) -> bytes:
        if view.sha256 in reduced:
            return (workdir / REDUCED_FOLDER / reduced[view.sha256][0]).read_bytes()
        data = reduced_png(view, stored_bytes(view.screenshot))
        name = f"{view.sha256}.png"
        (workdir / REDUCED_FOLDER).mkdir(exist_ok=True)
        (workdir / REDUCED_FOLDER / name).write_bytes(data)
        reduced[view.sha256] = [name, len(data), image_path(view), hashlib.sha256(data).hexdigest()]
        return data

    pixels = pixel_contract(project)
    writer = writer_class(workdir, image_bytes=image_bytes, pixels=pixels)
    counter = tokens.token_counter(pixels, settings.EXPORT_TOKENIZER_DIR)
    longest: dict | None = None  # the shard's longest sample in tokens, with where it lies
    stats = BuildStats()
    by_kind: dict[str, int] = {}
    on_policy: dict[tuple[str, str], int] = {}  # (model name, weights hash) -> dpo_on_policy pairs
    by_split: dict[str, int] = {}
    skipped: list[Skip] = []

    def batch_done(done: int) -> None:
        if throttle:
            time.sleep(throttle)
        if on_batch:
            on_batch(done)

    for item in iter_samples(
        project, options, stats, on_annotation=batch_done, sample_set=writer.sample_set, annotation_ids=annotation_ids
    ):
        if isinstance(item, Skip):
            skipped.append(item)
            continue
        writer.add(item)
        count = tokens.counter_record(counter, item, stem=writer.stem(item), row=writer.counts[writer.stem(item)] - 1)
        longest = tokens.longer(longest, count)
        by_kind[item.kind] = by_kind.get(item.kind, 0) + 1
        if item.on_policy:
            checkpoint = (item.on_policy["model_name"], item.on_policy["weights_hash"])
            on_policy[checkpoint] = on_policy.get(checkpoint, 0) + 1
        by_split[item.split] = by_split.get(item.split, 0) + 1
        for shot in item.prompt.images:
            if isinstance(shot, prompting.ReducedImage):
                if writer.uses_image_folder or writer.uses_image_table:
                    reduced_bytes(shot)
            elif shot.sha256 not in images:
                images[shot.sha256] = [shot.image.name, shot.byte_size, image_path(shot)]
    stems = writer.close()
    files = {}
    for stem in stems:
        path = writer.path(stem)
        sha256, deflated = archive.file_deflate(path, deflated_path(path))
        files[stem] = {
            "samples": writer.counts[stem],
            "sha256": sha256,
            "size": path.stat().st_size,
            "crc32": deflated.crc32,
            "compressed_size": deflated.compressed_size,
        }
    result = {
        "suffix": writer.suffix,
        "files": files,
        "by_kind": by_kind,
        "by_split": by_split,
        "on_policy": [[name, weights, n] for (name, weights), n in sorted(on_policy.items())],
        "images": images if writer.uses_image_folder or writer.uses_image_table else {},
        "reduced_images": reduced if writer.uses_image_folder or writer.uses_image_table else {},
        "skipped": [asdict(skip) for skip in skipped],
        "sources": [[pk, version] for pk, version in stats.annotations],
        "by_round": [[round_id, n] for round_id, n in stats.by_round.items()],
        "tokens": {"counted_with": counter.counted_with, "longest": longest},
        "rounded_points": stats.rounded_points,
        "figures": writer.part_figures(),
    }
    return result


def _add_counts(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    for key, n in more.items():
        total[key] = total.get(key, 0) + n
    return total


def export_assemble(
    *,
    project: Project,
    fmt: str,
    options: ExportOptions,
    parts: Iterable[dict],
    stored: Callable[[dict], Callable[[], object]],
    workdir: Path,
    already_exported: int = 0,
    base: ExportJob | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> BuildResult:
    """Assemble the bundle from its shards' ``parts`` (``export_part_build``'s results, in shard order, taken one at
    a time) in ``workdir`` (emptied first); returns the finished archive. ``stored(file)`` opens one part's data
    file, deflated as its shard stored it.

    Deterministic: the data files are named from the shard order alone (``data_file_name``), every other file
    is made from the merged results, and the archive fixes entry order, timestamps and compression
    (``bundle.write_archive``), so the bytes do not depend on which worker built which shard, or when."""
    declared = export_format(fmt)
    shutil.rmtree(workdir, ignore_errors=True)
    out = workdir / "bundle"
    out.mkdir(parents=True)
    progress = progress or (lambda done, total: None)
    pixels = pixel_contract(project)
    writer = declared.writer(out, image_bytes=None, pixels=pixels)

    by_kind: dict[str, int] = {}
    by_split: dict[str, int] = {}
    on_policy: dict[tuple[str, str], int] = {}
    images: dict[str, list] = {}
    reduced_images: dict[str, tuple] = {}  # bundle path -> (stored name, size, sha256)
    skipped: list[Skip] = []
    sources: list[tuple[int, int]] = []
    by_round: Counter = Counter()
    by_stem: dict[str, list[dict]] = {}
    longest: dict | None = None
    counted_with: set[str] = set()
    shards = rounded = 0
    for part in parts:
        shards += 1
        _add_counts(by_kind, part["by_kind"])
        _add_counts(by_split, part["by_split"])
        for name, weights, n in part["on_policy"]:
            on_policy[(name, weights)] = on_policy.get((name, weights), 0) + n
        for sha, image in part["images"].items():
            images.setdefault(sha, image)
        for image in (part.get("reduced_images") or {}).values():
            stored_name, size, path, digest = image
            reduced_images.setdefault(path, (stored_name, size, digest))
        skipped += [Skip(**skip) for skip in part["skipped"]]
        sources += [(pk, version) for pk, version in part["sources"]]
        for round_id, n in part["by_round"]:
            by_round[round_id] += n
        rounded += part.get("rounded_points", 0)
        for stem, file in part["files"].items():
            by_stem.setdefault(stem, []).append(file)
        part_tokens = part.get("tokens") or {}
        if part_tokens.get("longest"):
            # The shard's file of that stem is the last one listed so far: its number in the bundle.
            record = {**part_tokens["longest"], "file_number": len(by_stem[part_tokens["longest"]["stem"]]) - 1}
            longest = tokens.longer(longest, record)
        if part_tokens.get("counted_with"):
            counted_with.add(part_tokens["counted_with"])
        writer.add_part_figures(part.get("figures") or {})
    annotations = len(sources)
    progress(annotations, None)

    data_files: list[str] = []
    files: dict[str, dict] = {}
    by_file: dict[str, int] = {}
    entries = []
    for stem in sorted(by_stem):
        for number, file in enumerate(by_stem[stem]):
            name = data_file_name(stem, number, len(by_stem[stem]), writer.suffix)
            data_files.append(name)
            files[name] = {"sha256": file["sha256"], "size": file["size"]}
            by_file[name] = file["samples"]
            # A shard stored the file deflated (a part from before shards deflated has no crc32: compressed here).
            deflated = archive.Deflated(file["crc32"], file["compressed_size"]) if "crc32" in file else None
            entries.append(archive.Entry(name, file["size"], stored(file), compress=True, deflated=deflated))
    sequence = sequence_lengths(longest, counted_with, by_stem, writer.suffix, pixels)
    writer.sequence_length = sequence["cutoff_len"]
    extra_files = writer.bundle_files(data_files)
    if writer.uses_image_table and images:
        # A row names a reduced screenshot by its key (the screenshot's sha256 and its size), its file's stem.
        table = {**images, **{Path(path).stem: [name, size, path] for path, (name, size, _) in reduced_images.items()}}
        write_image_table(out / IMAGE_TABLE, table, _stored_bytes)
        extra_files.append(IMAGE_TABLE)
    counts = {
        "by_kind": by_kind,
        "by_split": by_split,
        "by_file": by_file,
        "annotations": annotations,
        "already_exported": already_exported,
        "images": len(images) + len(reduced_images) if writer.uses_image_folder or writer.uses_image_table else 0,
        "skipped": len(skipped),
        "skipped_by_reason": dict(sorted(Counter(s.code for s in skipped).items())),
        "shards": shards,
        # Points and element boxes stored with decimals (before the editor rounded them): trained as integers.
        "rounded_points": rounded,
    }
    # One sample set per trace: the bundle's traces are its annotations. Said where an engineer looks (the
    # manifest's counts, the README, the job's counts the command line prints), never left silent.
    empty = validation_empty_reason(
        options=options, traces=annotations, validation_samples=by_split.get("validation", 0)
    )
    if empty and annotations:
        counts["validation_empty"] = empty
    lineage_block = {
        # What this bundle was built after: an incremental bundle holds only what changed since its base.
        "since_export": None
        if base is None
        else {"id": base.pk, "bundle_sha256": base.bundle_sha256, "annotations": len(base.sources or [])},
        "already_exported": already_exported,
        "rounds": rounds_of_sources(by_round),
    }
    sections = writer.manifest_sections()
    readme = archive.readme_text(
        project_name=project.name,
        fmt=fmt,
        text=declared.readme,
        data_files=data_files + extra_files,
        counts=counts,
        options=options.to_json(),
        pixels=pixels,
        lineage=lineage_block,
        sections=sections,
        sequence=sequence,
    )
    (out / "README.md").write_text(readme, encoding="utf-8")
    for name in [*extra_files, "README.md"]:
        files[name] = {"sha256": archive.file_sha256(out / name), "size": (out / name).stat().st_size}
        entry = archive.local_entry(out / name, name)
        # The image table is compressed images: stored as it is, like the images folder.
        entries.append(entry if name != IMAGE_TABLE else dataclasses.replace(entry, compress=False))
    for sha, (storage_name, size, path) in images.items() if writer.uses_image_folder else ():
        files[path] = {"sha256": sha, "size": size}
        entries.append(archive.Entry(path, size, _stored_file(storage_name), compress=False))
    for path, (storage_name, size, sha) in reduced_images.items() if writer.uses_image_folder else ():
        files[path] = {"sha256": sha, "size": size}
        entries.append(archive.Entry(path, size, _stored_file(storage_name), compress=False))
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "app_version": settings.APP_VERSION,
        "format": fmt,
        "project": {"id": project.pk, "name": project.name},
        "prompt": _prompt_settings(project),
        "pixels": pixels,
        "filters": {
            "status": "accepted",
            "one_per_trace": "adjudicated first, else latest reviewed",
            "exclude_verdicts": ["unusable"],
            **options.to_json(),
        },
        "counts": counts,
        "tokens": sequence,
        **sections,
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
        "sources": archive.Rows(sources, lambda source: {"annotation_id": source[0], "version": source[1]}),
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
    archive.manifest_write(out / "manifest.json", manifest)
    del manifest
    entries.append(archive.local_entry(out / "manifest.json", "manifest.json"))

    total = annotations + len(entries)
    progress(annotations, total)
    target = workdir / "bundle.zip.part"
    archive.write_archive(
        target,
        entries,
        on_entry=lambda n: progress(annotations + n, None) if n % 200 == 0 or n == len(entries) else None,
    )
    held = sorted(sources)
    return BuildResult(target, archive.file_sha256(target), target.stat().st_size, counts, skipped, held)


def sequence_lengths(
    longest: dict | None, counted_with: set[str], by_stem: dict[str, list], suffix: str, pixels: dict
) -> dict:
    """The manifest's ``tokens``: the bundle's longest sample (tokens, annotation, data file and row) and the limit
    written for the trainers, ``cutoff_len`` (LLaMA-Factory) = ``max_length`` (TRL), which holds it."""
    where = None
    if longest is not None:
        stem = longest["stem"]
        where = {
            **{key: value for key, value in longest.items() if key not in ("stem", "file_number")},
            "file": data_file_name(stem, longest["file_number"], len(by_stem[stem]), suffix),
        }
    limit = tokens.trainer_length(longest["tokens"]) if longest is not None else None
    return {
        "longest": where,
        # The shards count alike (one setting); an export made across a change of it says both.
        "counted_with": " and ".join(sorted(counted_with)) or tokens.BOUND,
        "image_tokens": f"(h/{tokens.PATCH_SIZE * tokens.MERGE_SIZE})·(w/{tokens.PATCH_SIZE * tokens.MERGE_SIZE}) "
        f"of smart_resize within min_pixels={pixels['min_pixels']}, max_pixels={pixels['max_pixels']}",
        "cutoff_len": limit,
        "max_length": limit,
    }


def export_plan(annotation_ids: list[int]) -> list[tuple[list[int], int]]:
    """The export's shards: its annotations in order, ``EXPORT_SHARD_ANNOTATIONS`` a shard (the last one shorter;
    one empty shard when there are none, so an empty bundle is assembled the same way). Depends on the inputs and
    that setting alone, never on the workers."""
    size = max(1, settings.EXPORT_SHARD_ANNOTATIONS)
    pieces = [
        (annotation_ids[i : i + size], len(annotation_ids[i : i + size])) for i in range(0, len(annotation_ids), size)
    ]
    return pieces or [([], 0)]


# --- jobs ------------------------------------------------------------------------------------------


@atomic_with_retry
def export_job_create(
    *, project: Project, user, fmt: str, options: dict | None = None, enqueue: bool = True
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
        raise OptionsError(f"since_export: project {project.name!r} has no export {export_id}")
    if base.status != JobStatus.SUCCEEDED:
        raise OptionsError(f"since_export: export {export_id} is {base.status}; only a finished export can be a base")
    if base.sources is None:
        raise OptionsError(
            f"since_export: export {export_id} was made before bundle lineage was kept, so which annotations it "
            "holds is unknown; export the whole project once and build on that"
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
        pieces = export_plan(export_plan_annotations(job.project, held, stats, slice_id=options.slice))
        floor = validation_floor(stats.trace_ids, options)
    except (ExportError, OptionsError) as exc:
        raise JobFailed(str(exc)) from exc
    if floor is not None:  # the shards read the split from the options
        job.options = {**job.options, "validation_trace": floor}
    elif options.validation_fraction > 0 and len(set(stats.trace_ids)) < VALIDATION_MIN_TRACES:
        job.options = {**job.options, "train_only": True}
    ExportJob.objects.filter(pk=job.pk).update(counts={"already_exported": stats.already_exported}, options=job.options)
    return pieces


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
        result = export_part_build(
            project=job.project,
            fmt=job.format,
            options=ExportOptions.parse(job.options),
            annotation_ids=shard.items,
            workdir=scratch,
            on_batch=on_batch,
        )
        with transaction.atomic():
            progress.guard()
            for stem, file in result["files"].items():
                file["stored"] = bundle_part_save(job, shard, deflated_path(scratch / f"{stem}{result['suffix']}"))
            for image in result["reduced_images"].values():
                image[0] = bundle_part_save(job, shard, scratch / REDUCED_FOLDER / image[0])
            JobShard.objects.filter(pk=shard.pk, attempts=shard.attempts).update(result=result)
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

        def parts() -> Iterator[dict]:
            for part in shards_results(job):
                if part is None:
                    raise ExportError("a shard of this export completed without recording its files; export again")
                yield part

        result = export_assemble(
            project=job.project,
            fmt=job.format,
            options=options,
            parts=parts(),
            stored=lambda file: _stored_file(file["stored"]),
            workdir=workdir,
            already_exported=(job.counts or {}).get("already_exported", 0),
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
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.get("by_kind", {}).items())) or "no samples"
    reasons = ", ".join(f"{n} {code}" for code, n in (counts.get("skipped_by_reason") or {}).items())
    held = counts.get("already_exported") or 0
    accepted = counts.get("annotations", 0)
    # An empty bundle succeeds (an engineer's pipeline may export on a schedule), but says why it is empty: an
    # engineer who downloads a few kilobytes of nothing should not have to guess.
    empty = ""
    if not accepted:
        empty = (
            "; the bundle is empty: every accepted annotation is already in the base export"
            if held
            else "; the bundle is empty: no annotation of this project is accepted yet (leads accept them on the review queue)"
        )
    return (
        f"{kinds} from {in_words(accepted, 'accepted annotation', 'accepted annotations')}; "
        f"{counts.get('skipped', 0)} skipped"
        + (f" ({reasons})" if reasons else "")
        + (f"; {held} left out, already in the base export" if held else "")
        + empty
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
