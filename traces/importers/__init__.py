"""One entry point for every trace source: detect the format, unpack archives safely, read traces."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from django.utils.translation import gettext

from .archive import ArchiveError, ExtractReport, safe_extract
from .base import (
    ImageRef,
    ImportedStep,
    ImportedTrace,
    Importer,
    ImportWarning,
    TraceOrError,
    TraceReadError,
    WarningCode,
)
from .registry import IMPORTERS, discover, importers_in_detect_order, register, unregister

discover()


class UnknownFormat(Exception):
    pass


def detect_format(root: Path) -> str:
    """The first importer that recognises ``root``, in detection order (``importers_in_detect_order``)."""
    ordered = [importer.format_name for importer in importers_in_detect_order()]
    for name in ordered:
        if IMPORTERS[name].detect(root):
            return name
    raise UnknownFormat(
        gettext("%(folder)s: no known trace layout found (looked for: %(formats)s); see docs/formats.md")
        % {"folder": root.name, "formats": ", ".join(ordered)}
    )


# The folder an archive without one top folder is unpacked into, when its own name cannot be used.
UNNAMED_ARCHIVE_FOLDER = "upload"


def archive_folder_name(name: str) -> str:
    """The folder an archive without one top folder is read as: the archive's name without its suffix (``run.zip``
    is read as the folder ``run``, as if zipped with that folder on top), so the names importers derive from it and
    every message name the upload, never a temporary folder. A name no file system takes whole gives "upload"."""
    stem = Path(name or "").stem if name else ""
    if not stem or stem in (".", "..") or "\x00" in stem or len(stem.encode("utf-8", "surrogatepass")) > 100:
        return UNNAMED_ARCHIVE_FOLDER
    return stem


@contextlib.contextmanager
def opened_source(
    path: Path,
    *,
    scratch: Path | None = None,
    placeholder: Callable[[str], bool] | None = None,
    name: str = "",
) -> Iterator[tuple[Path, ExtractReport | None]]:
    """Yield a folder (or JSONL file) to read; a .zip is unpacked safely into a temporary folder, inside
    ``scratch`` when given (a job's folder, which is swept if the process is killed), else the system's; the
    entries ``placeholder`` accepts as empty files (``safe_extract``). An archive holding one top folder is read
    as that folder; any other as a folder named after the archive (``name``, the upload's name, else the file's:
    ``archive_folder_name``)."""
    if path.suffix.lower() == ".zip" or (path.is_file() and _looks_like_zip(path)):
        with tempfile.TemporaryDirectory(prefix="trace-import-", dir=scratch) as tmp:
            root = Path(tmp) / archive_folder_name(name or path.name)
            report = safe_extract(path, root, placeholder=placeholder)
            root.mkdir(exist_ok=True)
            children = [p for p in root.iterdir()]
            # An archive holding one top folder is read as that folder.
            if len(children) == 1 and children[0].is_dir():
                root = children[0]
            yield root, report
    else:
        yield path, None


def _looks_like_zip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"PK\x03\x04"


def matching_formats(root: Path) -> list[str]:
    """Every importer that recognises ``root`` (what a wrong explicit format's error suggests)."""
    return [name for name, importer in IMPORTERS.items() if importer.detect(root)]


def importer_for(root: Path, fmt: str | None = None) -> Importer:
    """The importer of ``fmt``, or of the format detected in ``root``."""
    name = fmt or detect_format(root)
    if name not in IMPORTERS:
        raise UnknownFormat(
            gettext("unknown format '%(name)s'; known: %(formats)s")
            % {"name": name, "formats": ", ".join(sorted(IMPORTERS))}
        )
    return IMPORTERS[name]


def iter_traces(root: Path, fmt: str | None = None) -> Iterator[TraceOrError]:
    yield from importer_for(root, fmt).read(root)


def unit_files(root: Path, unit: Path) -> list[Path]:
    """The files reading ``unit`` (one of ``importer.units(root)``) may open: the folder it is or lies in, whole,
    and the files beside that folder (OSWorld's ``<example_id>.json``); everything under ``root`` for a unit at the
    top (a JSONL whose screenshots may lie anywhere, a root that is one trace). What a shard of an import unpacks."""
    folder = unit if unit.is_dir() else unit.parent
    if folder == root or not folder.is_relative_to(root):
        return sorted(path for path in root.rglob("*") if path.is_file())
    inside = {path for path in folder.rglob("*") if path.is_file()}
    beside = {path for path in folder.parent.iterdir() if path.is_file()}
    return sorted(inside | beside)


__all__ = [
    "ArchiveError",
    "IMPORTERS",
    "ImageRef",
    "ImportWarning",
    "ImportedStep",
    "ImportedTrace",
    "Importer",
    "TraceReadError",
    "UnknownFormat",
    "WarningCode",
    "archive_folder_name",
    "detect_format",
    "discover",
    "importer_for",
    "importers_in_detect_order",
    "iter_traces",
    "matching_formats",
    "opened_source",
    "register",
    "unit_files",
    "unregister",
]
