"""Bundles in Django's storage (local files or S3), and their downloads.

Local: an auth-checked streamed response with HTTP Range. S3: a presigned URL with an expiry
(the client is redirected there; the bytes never pass through the web process).
"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.http import HttpResponse, HttpResponseRedirect, StreamingHttpResponse

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


def bundle_delete(name: str) -> None:
    if name and default_storage.exists(name):
        default_storage.delete(name)


def is_remote() -> bool:
    return settings.STUDIO_STORAGE == "s3"


def presigned_url(name: str, *, filename: str) -> str:
    return default_storage.url(
        name,
        parameters={"ResponseContentDisposition": f'attachment; filename="{filename}"'},
        expire=settings.AWS_QUERYSTRING_EXPIRE,
    )


def _stream(handle, start: int, length: int):
    try:
        handle.seek(start)
        left = length
        while left > 0:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    finally:
        handle.close()


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


def bundle_response(request, job) -> HttpResponse:
    """The download of a finished bundle: redirect to a presigned URL (S3) or stream with Range (local)."""
    safe_name = re.sub(r"[^A-Za-z0-9._-]+", "_", job.project.name)
    filename = f"{safe_name}-export-{job.pk}-{job.format}.zip"
    if is_remote():
        return HttpResponseRedirect(presigned_url(job.bundle_name, filename=filename))
    size = default_storage.size(job.bundle_name)
    wanted = parse_range(request.headers.get("Range", ""), size)
    if wanted == "unsatisfiable":
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    start, end = wanted if wanted else (0, size - 1)
    length = max(0, end - start + 1)
    handle = default_storage.open(job.bundle_name, "rb")
    response = StreamingHttpResponse(_stream(handle, start, length), status=206 if wanted else 200,
                                     content_type="application/zip")
    response["Content-Length"] = str(length)
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = f'"{job.bundle_sha256}"'
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    if wanted:
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
    return response
