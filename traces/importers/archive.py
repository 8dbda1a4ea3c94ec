"""Unpacking uploaded archives without trusting them: no path escapes, no links, no bombs."""

from __future__ import annotations

import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.conf import settings

CHUNK = 1024 * 1024


class ArchiveError(Exception):
    """The archive as a whole cannot be used (not a zip, too many entries, too large unpacked)."""


@dataclass
class ExtractReport:
    extracted: int = 0
    bytes_written: int = 0
    refused: list[dict] = field(default_factory=list)  # {"file": name, "error": why}


def _refusal(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "is a symbolic link; links are not imported"
    if "\\" in name:
        return "uses backslashes in its path"
    path = PurePosixPath(name)
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        return "has an absolute path"
    if ".." in path.parts:
        return "has '..' in its path"
    if info.flag_bits & 0x1:
        return "is encrypted"
    if info.file_size > settings.IMPORT_MAX_UNPACKED_BYTES:
        return f"declares {info.file_size} bytes unpacked, over the limit"
    if info.compress_size and info.file_size / info.compress_size > settings.IMPORT_MAX_COMPRESSION_RATIO:
        ratio = info.file_size // max(info.compress_size, 1)
        return f"compresses {ratio}:1, over the {settings.IMPORT_MAX_COMPRESSION_RATIO}:1 limit (decompression bomb)"
    return None


def safe_extract(archive: Path, dest: Path) -> ExtractReport:
    """Extract ``archive`` into ``dest``; refused entries are reported by name, the rest extracted."""
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise ArchiveError(f"{archive.name}: not a zip archive (or it is truncated)") from None
    report = ExtractReport()
    budget = settings.IMPORT_MAX_UNPACKED_BYTES
    with zf:
        infos = zf.infolist()
        if len(infos) > settings.IMPORT_MAX_ARCHIVE_ENTRIES:
            raise ArchiveError(
                f"{archive.name}: {len(infos)} entries, over the limit of {settings.IMPORT_MAX_ARCHIVE_ENTRIES}"
            )
        root = dest.resolve()
        for info in infos:
            if info.is_dir():
                continue
            why = _refusal(info)
            if why:
                report.refused.append({"file": info.filename, "error": f"{info.filename} {why}"})
                continue
            target = (root / info.filename).resolve()
            if not target.is_relative_to(root):
                report.refused.append({"file": info.filename, "error": f"{info.filename} points outside the archive"})
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            try:
                with zf.open(info) as src, target.open("wb") as out:
                    # Count what really comes out: a lying header cannot smuggle a bomb past us.
                    while chunk := src.read(CHUNK):
                        written += len(chunk)
                        if report.bytes_written + written > budget or written > max(info.file_size, 0) + CHUNK:
                            raise ArchiveError(
                                f"{archive.name}: unpacks to more than {budget} bytes (decompression bomb); stopped at {info.filename}"
                            )
                        out.write(chunk)
            except (zipfile.BadZipFile, zlib_error(), EOFError) as exc:
                target.unlink(missing_ok=True)
                report.refused.append({"file": info.filename, "error": f"{info.filename} is damaged: {exc}"})
                continue
            except ArchiveError:
                target.unlink(missing_ok=True)
                raise
            report.extracted += 1
            report.bytes_written += written
    return report


def zlib_error():
    import zlib

    return zlib.error
