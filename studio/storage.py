"""Stored files that pages show (screenshots), served without a web thread holding a remote read.

On S3 the answer is a redirect to a presigned URL: the browser fetches the bytes from S3 itself, so a slow or
hung S3 costs the image that waits for it, never a web thread that login pages and autosaves need.
Signing needs no S3 round trip. Local files are streamed by the web process, with no network between.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase

if TYPE_CHECKING:
    from django.core.files import File

# Content-addressed files: the bytes behind a name never change.
IMMUTABLE = "private, max-age=31536000, immutable"


def storage_is_remote() -> bool:
    return settings.STUDIO_STORAGE == "s3"


def browser_storage_origin() -> str:
    """The origin pages load stored files from besides their own (for the Content-Security-Policy), or ""."""
    if not storage_is_remote():
        return ""
    endpoint = getattr(default_storage, "public_endpoint_url", None) or getattr(default_storage, "endpoint_url", None)
    if not endpoint:
        return "https://*.amazonaws.com"
    parts = urlsplit(endpoint)
    return f"{parts.scheme}://{parts.netloc}"


# A stand-in (a screenshot answered for its missing thumbnail): the browser asks again soon.
SHORT_LIVED = "private, max-age=60"


def stored_file_response(
    name: str, *, content_type: str, etag: str | None, cache_control: str = IMMUTABLE
) -> HttpResponseBase:
    """The answer to a page asking for the stored file ``name`` (already permission-checked by the caller), sent as
    stored: never decoded or read whole in the web process. ``cache_control`` says how long the browser may keep
    it under the URL it asked for."""
    if storage_is_remote():
        expire = settings.AWS_QUERYSTRING_EXPIRE
        remote: Any = default_storage  # S3: its url() takes an expiry and response parameters
        url = remote.url(
            name,
            expire=expire,
            parameters={
                "ResponseContentType": content_type,
                "ResponseCacheControl": IMMUTABLE,
            },
        )
        redirect = HttpResponseRedirect(url)
        # The browser may reuse the redirect while the signature is valid, with a margin for the clock.
        redirect["Cache-Control"] = (
            f"private, max-age={max(0, expire // 2)}" if cache_control == IMMUTABLE else cache_control
        )
        return redirect
    response = FileResponse(default_storage.open(name, "rb"), content_type=content_type)
    response["Cache-Control"] = cache_control
    if etag:
        response["ETag"] = f'"{etag}"'
    return response


def stored_folder_delete(prefix: str) -> int:
    """Delete every stored file under ``prefix``, in local storage or S3 alike, and on local storage the folders
    they were in (S3 has none: its "folders" are the names' prefixes); returns how many files went. For the files of
    an ended job: nothing stores under ``prefix`` while it runs."""
    removed = 0

    def walk(folder: str) -> None:
        nonlocal removed
        try:
            folders, files = default_storage.listdir(folder)
        except FileNotFoundError:
            return
        for name in files:
            default_storage.delete(f"{folder}/{name}")
            removed += 1
        for sub in folders:
            walk(f"{folder}/{sub}")

    walk(prefix)
    _empty_folders_remove(prefix)
    return removed


def _empty_folders_remove(prefix: str) -> None:
    """Local storage keeps the folder of every file it deleted: an ended job's would stay behind, empty, one set an
    export or import. Removed deepest first; a folder that is not empty stays."""
    try:
        root = Path(default_storage.path(prefix))
    except NotImplementedError:  # storage without local paths (S3)
        return
    if not root.is_dir():
        return
    folders = sorted((path for path in root.rglob("*") if path.is_dir()), key=lambda path: len(path.parts))
    for folder in [*reversed(folders), root]:
        try:
            folder.rmdir()
        except OSError:  # not empty
            continue


def stored_file_fetch(name: str, local: Path) -> None:
    """Make ``local`` (a path not yet taken) the stored file ``name``, to read: a symbolic link to it where storage
    keeps its files on this machine's disk (an upload of gigabytes is not written once more), else a download."""
    try:
        path = default_storage.path(name)
    except NotImplementedError:  # S3
        with default_storage.open(name, "rb") as src, local.open("wb") as out:
            shutil.copyfileobj(src, out, 1024 * 1024)
        return
    local.symlink_to(path)


def stored_files() -> list[tuple[str, int]]:
    """Every stored file's name and size, local or S3, by name (one listing: S3 answers sizes with the names)."""
    try:
        root = Path(default_storage.path(""))
    except NotImplementedError:  # S3: the bucket's keys under the storage's location
        s3: Any = default_storage
        prefix = f"{s3.location.strip('/')}/" if s3.location else ""
        return sorted(
            (item.key[len(prefix) :], item.size)
            for item in s3.bucket.objects.filter(Prefix=prefix)
            if not item.key.endswith("/")
        )
    if not root.is_dir():
        return []
    return sorted(
        (path.relative_to(root).as_posix(), path.stat().st_size) for path in root.rglob("*") if path.is_file()
    )


def stored_file_put(name: str, content: IO[bytes]) -> None:
    """Store the open file ``content`` under exactly ``name`` (a restore's: the database names it), which must be
    free; storage picking another name would leave the rows pointing at nothing."""
    stored = default_storage.save(name, File(content, name=name))
    if stored != name:
        default_storage.delete(stored)
        raise FileExistsError(f"storage already holds {name}")


class _MovableFile(File):
    # FileSystemStorage moves a file that says where it lies (as it does an upload Django spooled to disk) instead
    # of copying it; other storages read it.
    def temporary_file_path(self) -> str:
        return str(self.name)


def stored_file_save_moved(name: str, local: Path) -> str:
    """Store the file ``local`` under ``name`` (or the free name storage picks, returned) and remove ``local``: where
    storage keeps its files on this machine's disk, on the same filesystem, the file is moved there, not copied."""
    with local.open("rb") as handle:
        stored = default_storage.save(name, _MovableFile(handle, name=str(local)))
    local.unlink(missing_ok=True)
    return stored
