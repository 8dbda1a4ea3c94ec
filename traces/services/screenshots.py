"""Screenshots, stored once by content hash (many at once, on writer threads), and their thumbnails."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction

from studio.db import atomic_with_retry
from studio.engine import task_send
from traces.images import ImageInfo, ImageProblem, inspect_image, make_thumbnail
from traces.models import Screenshot, screenshot_path, thumbnail_path

log = logging.getLogger(__name__)


def screenshot_store(*, data: bytes, name: str) -> tuple[Screenshot, bool]:
    """Keep an image once by content hash; returns (screenshot, created). Raises ImageProblem."""
    try:
        [shot], created = screenshots_store(images=[(data, name)])
    except ScreenshotProblem as exc:
        raise ImageProblem(exc.message) from None
    return shot, bool(created)


SCREENSHOT_BATCH = 64


class ScreenshotProblem(Exception):
    def __init__(self, position: int, message: str):
        super().__init__(message)
        self.position = position
        self.message = message


def screenshots_store(*, images: list[tuple[bytes, str]], decode: bool = True) -> tuple[list[Screenshot], int]:
    """Keep many images once each by content hash with one lookup and one insert.

    Returns the screenshots in the order given and how many were new. An unusable image raises
    ``ScreenshotProblem`` with its position; files already written stay (content-addressed, reused).
    ``decode=False`` (web requests): checked from their headers only, stored without a thumbnail, which a worker
    is asked to make once the transaction commits (``traces.images.inspect_image``).
    """
    digests = [hashlib.sha256(data).hexdigest() for data, _ in images]
    known = {shot.sha256: shot for shot in Screenshot.objects.filter(sha256__in=set(digests))}
    new: dict[str, Screenshot] = {}
    unseen: dict[str, int] = {}
    for position, digest in enumerate(digests):
        if digest not in known and digest not in unseen:
            unseen[digest] = position

    def inspected(position: int) -> ImageInfo | ImageProblem:
        data, name = images[position]
        try:
            return inspect_image(data, name, decode=decode)
        except ImageProblem as exc:
            return exc

    # Every new image is decoded once to be checked; Pillow decodes without the interpreter lock, so the checks run
    # side by side on the writer threads.
    infos = dict(zip(unseen.values(), _storage_writer().map(inspected, unseen.values())))
    files: dict[str, tuple[str, bytes, str, bytes]] = {}  # sha256 -> (image name, bytes, thumbnail name, bytes)
    for digest, position in unseen.items():
        info = infos[position]
        if isinstance(info, ImageProblem):
            raise ScreenshotProblem(position, str(info))
        data, name = images[position]
        shot = Screenshot(sha256=digest, format=info.format, width=info.width, height=info.height, byte_size=len(data))
        files[digest] = (screenshot_path(shot, name), data, thumbnail_path(shot, name), info.thumbnail)
        new[digest] = shot

    # Creating files is slow on a busy disk (and S3 is a round trip each): the writes run side by side. The
    # thumbnail goes beside its screenshot, so pages never make one in a web request.
    def write(shot: Screenshot) -> tuple[str, str]:
        image_name, data, thumb_name, thumb = files[shot.sha256]
        return _screenshot_file_write(image_name, data), _screenshot_file_write(thumb_name, thumb) if thumb else ""

    for shot, (image_name, thumb_name) in zip(new.values(), _storage_writer().map(write, new.values())):
        shot.image.name, shot.thumbnail.name = image_name, thumb_name
    if new:
        _screenshots_insert(list(new.values()))
        known.update((shot.sha256, shot) for shot in Screenshot.objects.filter(sha256__in=list(new)))
        for shot in new.values():
            if not shot.thumbnail.name:
                transaction.on_commit(partial(screenshot_thumbnail_request, screenshot=known[shot.sha256]))
    return [known[digest] for digest in digests], len(new)


def _screenshot_file_write(name: str, data: bytes) -> str:
    # Content-addressed: a file already there (an earlier, interrupted import) holds these very bytes.
    if default_storage.exists(name):
        return name
    return default_storage.save(name, ContentFile(data))


_WRITER: ThreadPoolExecutor | None = None


def _storage_writer() -> ThreadPoolExecutor:
    global _WRITER
    if _WRITER is None:
        _WRITER = ThreadPoolExecutor(max_workers=settings.IMPORT_WRITE_THREADS, thread_name_prefix="screenshot-write")
    return _WRITER


@atomic_with_retry
def _screenshots_insert(shots: list[Screenshot]) -> None:
    # Another import may have stored the same image a moment ago: its row wins, the file is the same.
    Screenshot.objects.bulk_create(shots, ignore_conflicts=True)


def _screenshot_thumbnail_write(screenshot: Screenshot) -> str:
    # Files only (no database), so it runs on the writer threads.
    with screenshot.image.open("rb") as handle:
        data = handle.read()
    return _screenshot_file_write(thumbnail_path(screenshot, ""), make_thumbnail(data, str(screenshot.image.name)))


def screenshot_thumbnail_make(*, screenshot: Screenshot) -> bool:
    """Make the thumbnail of a screenshot stored before imports made them (a worker task or
    ``manage.py make_thumbnails``, never a web request); False when it already had one. Raises ImageProblem."""
    if Screenshot.objects.filter(pk=screenshot.pk).exclude(thumbnail="").exists():
        return False
    screenshot.thumbnail.name = _screenshot_thumbnail_write(screenshot)
    Screenshot.objects.filter(pk=screenshot.pk, thumbnail="").update(thumbnail=screenshot.thumbnail.name)
    return True


def screenshots_thumbnails_make(*, batch: int = SCREENSHOT_BATCH) -> Iterator[tuple[Screenshot, str | None]]:
    """Make every missing thumbnail; yields each screenshot with None, or what went wrong with it. Decoding runs on
    the writer threads (IMPORT_WRITE_THREADS at once, which bounds the memory), the database in this thread."""

    def attempt(shot: Screenshot) -> str | Exception:
        try:
            return _screenshot_thumbnail_write(shot)
        except (ImageProblem, OSError) as exc:
            return exc

    after = 0
    while True:
        shots = list(Screenshot.objects.filter(thumbnail="", pk__gt=after).order_by("pk")[:batch])
        if not shots:
            return
        after = shots[-1].pk
        for shot, outcome in zip(shots, _storage_writer().map(attempt, shots)):
            if isinstance(outcome, Exception):
                yield shot, str(outcome)
                continue
            Screenshot.objects.filter(pk=shot.pk, thumbnail="").update(thumbnail=outcome)
            shot.thumbnail.name = outcome
            yield shot, None


def screenshot_thumbnail_make_by_hash(*, sha256: str) -> None:
    """The worker task's side: a screenshot gone meanwhile (swept) or unreadable is logged, never retried."""
    shot = Screenshot.objects.filter(sha256=sha256).first()
    if shot is None:
        return
    try:
        screenshot_thumbnail_make(screenshot=shot)
    except (ImageProblem, FileNotFoundError) as exc:
        log.warning("no thumbnail for screenshot %s: %s", sha256[:12], exc)


def screenshot_thumbnail_request(*, screenshot: Screenshot) -> None:
    """Ask a worker for a missing thumbnail, once per screenshot in a while: a page shows a few dozen at once and
    reloads. Best effort: the page has the image itself meanwhile, and ``make_thumbnails`` makes any that remain."""
    from django.core.cache import cache

    asked = f"thumbnail-asked:{screenshot.sha256}"
    try:
        if cache.add(asked, 1, timeout=THUMBNAIL_ASK_AGAIN_S):
            try:
                task_send("traces.tasks.make_thumbnail", args=[screenshot.sha256], retry=False)
            except Exception:
                cache.delete(asked)  # nobody was asked: the next view asks again
                raise
    except Exception as exc:  # noqa: BLE001 - a broker or cache outage must not cost the page its image
        log.warning("could not ask for the thumbnail of %s: %s", screenshot.sha256[:12], exc)


THUMBNAIL_ASK_AGAIN_S = 600
