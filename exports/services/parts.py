"""A shard's part of an export: its annotations' data files, each beside its deflated stream, the screenshots the
image budget sends smaller, and what the bundle's assembly needs of them (``export_part_build``)."""

from __future__ import annotations

import gc
import hashlib
import io
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from django.conf import settings
from django.core.files.storage import default_storage

from exports import bundle as archive
from exports import tokens
from exports.builders import BuildStats, ExportOptions, Sample, Skip, iter_samples
from exports.formats import export_format
from exports.writers import Writer, image_path
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


class PartImage(NamedTuple):
    """A screenshot a shard's samples show, as it is stored (JSON: ``[stored, size, path]``)."""

    stored: str  # its storage name
    size: int
    path: str  # its path in the bundle


class PartReducedImage(NamedTuple):
    """A screenshot the image budget sends smaller, made by the shard (JSON: ``[stored, size, path, sha256]``)."""

    stored: str  # its file name in the shard's folder, then (once the shard stored it) its storage name
    size: int
    path: str  # its path in the bundle
    sha256: str


@dataclass
class PartFile:
    """One data file of a shard's part (a stem's samples), beside its deflated stream."""

    samples: int
    sha256: str
    size: int
    # The deflated stream's header figures; None in a part from before shards deflated (the assembly compresses it).
    crc32: int | None = None
    compressed_size: int | None = None
    stored: str = ""  # the deflated stream's storage name, once the shard's work stored it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"samples": self.samples, "sha256": self.sha256, "size": self.size}
        if self.crc32 is not None:
            out.update(crc32=self.crc32, compressed_size=self.compressed_size)
        if self.stored:
            out["stored"] = self.stored
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartFile:
        return cls(
            samples=data["samples"],
            sha256=data["sha256"],
            size=data["size"],
            crc32=data.get("crc32"),
            compressed_size=data.get("compressed_size"),
            stored=data.get("stored", ""),
        )


@dataclass
class ExportPart:
    """What one shard of an export gives the bundle's assembly (``export_part_build``), kept as JSON in its
    ``JobShard.result`` (``to_json`` / ``from_json``; a part stored by an older release reads with the figures it
    lacks empty or unknown)."""

    suffix: str
    files: dict[str, PartFile]  # by stem
    by_kind: dict[str, int]
    by_split: dict[str, int]
    # The traces that gave samples (a trace lies in one shard: the bundle sums them); None: an older part's unknown.
    sample_traces: int | None
    on_policy: list[tuple[str, str, int]]  # (model name, weights hash, dpo_on_policy pairs), sorted
    images: dict[str, PartImage]  # by sha256
    reduced_images: dict[str, PartReducedImage]  # by the reduced view's key
    skipped: list[Skip]
    sources: list[tuple[int, int]]  # (annotation id, version)
    by_round: list[tuple[int | None, int]]  # (round id, annotations)
    counted_with: str | None  # how the shard counted tokens (exports.tokens)
    longest: dict[str, Any] | None  # the shard's longest sample in tokens, with where it lies
    rounded_points: int = 0
    figures: dict[str, Any] = field(default_factory=dict)  # the format's own (Writer.part_figures)
    # Samples (copies counted) of corrections a replay was asked for, by the correction's standing by its replays.
    by_verification: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "suffix": self.suffix,
            "files": {stem: file.to_json() for stem, file in self.files.items()},
            "by_kind": self.by_kind,
            "by_split": self.by_split,
            "by_verification": self.by_verification,
            **({"sample_traces": self.sample_traces} if self.sample_traces is not None else {}),
            "on_policy": [list(row) for row in self.on_policy],
            "images": {sha: list(image) for sha, image in self.images.items()},
            "reduced_images": {key: list(image) for key, image in self.reduced_images.items()},
            "skipped": [asdict(skip) for skip in self.skipped],
            "sources": [list(source) for source in self.sources],
            "by_round": [list(row) for row in self.by_round],
            "tokens": {"counted_with": self.counted_with, "longest": self.longest},
            "rounded_points": self.rounded_points,
            "figures": self.figures,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExportPart:
        tokens_part = data.get("tokens") or {}
        return cls(
            suffix=data.get("suffix", ""),
            files={stem: PartFile.from_json(file) for stem, file in data["files"].items()},
            by_kind=data["by_kind"],
            by_split=data["by_split"],
            by_verification=data.get("by_verification") or {},
            sample_traces=data.get("sample_traces"),
            on_policy=[(name, weights, n) for name, weights, n in data["on_policy"]],
            images={sha: PartImage(*image) for sha, image in data["images"].items()},
            reduced_images={key: PartReducedImage(*image) for key, image in (data.get("reduced_images") or {}).items()},
            skipped=[Skip(**skip) for skip in data["skipped"]],
            sources=[(pk, version) for pk, version in data["sources"]],
            by_round=[(round_id, n) for round_id, n in data["by_round"]],
            counted_with=tokens_part.get("counted_with"),
            longest=tokens_part.get("longest"),
            rounded_points=data.get("rounded_points", 0),
            figures=data.get("figures") or {},
        )


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


