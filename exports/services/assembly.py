"""The bundle from its shards' parts (``export_assemble``): the data files named by shard order, the manifest, the
README and the archive, deterministically."""

from __future__ import annotations

import dataclasses
import shutil
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from exports import bundle as archive
from exports import tokens
from exports.builders import SCHEMA_VERSION, ExportOptions, Skip, validation_empty_reason
from exports.formats import export_format
from exports.models import ExportJob
from exports.services.parts import pixel_contract
from exports.writers import IMAGE_TABLE, data_file_name, write_image_table
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


def _stored_file(name: str):
    """An opener of one stored file, for the archive writer to call when it packs it."""
    return lambda: default_storage.open(name, "rb")


def _stored_bytes(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        return handle.read()


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
    quality_filter: dict | None = None,
    replay_filter: dict | None = None,
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
    by_verification: dict[str, int] = {}
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
    sample_traces: int | None = 0  # None: a part from before shards counted them
    for part in parts:
        shards += 1
        _add_counts(by_kind, part["by_kind"])
        _add_counts(by_split, part["by_split"])
        _add_counts(by_verification, part.get("by_verification") or {})
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
        if sample_traces is not None and "sample_traces" in part:
            sample_traces += part["sample_traces"]
        else:
            sample_traces = None
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
        **({"quality_filter": quality_filter} if quality_filter is not None else {}),
        # Replays (option verified_only): the corrections by verification, and how many the option left out.
        **({"replay_filter": replay_filter} if replay_filter is not None else {}),
        # The samples of corrections a replay was asked for, by the correction's standing (copies counted: the
        # option verification_weights writes a sample once per unit of its standing's weight).
        **({"samples_by_verification": dict(sorted(by_verification.items()))} if by_verification else {}),
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
        options=options,
        traces=annotations,
        validation_samples=by_split.get("validation", 0),
        sample_traces=sample_traces,
    )
    if empty and annotations:
        counts["validation_empty"] = empty
    lineage_block = {
        # What this bundle was built after: an incremental bundle holds only what changed since its base.
        "since_export": None
        if base is None
        else {"id": base.pk, "bundle_sha256": base.bundle_sha256, "annotations": len(base.sources or [])},
        "already_exported": already_exported,
        # The quality filter (option min_gold_accuracy): how many accepted answers it left out, and why (whose).
        **({"left_out_by_quality": quality_filter} if quality_filter is not None else {}),
        # The replays behind the corrections (docs/runners.md): their ids, and what verified_only left out.
        **({"replays": replay_filter} if replay_filter is not None else {}),
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
