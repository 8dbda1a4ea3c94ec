"""Checking screenshot bytes before we keep them, and making thumbnails."""

from __future__ import annotations

import io
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


def inspect_image(data: bytes, name: str) -> ImageInfo:
    """Identify and sanity-check an image from its header and structure, without decoding every pixel.

    PNG chunks are CRC-checked through IEND (``verify``); JPEGs must end with their EOI marker, which
    catches the truncated files that runners leave behind when they are killed mid-write.
    """
    if not data:
        raise ImageProblem(f"{name}: empty file")
    try:
        with Image.open(io.BytesIO(data)) as image:
            fmt, (width, height) = image.format, image.size
            if fmt not in ACCEPTED_FORMATS:
                raise ImageProblem(f"{name}: {fmt} images are not accepted (PNG, JPEG or WEBP)")
            if width * height > settings.IMPORT_MAX_IMAGE_PIXELS:
                raise ImageProblem(f"{name}: {width}×{height} is over the {settings.IMPORT_MAX_IMAGE_PIXELS}-pixel limit")
            if fmt == "PNG":
                image.verify()
    except ImageProblem:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise ImageProblem(f"{name}: not a readable image ({exc.__class__.__name__}: {exc})") from None
    if fmt == "JPEG" and not data.rstrip(b"\x00").endswith(b"\xff\xd9"):
        raise ImageProblem(f"{name}: truncated JPEG (no end-of-image marker)")
    return ImageInfo(format=fmt, width=width, height=height)


def make_thumbnail(data: bytes, width: int = THUMBNAIL_WIDTH) -> bytes:
    with Image.open(io.BytesIO(data)) as image:
        image.draft("RGB", (width, width * 4))  # JPEG decodes at reduced scale: much faster
        image = image.convert("RGB")
        height = max(1, round(image.height * width / image.width))
        thumb = image.resize((width, height), Image.Resampling.BILINEAR, reducing_gap=2.0)
    out = io.BytesIO()
    thumb.save(out, format="WEBP", quality=70, method=4)
    return out.getvalue()