class _ShardImages:
    """The screenshots a shard's samples show: the stored ones by sha256, and those the image budget sends smaller,
    made once each in the shard's folder (``REDUCED_FOLDER``)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.images: dict[str, PartImage] = {}
        self.reduced: dict[str, PartReducedImage] = {}

    def image_bytes(self, shot: Any) -> bytes:
        """A prompt image's bytes, for the writer (a stored screenshot, or a reduced view of one)."""
        if isinstance(shot, prompting.ReducedImage):
            return self.reduced_bytes(shot)
        return _stored_bytes(shot)

    def reduced_bytes(self, view: prompting.ReducedImage) -> bytes:
        folder = self.workdir / REDUCED_FOLDER
        if view.sha256 in self.reduced:
            return (folder / self.reduced[view.sha256].stored).read_bytes()
        data = reduced_png(view, _stored_bytes(view.screenshot))
        name = f"{view.sha256}.png"
        folder.mkdir(exist_ok=True)
        (folder / name).write_bytes(data)
        self.reduced[view.sha256] = PartReducedImage(
            name, len(data), image_path(view), hashlib.sha256(data).hexdigest()
        )
        return data

    def note(self, sample: Sample, *, bundled: bool) -> None:
        """The images ``sample`` shows; a reduced one is made now when the bundle holds images (``bundled``)."""
        for shot in sample.prompt.images:
            if isinstance(shot, prompting.ReducedImage):
                if bundled:
                    self.reduced_bytes(shot)
            elif shot.sha256 not in self.images:
                self.images[shot.sha256] = PartImage(shot.image.name, shot.byte_size, image_path(shot))


def _stored_bytes(shot: Any) -> bytes:
    with default_storage.open(shot.image.name, "rb") as handle:
        return handle.read()


@dataclass
class _PartTally:
    """What a shard counts of its samples as they are written."""

    longest: dict[str, Any] | None = None  # the shard's longest sample in tokens, with where it lies
    by_kind: dict[str, int] = field(default_factory=dict)
    on_policy: dict[tuple[str, str], int] = field(default_factory=dict)  # (model name, weights hash) -> pairs
    by_split: dict[str, int] = field(default_factory=dict)
    by_verification: dict[str, int] = field(default_factory=dict)  # ExportPart.by_verification
    sample_traces: set[int] = field(default_factory=set)  # the traces that gave samples
    skipped: list[Skip] = field(default_factory=list)

    def add(self, sample: Sample, count: dict[str, Any]) -> None:
        self.longest = tokens.longer(self.longest, count)
        self.by_kind[sample.kind] = self.by_kind.get(sample.kind, 0) + 1
        if sample.on_policy:
            checkpoint = (sample.on_policy["model_name"], sample.on_policy["weights_hash"])
            self.on_policy[checkpoint] = self.on_policy.get(checkpoint, 0) + 1
        self.by_split[sample.split] = self.by_split.get(sample.split, 0) + 1
        if sample.verification:
            self.by_verification[sample.verification] = self.by_verification.get(sample.verification, 0) + 1
        self.sample_traces.add(sample.trace_id)


