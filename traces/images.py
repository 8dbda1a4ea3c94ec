"""Checking screenshot bytes before we keep them, and making thumbnails."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

from django.conf import settings
from PIL import Image, UnidentifiedImageError

ACCEPTED_FORMATS = {"PNG", "JPEG", "WEBP"}
THUMBNAIL_WIDTH = 320


class ImageProblem(Exception):
    pass


@dataclass(frozen=True)
class ImageInfo:
    format: str
    width: int
    height: int
    # The page's thumbnail (WEBP), made from the decode that checked the image: no second decode, and none in a
    # web request.
    thumbnail: bytes = b""


def inspect_image(data: bytes, name: str, *, decode: bool = True) -> ImageInfo:
    """Identify and check an image: its format and size, PNG chunk checksums through IEND (``verify``), its pixel data
    decoded once (a file with good checksums and undecodable data is refused here, not on every later view), and a
    JPEG's end-of-image marker (runners killed mid-write leave truncated files). The thumbnail is made from that
    decode.

    ``decode=False`` (a web request: a runner's push) checks everything the file's header and chunks tell — format,
    size against the pixel limit, checksums, the JPEG's end — without decoding a pixel, and makes no thumbnail: a
    40 Mpx screenshot costs the web process its file size, not 120 MB of pixels. The worker that makes the
    thumbnail decodes it (``traces.services.screenshot_thumbnail_request``).
    """
    if not data:
        raise ImageProblem(f"{name}: empty file")
    try:
        with Image.open(io.BytesIO(data)) as image:
            fmt, (width, height) = image.format, image.size
            if fmt not in ACCEPTED_FORMATS:
                raise ImageProblem(f"{name}: {fmt} images are not accepted (PNG, JPEG or WEBP)")
            if width * height > settings.IMPORT_MAX_IMAGE_PIXELS:
                raise ImageProblem(
                    f"{name}: {width}×{height} is over the {settings.IMPORT_MAX_IMAGE_PIXELS}-pixel limit"
                )
            if fmt == "PNG":
                image.verify()
        if fmt == "JPEG" and not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
            raise ImageProblem(f"{name}: truncated JPEG (no end-of-image marker)")
        if not decode:
            return ImageInfo(format=fmt, width=width, height=height)
        # verify() reads chunk checksums only: a PNG (or JPEG) whose pixel data cannot be decoded passes it and then
        # fails every page that shows it. Decode it once here, inside the pixel limit checked above, and make the
        # thumbnail from that decode.
        with Image.open(io.BytesIO(data)) as image:
            thumbnail = _decoded_thumbnail(image)
    except ImageProblem:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise ImageProblem(unreadable_image(name, exc)) from None
    return ImageInfo(format=fmt, width=width, height=height, thumbnail=thumbnail)


def unreadable_image(name: str, exc: Exception) -> str:
    """Why Pillow could not read ``name``, in words: its messages name the in-memory buffer it was given
    ("cannot identify image file <_io.BytesIO object at 0x…>"), which says nothing to whoever sent the file."""
    if isinstance(exc, UnidentifiedImageError):
        return f"{name}: not a readable image (its bytes are no PNG, JPEG or WEBP image)"
    said = re.sub(r"\s*<_io\.BytesIO object at 0x[0-9a-fA-F]+>", "", str(exc))
    return f"{name}: not a readable image ({exc.__class__.__name__}: {said})"


def thumbnail_size(width: int, height: int) -> tuple[int, int]:
    """The thumbnail pages show: THUMBNAIL_WIDTH wide (never scaled up), the image's aspect kept."""
    thumb_width = max(1, min(THUMBNAIL_WIDTH, width))
    return thumb_width, max(1, round(height * thumb_width / width))


def _decoded_thumbnail(image: Image.Image) -> bytes:
    """Decode an opened image whole and return its thumbnail (WEBP). A JPEG decodes at the smallest of 1/2, 1/4,
    1/8 scale that still covers the thumbnail (``draft``): the whole entropy-coded stream is read, so it is
    checked as fully, at a fraction of the memory and time."""
    size = thumbnail_size(*image.size)
    if image.format == "JPEG":
        image.draft("RGB", size)
    image.load()
    thumb = image.convert("RGB").resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    out = io.BytesIO()
    thumb.save(out, format="WEBP", quality=70, method=4)
    return out.getvalue()


def make_thumbnail(data: bytes, name: str) -> bytes:
    """The thumbnail of stored image bytes (a screenshot imported before the import made them); on a worker.
    Raises ImageProblem."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            return _decoded_thumbnail(image)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise ImageProblem(unreadable_image(name, exc)) from None
