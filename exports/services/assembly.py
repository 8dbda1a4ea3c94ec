"""The bundle from its shards' parts (``export_assemble``): the data files named by shard order, the manifest, the
README and the archive, deterministically."""

from __future__ import annotations

import dataclasses
import shutil
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files.storage import default_storage

from exports import bundle as archive
from exports import tokens
from exports.builders import SCHEMA_VERSION, ExportOptions, Skip, validation_empty_reason
from exports.formats import export_format
from exports.models import ExportJob
from exports.services.parts import ExportPart, PartFile, PartImage, PartReducedImage, pixel_contract
from exports.writers import IMAGE_TABLE, Writer, data_file_name, write_image_table
from traces.models import Project, Round


@dataclass
class BuildResult:
    archive: Path
    sha256: str
    size: int
    counts: dict
    skipped: list[Skip]
    sources: list[tuple[int, int]]  # (annotation id, version), sorted: the bundle's lineage


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


def _stored_file(name: str) -> Callable[[], IO[bytes]]:
    """An opener of one stored file, for the archive writer to call when it packs it."""
    return lambda: default_storage.open(name, "rb")


def _stored_bytes(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        return handle.read()


def _add_counts(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    for key, n in more.items():
        total[key] = total.get(key, 0) + n
    return total


@dataclass
class PartsTotal:
    """The shards' parts taken together, in shard order (``parts_reduce``): what the bundle's files, counts and
    manifest are made of."""

    shards: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_split: dict[str, int] = field(default_factory=dict)
    by_verification: dict[str, int] = field(default_factory=dict)
    on_policy: dict[tuple[str, str], int] = field(default_factory=dict)  # (model name, weights hash) -> pairs
    images: dict[str, PartImage] = field(default_factory=dict)  # by sha256
    reduced_images: dict[str, PartReducedImage] = field(default_factory=dict)  # by bundle path
    skipped: list[Skip] = field(default_factory=list)
    sources: list[tuple[int, int]] = field(default_factory=list)
    by_round: Counter = field(default_factory=Counter)
    by_stem: dict[str, list[PartFile]] = field(default_factory=dict)  # each stem's files, in shard order
    longest: dict[str, Any] | None = None  # the longest sample, with the number of its stem's file
    counted_with: set[str] = field(default_factory=set)
    rounded_points: int = 0
    sample_traces: int | None = 0  # None: a part from before shards counted them

    def add(self, part: ExportPart) -> None:
        """Take in the next shard's part."""
        self.shards += 1
        _add_counts(self.by_kind, part.by_kind)
        _add_counts(self.by_split, part.by_split)
        _add_counts(self.by_verification, part.by_verification)
        for name, weights, n in part.on_policy:
            self.on_policy[(name, weights)] = self.on_policy.get((name, weights), 0) + n
        for sha, image in part.images.items():
            self.images.setdefault(sha, image)
        for reduced in part.reduced_images.values():
            self.reduced_images.setdefault(reduced.path, reduced)
        self.skipped += part.skipped
        self.sources += part.sources
        for round_id, n in part.by_round:
            self.by_round[round_id] += n
        self.rounded_points += part.rounded_points
        self.sample_traces = (
            None
            if self.sample_traces is None or part.sample_traces is None
            else self.sample_traces + part.sample_traces
        )
        for stem, file in part.files.items():
            self.by_stem.setdefault(stem, []).append(file)
        self._add_tokens(part)

    def _add_tokens(self, part: ExportPart) -> None:
        if part.longest:
            # The shard's file of that stem is the last one listed so far: its number in the bundle.
            record = {**part.longest, "file_number": len(self.by_stem[part.longest["stem"]]) - 1}
            self.longest = tokens.longer(self.longest, record)
        if part.counted_with:
            self.counted_with.add(part.counted_with)


def parts_reduce(parts: Iterable[ExportPart], add_figures: Callable[[dict], None]) -> PartsTotal:
    """The shards' ``parts`` (in shard order, taken one at a time) as one ``PartsTotal``; each part's format
    figures go to ``add_figures`` (the assembly's writer, ``Writer.add_part_figures``)."""
    total = PartsTotal()
    for part in parts:
        total.add(part)
        add_figures(part.figures)
    return total


@dataclass
class DataFiles:
    """The bundle's data files, named from the shard order alone (``data_file_name``)."""

    names: list[str] = field(default_factory=list)
    files: dict[str, dict] = field(default_factory=dict)  # name -> the manifest's sha256 and size
    by_file: dict[str, int] = field(default_factory=dict)  # name -> samples
    entries: list[archive.Entry] = field(default_factory=list)


def _data_files(
    by_stem: dict[str, list[PartFile]], suffix: str, stored: Callable[[PartFile], Callable[[], IO[bytes]]]
) -> DataFiles:
    data = DataFiles()
    for stem in sorted(by_stem):
        for number, file in enumerate(by_stem[stem]):
            name = data_file_name(stem, number, len(by_stem[stem]), suffix)
            data.names.append(name)
            data.files[name] = {"sha256": file.sha256, "size": file.size}
            data.by_file[name] = file.samples
            # A shard stored the file deflated (a part from before shards deflated has no crc32: compressed here).
            deflated = (
                archive.Deflated(file.crc32, file.compressed_size)
                if file.crc32 is not None and file.compressed_size is not None
                else None
            )
            data.entries.append(archive.Entry(name, file.size, stored(file), compress=True, deflated=deflated))
    return data


def _extra_files(writer: Writer, out: Path, total: PartsTotal, data_files: list[str]) -> list[str]:
    """The format's files beside the data (configs, scripts) and the image table of a format that has one."""
    extra_files = writer.bundle_files(data_files)
    if writer.uses_image_table and total.images:
        # A row names a reduced screenshot by its key (the screenshot's sha256 and its size), its file's stem.
        table: dict[str, list] = {sha: list(image) for sha, image in total.images.items()}
        table |= {Path(path).stem: [image.stored, image.size, path] for path, image in total.reduced_images.items()}
        write_image_table(out / IMAGE_TABLE, table, _stored_bytes)
        extra_files.append(IMAGE_TABLE)
    return extra_files


@dataclass(frozen=True)
class Filters:
    """What the plan left out: annotations already in the base export, and the quality and replay filters'
    accounts (``None``: that filter was not asked for)."""

    already_exported: int = 0
    quality_filter: dict | None = None
    replay_filter: dict | None = None


def _bundle_counts(
    total: PartsTotal, data: DataFiles, writer: Writer, filters: Filters, options: ExportOptions
) -> dict[str, Any]:
    """The manifest's ``counts`` (the README and the job's counts say them too)."""
    annotations = len(total.sources)
    counts: dict[str, Any] = {
        "by_kind": total.by_kind,
        "by_split": total.by_split,
        "by_file": data.by_file,
        "annotations": annotations,
        "already_exported": filters.already_exported,
        **({"quality_filter": filters.quality_filter} if filters.quality_filter is not None else {}),
        # Replays (option verified_only): the corrections by verification, and how many the option left out.
        **({"replay_filter": filters.replay_filter} if filters.replay_filter is not None else {}),
        # The samples of corrections a replay was asked for, by the correction's standing (copies counted: the
        # option verification_weights writes a sample once per unit of its standing's weight).
        **({"samples_by_verification": dict(sorted(total.by_verification.items()))} if total.by_verification else {}),
        "images": len(total.images) + len(total.reduced_images)
        if writer.uses_image_folder or writer.uses_image_table
        else 0,
        "skipped": len(total.skipped),
        "skipped_by_reason": dict(sorted(Counter(s.code for s in total.skipped).items())),
        "shards": total.shards,
        # Points and element boxes stored with decimals (before the editor rounded them): trained as integers.
        "rounded_points": total.rounded_points,
    }
    # One sample set per trace: the bundle's traces are its annotations. Said where an engineer looks (the
    # manifest's counts, the README, the job's counts the command line prints), never left silent.
    empty = validation_empty_reason(
        options=options,
        traces=annotations,
        validation_samples=total.by_split.get("validation", 0),
        sample_traces=total.sample_traces,
    )
    if empty and annotations:
        counts["validation_empty"] = empty
    return counts


def _lineage(base: ExportJob | None, filters: Filters, by_round: Counter) -> dict[str, Any]:
    return {
        # What this bundle was built after: an incremental bundle holds only what changed since its base.
        "since_export": None
        if base is None
        else {"id": base.pk, "bundle_sha256": base.bundle_sha256, "annotations": len(base.sources or [])},
        "already_exported": filters.already_exported,
        # The quality filter (option min_gold_accuracy): how many accepted answers it left out, and why (whose).
        **({"left_out_by_quality": filters.quality_filter} if filters.quality_filter is not None else {}),
        # The replays behind the corrections (docs/runners.md): their ids, and what verified_only left out.
        **({"replays": filters.replay_filter} if filters.replay_filter is not None else {}),
        "rounds": rounds_of_sources(by_round),
    }


def _local_entries(out: Path, names: list[str], files: dict[str, dict]) -> list[archive.Entry]:
    """The files written in the bundle's folder, listed in ``files`` (the manifest's) as they are added."""
    entries = []
    for name in names:
        files[name] = {"sha256": archive.file_sha256(out / name), "size": (out / name).stat().st_size}
        entry = archive.local_entry(out / name, name)
        # The image table is compressed images: stored as it is, like the images folder.
        entries.append(entry if name != IMAGE_TABLE else dataclasses.replace(entry, compress=False))
    return entries


def _image_entries(total: PartsTotal, files: dict[str, dict]) -> list[archive.Entry]:
    """The images folder's screenshots, stored as they are (PNG and JPEG are compressed already)."""
    entries = []
    for sha, image in total.images.items():
        files[image.path] = {"sha256": sha, "size": image.size}
        entries.append(archive.Entry(image.path, image.size, _stored_file(image.stored), compress=False))
    for path, reduced in total.reduced_images.items():
        files[path] = {"sha256": reduced.sha256, "size": reduced.size}
        entries.append(archive.Entry(path, reduced.size, _stored_file(reduced.stored), compress=False))
    return entries


def _on_policy_section(on_policy: dict[tuple[str, str], int]) -> dict[str, Any]:
    """Pairs whose rejected side a checkpoint sampled (kind dpo_on_policy): on-policy for that checkpoint only."""
    if not on_policy:
        return {}
    return {
        "on_policy": {
            "kind": "dpo_on_policy",
            "pairs": sum(on_policy.values()),
            "checkpoints": [
                {"model_name": name, "weights_hash": weights, "pairs": n}
                for (name, weights), n in sorted(on_policy.items())
            ],
        }
    }


def _manifest(
    *,
    project: Project,
    fmt: str,
    options: ExportOptions,
    pixels: dict,
    counts: dict[str, Any],
    sequence: dict[str, Any],
    sections: dict[str, Any],
    total: PartsTotal,
    lineage_block: dict[str, Any],
    files: dict[str, dict],
) -> dict[str, Any]:
    return {
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
        **_on_policy_section(total.on_policy),
        "sources": archive.Rows(total.sources, lambda source: {"annotation_id": source[0], "version": source[1]}),
        "lineage": lineage_block,
        "skipped": [
            {
                "annotation_id": s.annotation_id,
                "trace_id": s.trace_id,
                "kind": s.kind,
                "code": s.code,
                "reason": s.reason,
            }
            for s in total.skipped
        ],
        "files": files,
    }


def _archive_write(
    workdir: Path, entries: list[archive.Entry], annotations: int, progress: Callable[[int, int | None], None]
) -> Path:
    """The bundle's archive (``bundle.write_archive``), its progress counted after the annotations."""
    progress(annotations, annotations + len(entries))
    target = workdir / "bundle.zip.part"
    archive.write_archive(
        target,
        entries,
        on_entry=lambda n: progress(annotations + n, None) if n % 200 == 0 or n == len(entries) else None,
    )
    return target


def export_assemble(
    *,
    project: Project,
    fmt: str,
    options: ExportOptions,
    parts: Iterable[ExportPart],
    stored: Callable[[PartFile], Callable[[], IO[bytes]]],
    workdir: Path,
    filters: Filters | None = None,
    base: ExportJob | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> BuildResult:
    """Assemble the bundle from its shards' ``parts`` (``export_part_build``'s results, in shard order, taken one at
    a time) in ``workdir`` (emptied first); returns the finished archive. ``stored(file)`` opens one part's data
    file, deflated as its shard stored it; ``filters`` says what the plan left out.

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

    total = parts_reduce(parts, writer.add_part_figures)
    annotations = len(total.sources)
    progress(annotations, None)

    data = _data_files(total.by_stem, writer.suffix, stored)
    sequence = sequence_lengths(total.longest, total.counted_with, total.by_stem, writer.suffix, pixels)
    writer.sequence_length = sequence["cutoff_len"]
    extra_files = _extra_files(writer, out, total, data.names)
    filters = filters or Filters()
    counts = _bundle_counts(total, data, writer, filters, options)
    lineage_block = _lineage(base, filters, total.by_round)
    sections = writer.manifest_sections()
    readme = archive.readme_text(
        project_name=project.name,
        fmt=fmt,
        text=declared.readme,
        data_files=data.names + extra_files,
        counts=counts,
        options=options.to_json(),
        pixels=pixels,
        lineage=lineage_block,
        sections=sections,
        sequence=sequence,
    )
    (out / "README.md").write_text(readme, encoding="utf-8")
    files = data.files
    entries = data.entries + _local_entries(out, [*extra_files, "README.md"], files)
    if writer.uses_image_folder:
        entries += _image_entries(total, files)
    manifest = _manifest(
        project=project,
        fmt=fmt,
        options=options,
        pixels=pixels,
        counts=counts,
        sequence=sequence,
        sections=sections,
        total=total,
        lineage_block=lineage_block,
        files=files,
    )
    archive.manifest_write(out / "manifest.json", manifest)
    del manifest
    entries.append(archive.local_entry(out / "manifest.json", "manifest.json"))

    target = _archive_write(workdir, entries, annotations, progress)
    return BuildResult(
        target, archive.file_sha256(target), target.stat().st_size, counts, total.skipped, sorted(total.sources)
    )


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
    # The shards count alike (one setting); an export made across a change of it says both.
    counted = " and ".join(sorted(counted_with)) or tokens.BOUND
    return {
        "longest": where,
        "counted_with": counted,
        "image_tokens": f"(h/{tokens.PATCH_SIZE * tokens.MERGE_SIZE})·(w/{tokens.PATCH_SIZE * tokens.MERGE_SIZE}) "
        f"of smart_resize within min_pixels={pixels['min_pixels']}, max_pixels={pixels['max_pixels']}",
        "cutoff_len": limit,
        "max_length": limit,
        # Counted in bytes: about what Qwen2's tokenizer makes of the longest sample, and how much the limit overstates.
        **({"byte_bound": tokens.bound_estimate(longest)} if counted == tokens.BOUND and longest is not None else {}),
    }