def _part_files(writer: Writer, stems: list[str]) -> dict[str, PartFile]:
    """Each written data file, deflated beside itself (``deflated_path``), with what the assembly needs of it."""
    files = {}
    for stem in stems:
        path = writer.path(stem)
        sha256, deflated = archive.file_deflate(path, deflated_path(path))
        files[stem] = PartFile(
            samples=writer.counts[stem],
            sha256=sha256,
            size=path.stat().st_size,
            crc32=deflated.crc32,
            compressed_size=deflated.compressed_size,
        )
    return files


@contextmanager
def earlier_objects_frozen() -> Iterator[None]:
    """The objects the process holds already (Django's, Qwen2's vocabulary, the caches of earlier shards) moved out of
    the garbage collector's full passes while a shard is built or a bundle assembled, and back after: the work makes
    and drops millions of objects, and each full pass that set off walked the whole heap again (a third of a second
    of a 4-second export of 20,000 samples). Nothing is frozen where something was frozen already (a process that
    froze its start, another thread's shard): ``gc.unfreeze`` would give back what that froze too."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def export_part_build(
    *,
    project: Project,
    fmt: str,
    options: ExportOptions,
    annotation_ids: list[int],
    workdir: Path,
    on_batch: Callable[[int], None] | None = None,
) -> ExportPart:
    """Write the data files of one shard of an export (``annotation_ids``, in trace order) into ``workdir`` (emptied
    first), each beside its deflated stream (``deflated_path``); returns what the bundle's assembly needs of it
    (``ExportPart``, kept as JSON): per file (its stem) the samples, sha256 and size, the deflated stream's CRC-32
    and size, and the shard's counts, skips, sources, images and the format's own figures
    (``Writer.part_figures``). The same annotations give the same bytes.

    Streaming: samples go straight to the files. ``on_batch(annotations done)`` may raise JobCancelled."""
    with earlier_objects_frozen():
        return _part_build(
            project=project, fmt=fmt, options=options, annotation_ids=annotation_ids, workdir=workdir, on_batch=on_batch
        )


def _part_build(
    *,
    project: Project,
    fmt: str,
    options: ExportOptions,
    annotation_ids: list[int],
    workdir: Path,
    on_batch: Callable[[int], None] | None,
) -> ExportPart:
    writer_class = export_format(fmt).writer
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    throttle = settings.EXPORT_THROTTLE_S
    # Older history screenshots under the project's image budget are made here at the size they are sent at; the
    # shard stores them beside its data files.
    shots = _ShardImages(workdir)
    pixels = pixel_contract(project)
    writer = writer_class(workdir, image_bytes=shots.image_bytes, pixels=pixels)
    bundled = writer.uses_image_folder or writer.uses_image_table
    counter = tokens.token_counter(pixels, settings.EXPORT_TOKENIZER_DIR)
    stats = BuildStats()
    tally = _PartTally()

    def batch_done(done: int) -> None:
        if throttle:
            time.sleep(throttle)
        if on_batch:
            on_batch(done)

    for item in iter_samples(
        project, options, stats, on_annotation=batch_done, sample_set=writer.sample_set, annotation_ids=annotation_ids
    ):
        if isinstance(item, Skip):
            tally.skipped.append(item)
            continue
        writer.add(item)
        stem = writer.stem(item)
        tally.add(item, tokens.counter_record(counter, item, stem=stem, row=writer.counts[stem] - 1))
        shots.note(item, bundled=bundled)
    files = _part_files(writer, writer.close())
    return ExportPart(
        suffix=writer.suffix,
        files=files,
        by_kind=tally.by_kind,
        by_split=tally.by_split,
        by_verification=tally.by_verification,
        sample_traces=len(tally.sample_traces),
        on_policy=[(name, weights, n) for (name, weights), n in sorted(tally.on_policy.items())],
        images=shots.images if bundled else {},
        reduced_images=shots.reduced if bundled else {},
        skipped=tally.skipped,
        sources=list(stats.annotations),
        by_round=list(stats.by_round.items()),
        counted_with=counter.counted_with,
        longest=tally.longest,
        rounded_points=stats.rounded_points,
        figures=writer.part_figures(),
    )
