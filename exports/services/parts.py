"""A shard's part of an export: its annotations' data files, each beside its deflated stream, the screenshots the
image budget sends smaller, and what the bundle's assembly needs of them (``export_part_build``)."""

from __future__ import annotations

import hashlib
import io
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.files.storage import default_storage

from exports import bundle as archive
from exports import tokens
from exports.builders import BuildStats, ExportOptions, Skip, iter_samples
from exports.formats import export_format
from exports.writers import image_path
from traces import grammar, prompting
from traces.models import Project

if TYPE_CHECKING:
    pass


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
        # `older_max_pixels` (the processor leaves them so); in smart-resize-pixels their history actions' points in
        # that size (screen-pixels and relative-1000 points do not depend on the image's size).
        "history_budget": {
            "full_images": project.history_full_images,
            "older_max_pixels": project.history_max_pixels if project.history_full_images else None,
        },
        # Each sample's ``target_box``: the element box of its trained target, in the same space as the points.
        "target_box": f"[x1, y1, x2, y2] in {project.coordinate_convention}, or null when none was drawn",
    }


REDUCED_FOLDER = "reduced"  # a shard's folder of the screenshots the image budget sends smaller


def reduced_png(view: prompting.ReducedImage, data: bytes) -> bytes:
    """The screenshot ``data`` at the size the image budget sends it (``view``), as PNG: deterministic bytes (no
    timestamps), so the same export gives the same bundle."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        out = io.BytesIO()
        view.resize(image).save(out, "PNG", optimize=False)
    return out.getvalue()


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

    def stored_bytes(shot: Any) -> bytes:
        with default_storage.open(shot.image.name, "rb") as handle:
            return handle.read()

    def image_bytes(shot: Any) -> bytes:
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
    sample_traces: set[int] = set()  # the traces that gave samples (a trace lies in one shard: the bundle sums them)
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
        sample_traces.add(item.trace_id)
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
        "sample_traces": len(sample_traces),
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
