"""Bundles in Django's storage (local files or S3), and their downloads.

Local: an auth-checked streamed response with HTTP Range. S3: a presigned URL with an expiry
(the client is redirected there; the bytes never pass through the web process).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.http.response import HttpResponseBase

from studio.storage import storage_is_remote, stored_folder_delete

if TYPE_CHECKING:
    from exports.models import ExportJob

CHUNK = 1024 * 1024
_RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")


def bundle_storage_name(job) -> str:
    return f"exports/{job.project_id}/export-{job.pk}-{job.format}.zip"


def bundle_save(job, local_path) -> str:
    """Copy a finished archive into storage under its final name (a leftover of a killed attempt is replaced)."""
    name = bundle_storage_name(job)
    if default_storage.exists(name):
        default_storage.delete(name)
    with open(local_path, "rb") as handle:
        saved = default_storage.save(name, File(handle, name=name))
    return saved


def bundle_parts_prefix(job) -> str:
    """Where an export's shards store their data files until the bundle is assembled (shared by every worker)."""
    return f"exports/{job.project_id}/export-{job.pk}-parts"


def bundle_part_save(job, shard, local_path) -> str:
    """Store one data file of a shard's run under that run's own folder (shard index and attempt), so a re-run
    never mixes with what an earlier, killed run stored."""
    name = f"{bundle_parts_prefix(job)}/{shard.index:05d}-{shard.attempts}/{local_path.name}"
    if default_storage.exists(name):
        default_storage.delete(name)
    with open(local_path, "rb") as handle:
        return default_storage.save(name, File(handle, name=name))


def bundle_parts_delete(job) -> int:
    """Delete every stored shard file of an export (it ended: assembled, cancelled or failed); returns how many."""
    return stored_folder_delete(bundle_parts_prefix(job))


def bundle_delete(name: str) -> None:
    if name and default_storage.exists(name):
        default_storage.delete(name)


def export_files_delete(job) -> None:
    """Every stored file of an export whose row is going: the shards' data files and the bundle."""
    bundle_parts_delete(job)
    bundle_delete(job.bundle_name)


def is_remote() -> bool:
    return storage_is_remote()


def presigned_url(name: str, *, filename: str) -> str:
    # default_storage is typed as Django's Storage; remote, it is django-storages' S3Storage, whose url takes these.
    return default_storage.url(  # type: ignore[call-arg]
        name,
        parameters={"ResponseContentDisposition": f'attachment; filename="{filename}"'},
        expire=settings.S3_BUNDLE_URL_EXPIRY_S,
    )


class ByteRange:
    """``length`` bytes of ``handle`` from ``start``: iterable for any server, and a file (``read``) that the
    web entry (studio.web_entry, via ``file_to_stream``) sends from its event loop, so a client that stops
    reading holds no request thread."""

    def __init__(self, handle, start: int, length: int):
        self.handle, self.left = handle, length
        handle.seek(start)

    def read(self, size: int = -1) -> bytes:
        size = self.left if size is None or size < 0 else min(size, self.left)
        chunk = self.handle.read(size) if size > 0 else b""
        self.left -= len(chunk)
        return chunk

    def __iter__(self):
        while chunk := self.read(CHUNK):
            yield chunk

    def close(self) -> None:
        self.handle.close()


def parse_range(header: str, size: int) -> tuple[int, int] | None | str:
    """(start, end inclusive) for one ``bytes=`` range; None for no/ignored header; "unsatisfiable"."""
    if not header:
        return None
    match = _RANGE_RE.match(header.strip())
    if not match or (not match.group(1) and not match.group(2)):
        return None  # malformed or multi-range: RFC 9110 lets a server ignore it and send everything
    first, last = match.groups()
    if first:
        start = int(first)
        end = min(int(last), size - 1) if last else size - 1
        if start >= size or (last and int(last) < start):
            return "unsatisfiable"
    else:
        suffix = int(last)
        if suffix == 0:
            return "unsatisfiable"
        start, end = max(0, size - suffix), size - 1
    return start, end


def bundle_response(request: HttpRequest, job: ExportJob) -> HttpResponseBase:
    """The download of a finished bundle: redirect to a presigned URL (S3) or stream with Range (local)."""
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", job.project.name)
    filename = f"{safe_name}-export-{job.pk}-{job.format}.zip"
    if is_remote():
        return HttpResponseRedirect(presigned_url(job.bundle_name, filename=filename))
    size = default_storage.size(job.bundle_name)
    wanted = parse_range(request.headers.get("Range", ""), size)
    if isinstance(wanted, str):  # "unsatisfiable"
        refusal = HttpResponse(status=416)
        refusal["Content-Range"] = f"bytes */{size}"
        return refusal
    start, end = wanted if wanted else (0, size - 1)
    length = max(0, end - start + 1)
    handle = default_storage.open(job.bundle_name, "rb")
    piece = ByteRange(handle, start, length)
    response = StreamingHttpResponse(piece, status=206 if wanted else 200, content_type="application/zip")
    # Django's WSGI handler hands these to wsgi.file_wrapper; the stubs know them on FileResponse alone.
    response.file_to_stream, response.block_size = piece, CHUNK  # type: ignore[attr-defined]
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = f'"{job.bundle_sha256}"'
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    if wanted:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    return response
