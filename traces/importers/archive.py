"""Unpacking uploaded archives without trusting them: no path escapes, no links, no bombs."""

from __future__ import annotations

import stat
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings
from django.utils.translation import gettext

CHUNK = 1024 * 1024

# Members whose compressed bytes can be copied from one zip into another as they are (``member_copy``).
COPIED_AS_THEY_ARE = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}


class ArchiveError(Exception):
    """The archive as a whole cannot be used (not a zip, too many entries, too large unpacked)."""


@dataclass
class ExtractReport:
    folder: Path  # where the archive was unpacked
    extracted: int = 0
    # Bytes unpacked, counted against IMPORT_MAX_UNPACKED_BYTES; a placeholder counts its declared size, the most
    # its unpacking can give (zipfile stops a member at its declared size and then checks its CRC).
    unpacked_bytes: int = 0
    refused: list[dict] = field(default_factory=list)  # {"file": name, "error": why}
    members: dict[Path, zipfile.ZipInfo] = field(default_factory=dict)  # each file made (resolved) -> its entry
    # The files made empty whose entries were checked whole (``left_in_archive``): their bytes are read from the
    # archive when needed.
    left_in_archive: set[Path] = field(default_factory=set)


def _refusal(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return gettext("is a symbolic link; links are not imported")
    if "\\" in name:
        return gettext("uses backslashes in its path")
    path = PurePosixPath(name)
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        return gettext("has an absolute path")
    if ".." in path.parts:
        return gettext("has '..' in its path")
    if info.flag_bits & 0x1:
        return gettext("is encrypted")
    if info.file_size > settings.IMPORT_MAX_UNPACKED_BYTES:
        return gettext("declares %(size)s bytes unpacked, over the limit") % {"size": info.file_size}
    if info.compress_size and info.file_size / info.compress_size > settings.IMPORT_MAX_COMPRESSION_RATIO:
        ratio = info.file_size // max(info.compress_size, 1)
        return gettext("compresses %(ratio)s:1, over the %(limit)s:1 limit (decompression bomb)") % {
            "ratio": ratio,
            "limit": settings.IMPORT_MAX_COMPRESSION_RATIO,
        }
    return None


def safe_extract(
    archive: Path,
    dest: Path,
    *,
    placeholder: Callable[[str], bool] | None = None,
    left_in_archive: Callable[[str], bool] | None = None,
) -> ExtractReport:
    """Extract ``archive`` into ``dest``; refused entries are reported by name, the rest extracted. An entry whose
    name ``placeholder`` accepts (and that ``member_copy`` copies as it is) is made an empty file instead: whoever
    reads the folder sees it there but not its bytes, which are not unpacked (an import's plan: its shards unpack
    them, see ``traces.services.import_plan_make``). An entry whose name ``left_in_archive`` accepts is unpacked
    and checked as any other (its size against the budget, its CRC; a damaged one is refused), but what is written
    is an empty file: its bytes stay in the archive, read from there by whoever needs them (an import's shard reads
    each screenshot a trace names once, and many an upload's screenshots none)."""
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile:
        raise ArchiveError(
            gettext("%(archive)s: not a zip archive (or it is truncated)") % {"archive": archive.name}
        ) from None
    report = ExtractReport(folder=dest)
    budget = settings.IMPORT_MAX_UNPACKED_BYTES
    with zf:
        infos = zf.infolist()
        if len(infos) > settings.IMPORT_MAX_ARCHIVE_ENTRIES:
            raise ArchiveError(
                gettext("%(archive)s: %(count)s entries, over the limit of %(limit)s")
                % {"archive": archive.name, "count": len(infos), "limit": settings.IMPORT_MAX_ARCHIVE_ENTRIES}
            )
        root = dest.resolve()
        # Each folder of the archive resolved and made once, not once for each of its files: a resolve is a system
        # call for every part of the path. What a folder resolves to does not change while the archive is unpacked,
        # which makes files and folders only, never a link.
        folders: dict[PurePosixPath, Path] = {}
        made: set[Path] = set()
        for info in infos:
            if info.is_dir():
                continue
            why = _refusal(info)
            if why:
                error = gettext("%(file)s %(why)s") % {"file": info.filename, "why": why}
                report.refused.append({"file": info.filename, "error": error})
                continue
            target = _target_resolved(root, PurePosixPath(info.filename), folders)
            if not target.is_relative_to(root):
                error = gettext("%(file)s points outside the archive") % {"file": info.filename}
                report.refused.append({"file": info.filename, "error": error})
                continue
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            if placeholder is not None and info.compress_type in COPIED_AS_THEY_ARE and placeholder(info.filename):
                if report.unpacked_bytes + info.file_size > budget:
                    raise ArchiveError(_over_budget(archive, budget, info))
                target.open("wb").close()
                report.members[target] = info
                report.extracted += 1
                report.unpacked_bytes += info.file_size
                continue
            written = 0
            kept_in_archive = left_in_archive is not None and left_in_archive(info.filename)
            try:
                with zf.open(info) as src, target.open("wb") as out:
                    # Count what really comes out: a lying header cannot smuggle a bomb past us.
                    while chunk := src.read(CHUNK):
                        written += len(chunk)
                        if report.unpacked_bytes + written > budget or written > max(info.file_size, 0) + CHUNK:
                            raise ArchiveError(_over_budget(archive, budget, info))
                        if not kept_in_archive:
                            out.write(chunk)
            except (zipfile.BadZipFile, zlib_error(), EOFError) as exc:
                target.unlink(missing_ok=True)
                report.members.pop(target, None)  # an earlier entry of the same name was overwritten
                report.left_in_archive.discard(target)
                report.refused.append({"file": info.filename, "error": f"{info.filename} is damaged: {exc}"})
                continue
            except ArchiveError:
                target.unlink(missing_ok=True)
                raise
            report.members[target] = info
            if kept_in_archive:
                report.left_in_archive.add(target)
            else:
                report.left_in_archive.discard(target)  # an earlier entry of the same name was left there
            report.extracted += 1
            report.unpacked_bytes += written
    return report


def _target_resolved(root: Path, name: PurePosixPath, folders: dict[PurePosixPath, Path]) -> Path:
    """``(root / name).resolve()``, its folder's resolved path taken from ``folders`` once it was resolved."""
    folder = folders.get(name.parent)
    if folder is None:
        folder = folders[name.parent] = (root / name.parent).resolve()
    target = folder / name.name
    # A link already there under the file's own name is followed, as resolving the whole path would.
    return target.resolve() if target.is_symlink() else target


def _over_budget(archive: Path, budget: int, info: zipfile.ZipInfo) -> str:
    return gettext("%(archive)s: unpacks to more than %(budget)s bytes (decompression bomb); stopped at %(member)s") % {
        "archive": archive.name,
        "budget": budget,
        "member": info.filename,
    }


class _AsItIs:
    """A compressor that passes compressed bytes through (``member_copy``)."""

    def compress(self, data: bytes) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


def member_copy(raw: BinaryIO, info: zipfile.ZipInfo, target: zipfile.ZipFile, name: str) -> None:
    """Copy the member ``info`` of the zip open as the binary file ``raw`` into ``target`` as ``name``, its
    compressed bytes as they are (``info.compress_type`` must be one of COPIED_AS_THEY_ARE): nothing is unpacked
    or compressed again. Its CRC and sizes are the original's, so whoever unpacks the copy checks it as they would
    have checked the original (a damaged or lying member is found there). zipfile has no public way to add
    compressed data: its writer's compressor is swapped for one that passes the bytes through, and the checksum
    and size it counted are set to the member's before it closes; headers and the central directory are zipfile's.
    Raises zipfile.BadZipFile, with nothing written, when the member's bytes are not where the directory says."""
    raw.seek(info.header_offset)
    header = raw.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile("no local file header where the archive's directory says")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    start = info.header_offset + 30 + name_length + extra_length
    if start + info.compress_size > raw.seek(0, 2):
        raise zipfile.BadZipFile("the archive ends inside it")
    raw.seek(start)
    copy = zipfile.ZipInfo(name, date_time=info.date_time)
    copy.compress_type = info.compress_type
    copy.external_attr = 0o100644 << 16
    copy.file_size = info.file_size
    with target.open(copy, "w", force_zip64=max(info.file_size, info.compress_size) > zipfile.ZIP64_LIMIT) as sink:
        sink._compressor = _AsItIs()  # type: ignore[attr-defined]
        left = info.compress_size
        while left > 0:
            chunk = raw.read(min(CHUNK, left))
            if not chunk:  # the archive shrank since it was measured above: never loop on it
                raise OSError(f"{info.filename}: the archive changed while it was read")
            sink.write(chunk)
            left -= len(chunk)
        sink._crc, sink._file_size = info.CRC, info.file_size  # type: ignore[attr-defined]


def zlib_error() -> type[Exception]:
    import zlib

    return zlib.error
