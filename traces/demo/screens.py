"""Believable UI screenshots rendered with Pillow, with the boxes of their named widgets.

Every renderer is a pure function of a small state dict::

    screen = render_settings({"page": "display", "brightness": 45})
    screen.image            # PIL.Image.Image, 1920x1080 RGB
    screen.widgets["sidebar.bluetooth"]   # Box(x0, y0, x1, y1), pixels, x1/y1 exclusive
    screen.center("toggle.night_light")   # (x, y) float pixel centre

Renderers: :func:`render_settings` and :func:`render_files` (desktop, 1920x1080), :func:`render_web` (a browser,
1280x800), :func:`render_phone` (1080x2400). No external assets: the text font is the one bundled with Pillow
(``ImageFont.load_default(size=...)``, Pillow >= 10.1), laid out with the BASIC engine so that output does not
depend on whether libraqm is installed; icons are drawn from simple shapes. Rounded shapes and icons are
anti-aliased with cached 4x-supersampled masks, which keeps a full screen well under 150 ms.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

from PIL import Image, ImageChops, ImageDraw, ImageFilter, ImageFont

Color = tuple[int, int, int]

DESKTOP_SIZE = (1920, 1080)
WEB_SIZE = (1280, 800)
PHONE_SIZE = (1080, 2400)


# --------------------------------------------------------------------------------------------------------------
# Geometry


@dataclass(frozen=True)
class Box:
    """An axis-aligned pixel box; ``x1``/``y1`` are exclusive."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def w(self) -> int:
        return self.x1 - self.x0

    @property
    def h(self) -> int:
        return self.y1 - self.y0

    @property
    def center(self) -> tuple[float, float]:
        return ((self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2)

    def point(self, fx: float = 0.5, fy: float = 0.5) -> tuple[float, float]:
        """The point at fractions ``fx``, ``fy`` of the box (0.5, 0.5 is the centre)."""
        return (self.x0 + fx * self.w, self.y0 + fy * self.h)

    def contains(self, x: float, y: float) -> bool:
        return self.x0 <= x < self.x1 and self.y0 <= y < self.y1

    def inset(self, dx: int, dy: int | None = None) -> "Box":
        dy = dx if dy is None else dy
        return Box(self.x0 + dx, self.y0 + dy, self.x1 - dx, self.y1 - dy)

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.x0, self.y0, self.x1, self.y1)


@dataclass
class Screen:
    """A rendered screen: the image and the boxes of its named widgets (pixels)."""

    image: Image.Image
    widgets: dict[str, Box]
    kind: str
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size

    def box(self, name: str) -> Box:
        try:
            return self.widgets[name]
        except KeyError:
            raise KeyError(f"{self.kind} screen has no widget {name!r}") from None

    def center(self, name: str) -> tuple[float, float]:
        return self.box(name).center


# --------------------------------------------------------------------------------------------------------------
# Colours, fonts, cached masks


def rgb(hex_color: str) -> Color:
    h = hex_color.lstrip("#")
    return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16))


def mix(a: Color, b: Color, t: float) -> Color:
    """``a`` moved a fraction ``t`` towards ``b``."""
    return tuple(round(x + (y - x) * t) for x, y in zip(a, b))  # type: ignore[return-value]


_DEJAVU = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
)


@lru_cache(maxsize=None)
def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled font at ``size`` px, BASIC layout (identical output with or without libraqm)."""
    try:
        f = ImageFont.load_default(size=size)
        if isinstance(f, ImageFont.FreeTypeFont):
            return f.font_variant(layout_engine=ImageFont.Layout.BASIC)
    except (TypeError, OSError, ImportError):  # Pillow < 10.1 or no FreeType
        pass
    for path in _DEJAVU:  # pragma: no cover - only on old Pillow
        try:
            return ImageFont.truetype(path, size, layout_engine=ImageFont.Layout.BASIC)
        except OSError:
            continue
    return ImageFont.load_default()  # pragma: no cover


def text_width(s: str, size: int, bold: bool = False) -> float:
    if bold:
        return font(size * 2).getlength(s) / 2 + 1
    return font(size).getlength(s)


def fit_text(s: str, size: int, max_w: float, bold: bool = False) -> str:
    """``s``, shortened with an ellipsis to fit ``max_w`` pixels."""
    if text_width(s, size, bold) <= max_w:
        return s
    while s and text_width(s + "…", size, bold) > max_w:
        s = s[:-1]
    return s.rstrip() + "…"


def wrap_text(s: str, size: int, max_w: float, bold: bool = False) -> list[str]:
    lines: list[str] = []
    cur = ""
    for word in s.split():
        cand = f"{cur} {word}" if cur else word
        if cur and text_width(cand, size, bold) > max_w:
            lines.append(cur)
            cur = word
        else:
            cur = cand
    if cur:
        lines.append(cur)
    return lines or [""]


@lru_cache(maxsize=8192)
def _text_mask(s: str, size: int, bold: bool, anchor: str) -> tuple[Image.Image, int, int]:
    """An 'L' mask of ``s`` and the offset of its top-left corner from the anchor point."""
    if bold:  # semibold: 2x size with a 1px stroke, then halved
        f = font(size * 2)
        l, t, r, b = f.getbbox(s, anchor=anchor, stroke_width=1)
        l -= l % 2
        t -= t % 2
        w, h = r - l + 2, b - t + 2
        w += w % 2
        h += h % 2
        m = Image.new("L", (w, h), 0)
        ImageDraw.Draw(m).text((-l, -t), s, font=f, fill=255, anchor=anchor, stroke_width=1, stroke_fill=255)
        return m.reduce(2), l // 2, t // 2
    f = font(size)
    l, t, r, b = f.getbbox(s, anchor=anchor)
    m = Image.new("L", (max(1, r - l), max(1, b - t)), 0)
    ImageDraw.Draw(m).text((-l, -t), s, font=f, fill=255, anchor=anchor)
    return m, l, t


_SS = 4  # supersampling factor of the shape masks


@lru_cache(maxsize=256)
def _corner(r: int) -> Image.Image:
    """Top-left quarter disc of radius ``r``, anti-aliased."""
    n = 2 * r * _SS
    m = Image.new("L", (n, n), 0)
    ImageDraw.Draw(m).ellipse((0, 0, n - 1, n - 1), fill=255)
    return m.reduce(_SS).crop((0, 0, r, r))


@lru_cache(maxsize=192)
def _rrect_mask(w: int, h: int, r: int, corners: tuple[bool, bool, bool, bool] = (True,) * 4) -> Image.Image:
    w, h = max(1, w), max(1, h)
    r = max(0, min(r, w // 2, h // 2))
    m = Image.new("L", (w, h), 255)
    if r:
        c = _corner(r)
        tl, tr, br, bl = corners
        if tl:
            m.paste(c, (0, 0))
        if tr:
            m.paste(c.transpose(Image.Transpose.FLIP_LEFT_RIGHT), (w - r, 0))
        if br:
            m.paste(c.transpose(Image.Transpose.ROTATE_180), (w - r, h - r))
        if bl:
            m.paste(c.transpose(Image.Transpose.FLIP_TOP_BOTTOM), (0, h - r))
    return m


@lru_cache(maxsize=96)
def _ring_mask(w: int, h: int, r: int, width: int, corners: tuple[bool, bool, bool, bool]) -> Image.Image:
    outer = _rrect_mask(w, h, r, corners)
    inner = Image.new("L", (w, h), 0)
    if w > 2 * width and h > 2 * width:
        inner.paste(_rrect_mask(w - 2 * width, h - 2 * width, max(0, r - width), corners), (width, width))
    return ImageChops.subtract(outer, inner)


@lru_cache(maxsize=256)
def _disc(d: int) -> Image.Image:
    n = d * _SS
    m = Image.new("L", (n, n), 0)
    ImageDraw.Draw(m).ellipse((0, 0, n - 1, n - 1), fill=255)
    return m.reduce(_SS)


@lru_cache(maxsize=128)
def _disc_ring(d: int, width: int) -> Image.Image:
    inner = Image.new("L", (d, d), 0)
    if d > 2 * width:
        inner.paste(_disc(d - 2 * width), (width, width))
    return ImageChops.subtract(_disc(d), inner)


@lru_cache(maxsize=32)
def _sheen_mask(size: int, r: int) -> Image.Image:
    """A rounded square that fades from 30% at the top to 0 at the bottom (a soft highlight)."""
    grad = Image.linear_gradient("L").resize((size, size)).point(lambda v: (255 - v) * 77 // 255)
    return ImageChops.multiply(grad, _rrect_mask(size, size, r))


@lru_cache(maxsize=64)
def _shadow_mask(w: int, h: int, r: int, blur: int, alpha: int) -> Image.Image:
    pad = blur * 2
    m = Image.new("L", (w + 2 * pad, h + 2 * pad), 0)
    m.paste(_rrect_mask(w, h, r), (pad, pad))
    # blur a quarter-size copy: same look, a fraction of the cost
    small = m.resize((max(1, m.width // 4), max(1, m.height // 4)), Image.Resampling.BILINEAR)
    small = small.filter(ImageFilter.GaussianBlur(max(1, blur / 4)))
    big = small.resize(m.size, Image.Resampling.BILINEAR)
    return big.point(lambda v: v * alpha // 255)


@lru_cache(maxsize=16)
def _wallpaper(w: int, h: int, stops: tuple[Color, Color, Color], blobs: tuple[tuple[float, float, float, Color], ...]) -> Image.Image:
    """A smooth abstract wallpaper: a diagonal 3-stop gradient plus soft colour blobs."""
    sw, sh = 96, max(2, round(96 * h / w))
    small = Image.new("RGB", (sw, sh))
    px = small.load()
    c0, c1, c2 = stops
    for y in range(sh):
        for x in range(sw):
            t = (x / (sw - 1)) * 0.55 + (y / (sh - 1)) * 0.45
            col = mix(c0, c1, t / 0.5) if t < 0.5 else mix(c1, c2, (t - 0.5) / 0.5)
            for bx, by, br, bc in blobs:
                dx, dy = x / sw - bx, (y / sh - by) * h / w
                k = math.exp(-(dx * dx + dy * dy) / (br * br))
                col = mix(col, bc, 0.65 * k)
            px[x, y] = col
    return small.resize((w, h), Image.Resampling.BICUBIC)


# --------------------------------------------------------------------------------------------------------------
# Icons: drawn on a 24-unit grid into a 4x mask, then reduced


def _icon_grid(d: ImageDraw.ImageDraw, u: float):
    def W(v: float) -> int:
        return max(1, round(v * u))

    def P(pts):
        return [(x * u, y * u) for x, y in pts]

    def pl(pts, w=2.0, closed=False, fill=255):
        pts = P(pts)
        if closed:
            pts = pts + [pts[0]]
        d.line(pts, fill=fill, width=W(w), joint="curve")
        r = w * u / 2
        for x, y in pts:
            d.ellipse((x - r, y - r, x + r, y + r), fill=fill)

    def circ(cx, cy, r, w=None, fill=255):
        if w is None:
            d.ellipse((u * (cx - r), u * (cy - r), u * (cx + r), u * (cy + r)), fill=fill)
        else:
            R = r + w / 2
            d.ellipse((u * (cx - R), u * (cy - R), u * (cx + R), u * (cy + R)), outline=fill, width=W(w))

    def arc(cx, cy, r, a0, a1, w=2.0, fill=255):
        R = r + w / 2
        d.arc((u * (cx - R), u * (cy - R), u * (cx + R), u * (cy + R)), a0, a1, fill=fill, width=W(w))
        rr = w * u / 2
        for a in (a0, a1):
            x, y = u * (cx + r * math.cos(math.radians(a))), u * (cy + r * math.sin(math.radians(a)))
            d.ellipse((x - rr, y - rr, x + rr, y + rr), fill=fill)

    def poly(pts, fill=255):
        d.polygon(P(pts), fill=fill)

    def rr(x0, y0, x1, y1, r, w=None, fill=255):
        box = (u * x0, u * y0, u * x1, u * y1)
        if w is None:
            d.rounded_rectangle(box, radius=r * u, fill=fill)
        else:
            d.rounded_rectangle(box, radius=r * u, outline=fill, width=W(w))

    return pl, circ, arc, poly, rr


def _draw_icon(name: str, d: ImageDraw.ImageDraw, u: float) -> None:  # noqa: C901 - a table of drawings
    pl, circ, arc, poly, rr = _icon_grid(d, u)
    if name == "wifi":
        for r in (15, 10, 5):
            arc(12, 20, r, 225, 315, 2.2)
        circ(12, 19.5, 1.8)
    elif name == "bluetooth":
        pl([(6.5, 7.5), (17, 16.5), (12, 21.5), (12, 2.5), (17, 7.5), (6.5, 16.5)], 2)
    elif name == "globe":
        circ(12, 12, 9, 2)
        d.ellipse((u * 8, u * 3, u * 16, u * 21), outline=255, width=max(1, round(1.8 * u)))
        pl([(3.5, 12), (20.5, 12)], 1.8)
    elif name in ("display", "desktop"):
        rr(2.5, 3.5, 21.5, 16.5, 2, w=2)
        pl([(12, 17), (12, 20)], 2)
        pl([(8, 20.5), (16, 20.5)], 2)
    elif name == "sound":
        poly([(3, 9), (7, 9), (12.5, 4.5), (12.5, 19.5), (7, 15), (3, 15)])
        arc(12.5, 12, 4, -50, 50, 2)
        arc(12.5, 12, 8, -55, 55, 2)
    elif name == "bell":
        d.pieslice((u * 5, u * 3, u * 19, u * 19), 180, 360, fill=255)
        rr(5, 10, 19, 17.5, 0)
        poly([(3, 18.5), (5, 16), (19, 16), (21, 18.5)])
        circ(12, 20.5, 2.2)
    elif name == "contrast":
        circ(12, 12, 9, 2)
        d.pieslice((u * 3, u * 3, u * 21, u * 21), 90, 270, fill=255)
    elif name == "lock":
        arc(12, 9.5, 4.5, 180, 360, 2)
        pl([(7.5, 9.5), (7.5, 11)], 2)
        pl([(16.5, 9.5), (16.5, 11)], 2)
        rr(5, 11, 19, 21, 2)
    elif name == "shield":
        pl([(12, 2.5), (19.5, 5.5), (19.5, 11), (12, 21.5), (4.5, 11), (4.5, 5.5)], 2, closed=True)
        pl([(8.5, 12), (11, 14.5), (15.5, 9.5)], 2)
    elif name == "battery":
        rr(2, 7, 19, 17, 2.5, w=2)
        rr(19.5, 10, 22, 14, 1)
        rr(4.5, 9.5, 14, 14.5, 1)
    elif name == "info":
        circ(12, 12, 9, 2)
        circ(12, 7.5, 1.4)
        pl([(12, 11), (12, 17)], 2.2)
    elif name == "search":
        circ(10, 10, 6, 2.2)
        pl([(14.5, 14.5), (20, 20)], 2.6)
    elif name == "chevron_right":
        pl([(9, 5), (16, 12), (9, 19)], 2.2)
    elif name == "chevron_left":
        pl([(15, 5), (8, 12), (15, 19)], 2.2)
    elif name == "chevron_down":
        pl([(5, 9), (12, 16), (19, 9)], 2.2)
    elif name == "chevron_up":
        pl([(5, 15), (12, 8), (19, 15)], 2.2)
    elif name == "arrow_left":
        pl([(4, 12), (20, 12)], 2.2)
        pl([(10.5, 5.5), (4, 12), (10.5, 18.5)], 2.2)
    elif name == "arrow_right":
        pl([(4, 12), (20, 12)], 2.2)
        pl([(13.5, 5.5), (20, 12), (13.5, 18.5)], 2.2)
    elif name == "reload":
        arc(12, 12, 7.5, 300, 600, 2.2)
        poly([(16.5, 3), (21.5, 6.5), (16, 9.5)])
    elif name == "close":
        pl([(6, 6), (18, 18)], 2.2)
        pl([(18, 6), (6, 18)], 2.2)
    elif name == "minimize":
        pl([(6, 12), (18, 12)], 2.2)
    elif name == "maximize":
        rr(6, 6, 18, 18, 1.5, w=2)
    elif name == "folder":
        poly([(2.5, 5), (9, 5), (11, 7.5), (21.5, 7.5), (21.5, 19.5), (2.5, 19.5)])
    elif name == "file":
        pl([(6, 2.5), (13.5, 2.5), (18.5, 7.5), (18.5, 21.5), (6, 21.5)], 2, closed=True)
        pl([(13.5, 2.5), (13.5, 7.5), (18.5, 7.5)], 2)
    elif name == "home":
        pl([(3, 11.5), (12, 3.5), (21, 11.5)], 2.2)
        pl([(5.5, 10), (5.5, 20.5), (18.5, 20.5), (18.5, 10)], 2)
        rr(10, 14, 14, 20.5, 0.5)
    elif name == "download":
        pl([(12, 3), (12, 15)], 2.2)
        pl([(7, 10.5), (12, 15.5), (17, 10.5)], 2.2)
        pl([(4, 20.5), (20, 20.5)], 2.2)
    elif name == "music":
        pl([(9, 18), (9, 5), (19, 3), (19, 16)], 2)
        circ(6.5, 18, 3)
        circ(16.5, 16, 3)
    elif name == "image":
        rr(2.5, 4, 21.5, 20, 2, w=2)
        poly([(4.5, 18), (10, 11), (14, 15.5), (16, 13.5), (19.5, 18)])
        circ(16, 8.5, 1.8)
    elif name == "video":
        rr(2, 5.5, 15.5, 18.5, 2, w=2)
        poly([(16, 10), (22, 6.5), (22, 17.5), (16, 14)])
    elif name == "trash":
        pl([(3.5, 6), (20.5, 6)], 2)
        pl([(9, 5.5), (9.5, 3), (14.5, 3), (15, 5.5)], 1.8)
        pl([(5.5, 6.5), (6.8, 21), (17.2, 21), (18.5, 6.5)], 2)
        pl([(10, 10), (10, 17)], 1.6)
        pl([(14, 10), (14, 17)], 1.6)
    elif name == "star":
        pts = []
        for i in range(10):
            a = math.radians(-90 + i * 36)
            r = 9.5 if i % 2 == 0 else 4.2
            pts.append((12 + r * math.cos(a), 12.8 + r * math.sin(a)))
        pl(pts, 1.8, closed=True)
    elif name == "clock":
        circ(12, 12, 9, 2)
        pl([(12, 7), (12, 12), (15.5, 14)], 2)
    elif name == "plus":
        pl([(12, 5), (12, 19)], 2.4)
        pl([(5, 12), (19, 12)], 2.4)
    elif name == "send":
        poly([(3, 3.5), (21.5, 12), (3, 20.5), (5.5, 13.5), (13, 12), (5.5, 10.5)])
    elif name == "mic":
        rr(9, 2.5, 15, 14.5, 3)
        arc(12, 11, 6, 0, 180, 2)
        pl([(12, 17.5), (12, 21)], 2)
    elif name == "camera":
        rr(2.5, 7, 21.5, 19.5, 3, w=2)
        poly([(8, 7.5), (9.5, 4.5), (14.5, 4.5), (16, 7.5)])
        circ(12, 13, 3.8, 2)
    elif name == "apps":
        for gy in (5, 12, 19):
            for gx in (5, 12, 19):
                circ(gx, gy, 2.2)
    elif name == "grid_view":
        for x0, y0 in ((4, 4), (13, 4), (4, 13), (13, 13)):
            rr(x0, y0, x0 + 7, y0 + 7, 1.5, w=1.8)
    elif name == "list_view":
        for y in (6, 12, 18):
            circ(5, y, 1.5)
            pl([(9, y), (20, y)], 2)
    elif name == "more_vert":
        for y in (5.5, 12, 18.5):
            circ(12, y, 2)
    elif name == "more_horiz":
        for x in (5.5, 12, 18.5):
            circ(x, 12, 2)
    elif name == "menu":
        for y in (6.5, 12, 17.5):
            pl([(4, y), (20, y)], 2)
    elif name == "gear":
        pts = []
        for i in range(8):
            a = i * 45
            for da, r in ((-16, 7.8), (-9, 10.5), (9, 10.5), (16, 7.8)):
                t = math.radians(a + da)
                pts.append((12 + r * math.cos(t), 12 + r * math.sin(t)))
        poly(pts)
        circ(12, 12, 3.4, fill=0)
    elif name == "message":
        rr(2.5, 3.5, 21.5, 17, 4)
        poly([(6, 16), (6, 21.5), (12, 16)])
    elif name == "phone":
        poly([(5.5, 2.5), (9.5, 2.5), (11, 7.5), (8.5, 9.5), (14.5, 15.5), (16.5, 13), (21.5, 14.5),
              (21.5, 18.5), (19, 21.5), (16, 21.5), (8, 17), (3.5, 10), (2.5, 6)])
    elif name == "user":
        circ(12, 8, 4.2)
        d.pieslice((u * 4, u * 13.5, u * 20, u * 29.5), 180, 360, fill=255)
    elif name == "moon":
        circ(12, 12, 9)
        circ(16, 8.5, 7.5, fill=0)
    elif name == "sun":
        circ(12, 12, 4.5)
        for i in range(8):
            t = math.radians(i * 45)
            pl([(12 + 7.5 * math.cos(t), 12 + 7.5 * math.sin(t)), (12 + 10 * math.cos(t), 12 + 10 * math.sin(t))], 2)
    elif name == "cloud":
        circ(9, 13, 5)
        circ(14.5, 10.5, 6)
        circ(18.5, 15, 3.5)
        rr(4, 13, 21, 18.5, 2.5)
    elif name == "signal":
        for i, h in enumerate((5, 9, 13, 17)):
            x = 3.5 + i * 4.6
            rr(x, 20 - h, x + 3, 20, 0.8)
    elif name == "check":
        pl([(5, 12.5), (10, 17.5), (19, 7)], 2.4)
    elif name == "calendar":
        rr(3, 4.5, 21, 21, 2.5, w=2)
        rr(3, 4.5, 21, 9.5, 0)
        pl([(8, 2.5), (8, 6)], 2)
        pl([(16, 2.5), (16, 6)], 2)
        for gx in (8, 12, 16):
            for gy in (13, 17):
                circ(gx, gy, 1.3)
    elif name == "notes":
        rr(4, 2.5, 20, 21.5, 2.5, w=2)
        for y in (8, 12, 16):
            pl([(8, y), (16, y)], 1.8)
    elif name == "pin":
        d.pieslice((u * 5, u * 2, u * 19, u * 16), 150, 390, fill=255)
        poly([(6.2, 12.5), (12, 22), (17.8, 12.5)])
        circ(12, 9, 2.6, fill=0)
    elif name == "mail":
        rr(2.5, 5, 21.5, 19, 2, w=2)
        pl([(3.5, 6.5), (12, 13), (20.5, 6.5)], 2)
    elif name == "calculator":
        rr(4.5, 2.5, 19.5, 21.5, 2.5, w=2)
        rr(7.5, 5.5, 16.5, 9, 0.8)
        for gx in (8.5, 12, 15.5):
            for gy in (13, 17.5):
                circ(gx, gy, 1.3)
    elif name == "bag":
        poly([(4, 8), (20, 8), (19, 21.5), (5, 21.5)])
        arc(12, 8, 4, 180, 360, 2)
    elif name == "headphones":
        arc(12, 13, 8.5, 180, 360, 2.2)
        rr(2.5, 13, 7, 20.5, 2)
        rr(17, 13, 21.5, 20.5, 2)
    elif name == "mouse":
        rr(6, 2.5, 18, 21.5, 6, w=2)
        pl([(12, 5.5), (12, 9.5)], 2)
    elif name == "keyboard":
        rr(2, 6, 22, 18.5, 2, w=2)
        for gx in (6, 9.3, 12.6, 16, 19):
            circ(gx, 10, 1)
        pl([(7.5, 14.5), (16.5, 14.5)], 1.8)
    elif name == "smartphone":
        rr(6, 2, 18, 22, 2.5, w=2)
        pl([(10.5, 18.5), (13.5, 18.5)], 1.6)
    elif name == "speaker":
        rr(5, 2.5, 19, 21.5, 3, w=2)
        circ(12, 14.5, 3.5, 2)
        circ(12, 7, 1.4)
    elif name == "watch":
        rr(6.5, 6, 17.5, 18, 3, w=2)
        rr(8.5, 2, 15.5, 6.5, 1)
        rr(8.5, 17.5, 15.5, 22, 1)
    elif name == "car":
        poly([(3, 12), (6, 6.5), (18, 6.5), (21, 12), (21, 18), (3, 18)])
        circ(7.5, 14, 1.6, fill=0)
        circ(16.5, 14, 1.6, fill=0)
        rr(4.5, 17, 8.5, 20.5, 1)
        rr(15.5, 17, 19.5, 20.5, 1)
    elif name == "smile":
        circ(12, 12, 9, 2)
        circ(9, 10, 1.4)
        circ(15, 10, 1.4)
        arc(12, 12.5, 4.5, 25, 155, 1.8)
    elif name == "backspace":
        pl([(8, 5), (21, 5), (21, 19), (8, 19), (2.5, 12)], 2, closed=True)
        pl([(11.5, 9), (17, 15)], 1.8)
        pl([(17, 9), (11.5, 15)], 1.8)
    elif name == "shift":
        pl([(12, 3.5), (21, 12.5), (16, 12.5), (16, 20), (8, 20), (8, 12.5), (3, 12.5)], 2, closed=True)
    elif name == "enter":
        pl([(19.5, 5), (19.5, 14), (5, 14)], 2.2)
        pl([(9.5, 9.5), (5, 14), (9.5, 18.5)], 2.2)
    elif name == "sort_up":
        pl([(12, 19), (12, 5)], 2)
        pl([(7, 10), (12, 5), (17, 10)], 2)
    elif name == "sidebar":
        rr(2.5, 4, 21.5, 20, 2, w=2)
        pl([(9, 4.5), (9, 19.5)], 2)
    elif name == "terminal":
        pl([(5, 7.5), (10, 12), (5, 16.5)], 2.2)
        pl([(12.5, 17), (19, 17)], 2.2)
    elif name == "power":
        arc(12, 13, 8, 300, 600, 2.2)
        pl([(12, 3), (12, 11)], 2.2)
    else:
        raise KeyError(f"unknown icon {name!r}")


@lru_cache(maxsize=1024)
def _icon_mask(name: str, size: int) -> Image.Image:
    n = size * _SS
    m = Image.new("L", (n, n), 0)
    _draw_icon(name, ImageDraw.Draw(m), n / 24)
    return m.reduce(_SS)


# --------------------------------------------------------------------------------------------------------------
# Painter


class Painter:
    """An RGB canvas with anti-aliased primitives and a register of named widget boxes."""

    def __init__(self, size: tuple[int, int], bg: Color = (255, 255, 255)) -> None:
        self.img = Image.new("RGB", size, bg)
        self.draw = ImageDraw.Draw(self.img)
        self.widgets: dict[str, Box] = {}

    @property
    def W(self) -> int:
        return self.img.width

    @property
    def H(self) -> int:
        return self.img.height

    # widgets
    def add(self, name: str, box: Box | tuple[float, float, float, float]) -> Box:
        if not isinstance(box, Box):
            box = Box(*(round(v) for v in box))
        self.widgets[name] = box
        return box

    def screen(self, kind: str, state: Mapping[str, Any]) -> Screen:
        return Screen(self.img, dict(self.widgets), kind, dict(state))

    # primitives
    def mask(self, color: Color, x: int, y: int, m: Image.Image) -> None:
        self.img.paste(color, (x, y, x + m.width, y + m.height), m)

    def rect(self, box, fill: Color) -> None:
        x0, y0, x1, y1 = (round(v) for v in (box.as_tuple() if isinstance(box, Box) else box))
        if x1 > x0 and y1 > y0:
            self.draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=fill)

    def hline(self, x0: float, x1: float, y: float, color: Color, width: int = 1) -> None:
        self.rect((x0, y, x1, y + width), color)

    def vline(self, x: float, y0: float, y1: float, color: Color, width: int = 1) -> None:
        self.rect((x, y0, x + width, y1), color)

    def rrect(self, box, r: int, fill: Color | None = None, outline: Color | None = None, width: int = 1,
              corners: tuple[bool, bool, bool, bool] = (True, True, True, True)) -> None:
        x0, y0, x1, y1 = (round(v) for v in (box.as_tuple() if isinstance(box, Box) else box))
        w, h = x1 - x0, y1 - y0
        if w <= 0 or h <= 0:
            return
        r = round(r)
        if outline is not None and fill is not None:
            self.mask(outline, x0, y0, _rrect_mask(w, h, r, corners))
            if w > 2 * width and h > 2 * width:
                self.mask(fill, x0 + width, y0 + width, _rrect_mask(w - 2 * width, h - 2 * width, max(0, r - width), corners))
        elif fill is not None:
            self.mask(fill, x0, y0, _rrect_mask(w, h, r, corners))
        elif outline is not None:
            self.mask(outline, x0, y0, _ring_mask(w, h, r, width, corners))

    def circle(self, cx: float, cy: float, r: float, fill: Color | None = None, outline: Color | None = None,
               width: int = 1) -> None:
        d = max(1, round(2 * r))
        x, y = round(cx - d / 2), round(cy - d / 2)
        if fill is not None:
            self.mask(fill, x, y, _disc(d))
        if outline is not None:
            self.mask(outline, x, y, _disc_ring(d, width))

    def shadow(self, box, r: int, blur: int = 16, alpha: int = 60, dy: int = 4, color: Color = (0, 0, 0)) -> None:
        x0, y0, x1, y1 = (round(v) for v in (box.as_tuple() if isinstance(box, Box) else box))
        m = _shadow_mask(x1 - x0, y1 - y0, r, blur, alpha)
        self.mask(color, x0 - 2 * blur, y0 - 2 * blur + dy, m)

    def text(self, x: float, y: float, s: str, size: int = 15, color: Color = (17, 24, 39), anchor: str = "lm",
             bold: bool = False, max_w: float | None = None) -> float:
        """Draw ``s`` anchored at (x, y) (Pillow anchors, default left-middle); return its width."""
        if max_w is not None:
            s = fit_text(s, size, max_w, bold)
        if not s:
            return 0.0
        m, ox, oy = _text_mask(s, size, bold, anchor)
        self.mask(color, round(x) + ox, round(y) + oy, m)
        return text_width(s, size, bold)

    def icon(self, name: str, cx: float, cy: float, size: int, color: Color) -> None:
        m = _icon_mask(name, size)
        self.mask(color, round(cx - size / 2), round(cy - size / 2), m)

    def paste(self, im: Image.Image, x: int, y: int, mask: Image.Image | None = None) -> None:
        self.img.paste(im, (x, y), mask)


# --------------------------------------------------------------------------------------------------------------
# Themes and shared widgets

ACCENTS: dict[str, Color] = {
    "blue": rgb("#2563EB"),
    "teal": rgb("#0D9488"),
    "green": rgb("#16A34A"),
    "yellow": rgb("#CA8A04"),
    "orange": rgb("#EA580C"),
    "red": rgb("#DC2626"),
    "pink": rgb("#DB2777"),
    "purple": rgb("#7C3AED"),
}


def theme(dark: bool = False, accent: str = "blue") -> dict[str, Color]:
    a = ACCENTS.get(accent, ACCENTS["blue"])
    if dark:
        t = dict(
            window=rgb("#1E2028"), header=rgb("#262830"), sidebar=rgb("#23252D"), border=rgb("#363945"),
            card=rgb("#2A2D36"), card_border=rgb("#383B47"), text=rgb("#ECEEF2"), muted=rgb("#9CA3AF"),
            faint=rgb("#6B7280"), hover=rgb("#343743"), toggle_off=rgb("#4B5060"), track=rgb("#454957"),
            input=rgb("#22242B"), knob=rgb("#FFFFFF"), danger=rgb("#F87171"), success=rgb("#4ADE80"),
        )
        a = mix(a, (255, 255, 255), 0.18)
        t.update(accent=a, accent_soft=mix(t["window"], a, 0.26), accent_text=mix(a, (255, 255, 255), 0.45))
    else:
        t = dict(
            window=rgb("#FFFFFF"), header=rgb("#F7F8FA"), sidebar=rgb("#F3F4F7"), border=rgb("#E3E6EB"),
            card=rgb("#FFFFFF"), card_border=rgb("#E4E7EC"), text=rgb("#151A23"), muted=rgb("#667085"),
            faint=rgb("#98A2B3"), hover=rgb("#E9ECF0"), toggle_off=rgb("#CDD2DA"), track=rgb("#E2E6EC"),
            input=rgb("#FFFFFF"), knob=rgb("#FFFFFF"), danger=rgb("#DC2626"), success=rgb("#16A34A"),
        )
        t.update(accent=a, accent_soft=mix(a, (255, 255, 255), 0.86), accent_text=mix(a, (0, 0, 0), 0.15))
    return t


def draw_toggle(p: Painter, x: int, y: int, on: bool, t: Mapping[str, Color], w: int = 46, h: int = 26) -> Box:
    """A switch with its top-left at (x, y)."""
    p.rrect((x, y, x + w, y + h), h // 2, fill=t["accent"] if on else t["toggle_off"])
    r = h // 2 - 3
    cx = x + w - h // 2 if on else x + h // 2
    p.circle(cx, y + h / 2 + 1, r + 0.5, fill=mix(t["toggle_off"], (0, 0, 0), 0.25) if not on else mix(t["accent"], (0, 0, 0), 0.3))
    p.circle(cx, y + h / 2, r, fill=t["knob"])
    return Box(x, y, x + w, y + h)


def draw_slider(p: Painter, x0: int, x1: int, cy: int, value: float, t: Mapping[str, Color], knob_r: int = 10) -> tuple[Box, Box]:
    """A 0..100 slider whose track runs from x0 to x1; returns (hit box spanning the track, knob box)."""
    p.rrect((x0, cy - 3, x1, cy + 3), 3, fill=t["track"])
    kx = x0 + (x1 - x0) * max(0.0, min(100.0, value)) / 100
    p.rrect((x0, cy - 3, kx, cy + 3), 3, fill=t["accent"])
    p.circle(kx, cy + 1, knob_r + 1, fill=mix(t["track"], (0, 0, 0), 0.18))
    p.circle(kx, cy, knob_r, fill=t["knob"], outline=t["accent"], width=2)
    return Box(x0, cy - 14, x1, cy + 14), Box(round(kx - knob_r - 2), cy - knob_r - 2, round(kx + knob_r + 2), cy + knob_r + 2)


def draw_avatar(p: Painter, cx: float, cy: float, r: float, initials: str, color: Color, size: int | None = None) -> None:
    p.circle(cx, cy, r, fill=color)
    p.text(cx, cy, initials, size or round(r * 0.8), (255, 255, 255), anchor="mm", bold=True)


APP_ICONS: dict[str, tuple[str, Color]] = {
    "Phone": ("phone", rgb("#16A34A")),
    "Messages": ("message", rgb("#2563EB")),
    "Browser": ("globe", rgb("#0EA5E9")),
    "Camera": ("camera", rgb("#475569")),
    "Clock": ("clock", rgb("#1E293B")),
    "Calendar": ("calendar", rgb("#DC2626")),
    "Photos": ("image", rgb("#DB2777")),
    "Maps": ("pin", rgb("#059669")),
    "Weather": ("sun", rgb("#F59E0B")),
    "Notes": ("notes", rgb("#CA8A04")),
    "Music": ("music", rgb("#E11D48")),
    "Files": ("folder", rgb("#2563EB")),
    "Mail": ("mail", rgb("#0284C7")),
    "Store": ("bag", rgb("#7C3AED")),
    "Calculator": ("calculator", rgb("#EA580C")),
    "Settings": ("gear", rgb("#64748B")),
    "Contacts": ("user", rgb("#0D9488")),
    "Terminal": ("terminal", rgb("#1F2937")),
}


def draw_app_icon(p: Painter, app: str, cx: float, cy: float, size: int) -> Box:
    glyph, color = APP_ICONS[app]
    x0, y0 = round(cx - size / 2), round(cy - size / 2)
    p.rrect((x0, y0, x0 + size, y0 + size), round(size * 0.28), fill=color)
    p.mask(mix(color, (255, 255, 255), 0.35), x0, y0, _sheen_mask(size, round(size * 0.28)))
    p.icon(glyph, cx, cy, round(size * 0.56), (255, 255, 255))
    return Box(x0, y0, x0 + size, y0 + size)


FILE_KINDS: dict[str, tuple[str, Color]] = {
    "pdf": ("PDF", rgb("#E5484D")),
    "docx": ("DOC", rgb("#2B6CD0")),
    "xlsx": ("XLS", rgb("#1E9E57")),
    "csv": ("CSV", rgb("#1E9E57")),
    "pptx": ("PPT", rgb("#E8620C")),
    "zip": ("ZIP", rgb("#A16207")),
    "txt": ("TXT", rgb("#6B7280")),
    "md": ("MD", rgb("#6B7280")),
    "jpg": ("", rgb("#8B5CF6")),
    "png": ("", rgb("#8B5CF6")),
    "mp3": ("", rgb("#E11D48")),
}

FOLDER_GLYPHS = {"Desktop": "display", "Documents": "file", "Downloads": "download", "Music": "music",
                 "Pictures": "image", "Videos": "video", "Projects": "star"}


def draw_folder(p: Painter, x: int, y: int, size: int, glyph: str | None = None) -> None:
    """A two-tone folder icon in a ``size`` square at (x, y)."""
    s = size / 24
    back, front = rgb("#7EB3F7"), rgb("#4C93F2")
    p.rrect((x + 2 * s, y + 4 * s, x + 10 * s, y + 8 * s), round(1.5 * s), fill=back)
    p.rrect((x + 2 * s, y + 6 * s, x + 22 * s, y + 20 * s), round(1.8 * s), fill=back)
    p.rrect((x + 2 * s, y + 8.5 * s, x + 22 * s, y + 20.5 * s), round(1.8 * s), fill=front)
    p.hline(x + 3 * s, x + 21 * s, y + 8.5 * s, mix(front, (255, 255, 255), 0.35), max(1, round(s * 0.5)))
    if glyph:
        g = round(size * 0.36)
        p.icon(glyph, x + 12 * s, y + 14.7 * s, g, mix(front, (0, 0, 60), 0.35))


def draw_file_icon(p: Painter, x: int, y: int, size: int, ext: str) -> None:
    """A document page with a coloured label band, in a ``size`` square at (x, y)."""
    s = size / 24
    label, color = FILE_KINDS.get(ext, ("", rgb("#6B7280")))
    x0, y0, x1, y1 = x + 4.5 * s, y + 1.5 * s, x + 19.5 * s, y + 22.5 * s
    p.rrect((x0, y0, x1, y1), round(1.6 * s), fill=rgb("#C9CFD8"))
    p.rrect((x0 + 1, y0 + 1, x1 - 1, y1 - 1), round(1.6 * s), fill=rgb("#FFFFFF"))
    fold = 5 * s
    p.draw.polygon([(x1 - fold, y0), (x1, y0 + fold), (x1 - fold, y0 + fold)], fill=rgb("#DDE2E9"))
    p.draw.polygon([(x1 - fold, y0), (x1 + 1, y0 - 1), (x1 + 1, y0 + fold)], fill=p.img.getpixel((round(x1 + 2), round(y0 + 2))))
    if ext in ("jpg", "png"):
        p.rrect((x0 + 2 * s, y0 + 7 * s, x1 - 2 * s, y1 - 3 * s), round(s), fill=mix(color, (255, 255, 255), 0.75))
        p.icon("image", (x0 + x1) / 2, y0 + 12.8 * s, round(9 * s), color)
    elif ext == "mp3":
        p.icon("music", (x0 + x1) / 2, y0 + 12 * s, round(9 * s), color)
    else:
        for i in range(3 if size >= 40 else 0):
            ly = y0 + (5 + 2.4 * i) * s
            p.hline(x0 + 2.5 * s, x1 - (4.5 if i == 0 else 2.5) * s, ly, rgb("#D5DAE1"), max(1, round(0.8 * s)))
        band = (x0 - 1.5 * s, y0 + 12.5 * s, x1 - 3 * s, y0 + 18 * s)
        p.rrect(band, round(1.2 * s), fill=color)
        if label and size >= 40:
            p.text((band[0] + band[2]) / 2, (band[1] + band[3]) / 2, label, max(7, round(4.3 * s)), (255, 255, 255),
                   anchor="mm", bold=True)


def draw_entry_icon(p: Painter, entry: Mapping[str, Any], x: int, y: int, size: int) -> None:
    if entry["kind"] == "folder":
        draw_folder(p, x, y, size, FOLDER_GLYPHS.get(entry["name"]) if entry.get("special") else None)
    else:
        draw_file_icon(p, x, y, size, entry["name"].rsplit(".", 1)[-1].lower())


def slug(s: str) -> str:
    out = "".join(c.lower() if c.isalnum() else "_" for c in s)
    while "__" in out:
        out = out.replace("__", "_")
    return out.strip("_")


# --------------------------------------------------------------------------------------------------------------
# Desktop shell (wallpaper, taskbar, window frame)

DESKTOP_WALLPAPER = (
    (rgb("#1B2A6B"), rgb("#3B3F9E"), rgb("#7A4FB8")),
    ((0.18, 0.8, 0.35, rgb("#1E7A9E")), (0.82, 0.2, 0.3, rgb("#C0608F")), (0.6, 0.9, 0.25, rgb("#2C2A7A"))),
)
TASKBAR_H = 56
WINDOW_BOX = Box(88, 34, 1832, 1000)
TASKBAR_APPS = ["Files", "Browser", "Settings", "Terminal", "Mail"]


@lru_cache(maxsize=8)
def _desktop_base(active_app: str, window_fill: Color, window_border: Color) -> tuple[Image.Image, tuple[tuple[str, Box], ...]]:
    """Wallpaper, taskbar (without the clock) and the empty window with its shadow; cached, it never changes."""
    p = Painter(DESKTOP_SIZE)
    W, H = p.W, p.H
    stops, blobs = DESKTOP_WALLPAPER
    p.paste(_wallpaper(W, H, stops, blobs), 0, 0)
    ty = H - TASKBAR_H
    p.rect((0, ty, W, H), rgb("#12151D"))
    p.hline(0, W, ty, rgb("#2A2F3C"))
    n = len(TASKBAR_APPS) + 1
    x = W // 2 - n * 56 // 2 + 28
    cy = ty + TASKBAR_H // 2
    p.icon("apps", x, cy, 22, rgb("#E5E7EB"))
    p.add("taskbar.launcher", (x - 20, cy - 20, x + 20, cy + 20))
    for app in TASKBAR_APPS:
        x += 56
        b = draw_app_icon(p, app, x, cy - 2, 36)
        p.add(f"taskbar.{slug(app)}", b.inset(-2))
        if app == active_app:
            p.rrect((x - 7, ty + TASKBAR_H - 7, x + 7, ty + TASKBAR_H - 4), 2, fill=rgb("#93C5FD"))
    tx = W - 150
    for ic in ("battery", "sound", "wifi"):
        p.icon(ic, tx, cy, 20, rgb("#E5E7EB"))
        tx -= 32
    win = WINDOW_BOX
    p.shadow(win, 12, blur=22, alpha=110, dy=10)
    p.rrect(win, 12, fill=window_fill, outline=window_border)
    return p.img, tuple(p.widgets.items())


def _desktop_shell(p: Painter, st: Mapping[str, Any], active_app: str, t: Mapping[str, Color]) -> Box:
    """Paint the desktop (wallpaper, taskbar with clock, empty window); return the window box."""
    base, widgets = _desktop_base(active_app, t["window"], mix(t["border"], (0, 0, 0), 0.08))
    p.paste(base, 0, 0)
    p.widgets.update(widgets)
    cy = p.H - TASKBAR_H // 2
    p.text(p.W - 24, cy - 9, st.get("clock", "10:42"), 15, rgb("#F3F4F6"), anchor="rm")
    p.text(p.W - 24, cy + 11, st.get("date", "Tue 14 May"), 13, rgb("#AEB4C0"), anchor="rm")
    return WINDOW_BOX


def _window_controls(p: Painter, win: Box, cy: int, t: Mapping[str, Color]) -> None:
    x = win.x1 - 30
    for name in ("close", "maximize", "minimize"):
        p.circle(x, cy, 13, fill=t["hover"])
        p.icon(name, x, cy, 14, t["text"])
        p.add(f"window.{name}", (x - 14, cy - 14, x + 14, cy + 14))
        x -= 38


# --------------------------------------------------------------------------------------------------------------
# Settings (desktop)

SETTINGS_PAGES: list[tuple[str, str, str]] = [
    ("wifi", "Wi-Fi", "wifi"),
    ("network", "Network", "globe"),
    ("bluetooth", "Bluetooth", "bluetooth"),
    ("display", "Display", "display"),
    ("sound", "Sound", "sound"),
    ("notifications", "Notifications", "bell"),
    ("appearance", "Appearance", "contrast"),
    ("privacy", "Privacy & Security", "shield"),
    ("power", "Power", "battery"),
    ("about", "About", "info"),
]

SETTINGS_DEFAULTS: dict[str, Any] = {
    "page": "wifi", "dark_mode": False, "accent": "blue", "brightness": 45, "night_light": False,
    "wifi_on": True, "bluetooth_on": True, "airplane": False, "volume": 65, "dnd": False,
    "transparency": True, "text_size": 50, "animations": True, "clock": "10:42", "date": "Tue 14 May",
    "user": "Alex Morgan", "hostname": "alex-laptop", "battery": 82,
    "networks": [("HomeNet-5G", 4, True), ("HomeNet", 3, True), ("CoffeeBar_Guest", 2, False),
                 ("Office-Secure", 2, True), ("DIRECT-7C-Printer", 1, True)],
}


def _settings_sections(st: Mapping[str, Any]) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """Page content as (heading, rows). Row kinds: toggle, slider, dropdown, link, network, device, app_toggle,
    swatches, display_preview, style_preview, battery."""
    page = st["page"]
    if page == "wifi":
        nets = []
        for i, (name, bars, secured) in enumerate(st["networks"]):
            nets.append(dict(kind="network", key=slug(name), title=name, bars=bars, secured=secured,
                             connected=(i == 0 and st["wifi_on"])))
        return [
            (None, [dict(kind="toggle", key="wifi", title="Wi-Fi", sub="Connect to wireless networks", on=st["wifi_on"]),
                    dict(kind="toggle", key="airplane", title="Airplane mode", sub="Disable Wi-Fi, Bluetooth and mobile broadband", on=st["airplane"])]),
            ("Visible networks", nets if st["wifi_on"] else [dict(kind="link", key="wifi_off", title="Wi-Fi is turned off", value="")]),
            (None, [dict(kind="link", key="known_networks", title="Known networks", value="6 saved"),
                    dict(kind="link", key="hidden_network", title="Connect to hidden network…", value="")]),
        ]
    if page == "network":
        return [
            ("Wired", [dict(kind="toggle", key="wired", title="Ethernet (enp3s0)", sub="Connected - 1000 Mb/s", on=True)]),
            ("VPN", [dict(kind="link", key="vpn_office", title="Office VPN", value="Not connected"),
                     dict(kind="link", key="vpn_add", title="Add VPN…", value="")]),
            ("Proxy", [dict(kind="dropdown", key="proxy", title="Network proxy", value="Off")]),
        ]
    if page == "bluetooth":
        devs = [("WH-1000XM4", "headphones", "Connected - Battery 70%"), ("MX Master 3", "mouse", "Connected"),
                ("Pixel 8", "smartphone", "Not connected"), ("Keychron K2", "keyboard", "Not connected")]
        rows = [dict(kind="device", key=slug(n), title=n, icon=ic, sub=s) for n, ic, s in devs] if st["bluetooth_on"] else [
            dict(kind="link", key="bt_off", title="Turn on Bluetooth to see devices", value="")]
        return [
            (None, [dict(kind="toggle", key="bluetooth", title="Bluetooth",
                         sub=f"Visible as \u201c{st['hostname']}\u201d" if st["bluetooth_on"] else "Off", on=st["bluetooth_on"])]),
            ("Devices", rows),
            (None, [dict(kind="link", key="pair_device", title="Pair a new device…", value="")]),
        ]
    if page == "display":
        rows = [dict(kind="slider", key="brightness", title="Brightness", value=st["brightness"]),
                dict(kind="toggle", key="night_light", title="Night Light", sub="Warmer colours to reduce eye strain at night", on=st["night_light"])]
        if st["night_light"]:
            rows.append(dict(kind="dropdown", key="night_light_schedule", title="Schedule", value="Sunset to Sunrise"))
        return [
            (None, [dict(kind="display_preview", key="display_preview")]),
            ("Brightness & colour", rows),
            ("Layout", [dict(kind="dropdown", key="resolution", title="Resolution", value="1920 x 1080 (16:9)"),
                        dict(kind="dropdown", key="scale", title="Scale", value="100%"),
                        dict(kind="dropdown", key="refresh_rate", title="Refresh rate", value="60.00 Hz")]),
        ]
    if page == "sound":
        return [
            ("Output", [dict(kind="dropdown", key="output_device", title="Output device", value="Speakers - Built-in Audio"),
                        dict(kind="slider", key="volume", title="Volume", value=st["volume"]),
                        dict(kind="slider", key="balance", title="Balance", value=50)]),
            ("Input", [dict(kind="dropdown", key="input_device", title="Input device", value="Microphone - Built-in Audio"),
                       dict(kind="slider", key="input_volume", title="Input volume", value=70)]),
            ("Alerts", [dict(kind="dropdown", key="alert_sound", title="Alert sound", value="Click"),
                        dict(kind="toggle", key="system_sounds", title="System sounds", sub="Play sounds for system events", on=True)]),
        ]
    if page == "notifications":
        apps = [("Calendar", True), ("Mail", True), ("Messages", True), ("Files", False), ("Terminal", False)]
        return [
            (None, [dict(kind="toggle", key="dnd", title="Do Not Disturb", sub="Mute notifications except alarms", on=st["dnd"]),
                    dict(kind="toggle", key="lock_screen_notifications", title="Lock screen notifications", sub="Show notifications while the screen is locked", on=True)]),
            ("Applications", [dict(kind="app_toggle", key=f"app_{slug(a)}", title=a, on=on) for a, on in apps]),
        ]
    if page == "appearance":
        return [
            ("Style", [dict(kind="style_preview", key="style")]),
            (None, [dict(kind="toggle", key="dark_mode", title="Dark mode", sub="Use dark colours for windows and apps", on=st["dark_mode"]),
                    dict(kind="swatches", key="accent", title="Accent colour", value=st["accent"]),
                    dict(kind="toggle", key="transparency", title="Transparency effects", sub="Panels and menus let the wallpaper through", on=st["transparency"]),
                    dict(kind="slider", key="text_size", title="Text size", value=st["text_size"])]),
        ]
    if page == "privacy":
        return [
            ("Permissions", [dict(kind="link", key="location", title="Location services", value="Off"),
                             dict(kind="link", key="camera", title="Camera", value="2 apps"),
                             dict(kind="link", key="microphone", title="Microphone", value="3 apps")]),
            ("Security", [dict(kind="dropdown", key="screen_lock", title="Automatic screen lock", value="5 minutes"),
                          dict(kind="toggle", key="file_history", title="File history", sub="Remember recently used files", on=True),
                          dict(kind="toggle", key="diagnostics", title="Send diagnostics", sub="Help improve the system", on=False)]),
        ]
    if page == "power":
        return [
            ("Battery", [dict(kind="battery", key="battery", value=st["battery"])]),
            ("Power saving", [dict(kind="dropdown", key="power_mode", title="Power mode", value="Balanced"),
                              dict(kind="dropdown", key="screen_blank", title="Screen blank", value="5 minutes"),
                              dict(kind="toggle", key="auto_suspend", title="Automatic suspend", sub="When on battery power", on=True),
                              dict(kind="toggle", key="battery_percentage", title="Show battery percentage", sub="In the top bar", on=False)]),
        ]
    # about
    return [
        (None, [dict(kind="link", key="device_name", title="Device name", value=st["hostname"]),
                dict(kind="link", key="model", title="Hardware model", value="Framework Laptop 13"),
                dict(kind="link", key="memory", title="Memory", value="16.0 GiB"),
                dict(kind="link", key="processor", title="Processor", value="Intel Core i7-1260P x 16"),
                dict(kind="link", key="disk", title="Disk capacity", value="512.1 GB")]),
        (None, [dict(kind="link", key="os", title="OS name", value="Trace OS 24.04 LTS"),
                dict(kind="link", key="updates", title="Software updates", value="Up to date")]),
    ]


def _row_height(row: Mapping[str, Any]) -> int:
    k = row["kind"]
    if k == "display_preview":
        return 238
    if k == "style_preview":
        return 196
    if k == "battery":
        return 92
    if k in ("toggle", "device", "network") and row.get("sub", "x"):
        return 66
    return 58


def render_settings(state: Mapping[str, Any] | None = None) -> Screen:
    """A desktop settings app (1920x1080). State keys: page (one of SETTINGS_PAGES ids), dark_mode, accent,
    brightness (0-100), night_light, wifi_on, bluetooth_on, volume, ... (see SETTINGS_DEFAULTS)."""
    st = {**SETTINGS_DEFAULTS, **(state or {})}
    t = theme(st["dark_mode"], st["accent"])
    p = Painter(DESKTOP_SIZE)
    win = _desktop_shell(p, st, "Settings", t)
    head_h, side_w = 56, 300
    # sidebar + header panes
    p.rrect((win.x0 + 1, win.y0 + 1, win.x0 + side_w, win.y1 - 1), 11, fill=t["sidebar"], corners=(True, False, False, True))
    p.rrect((win.x0 + side_w, win.y0 + 1, win.x1 - 1, win.y0 + head_h), 11, fill=t["header"], corners=(False, True, False, False))
    p.hline(win.x0 + side_w, win.x1 - 1, win.y0 + head_h, t["border"])
    p.vline(win.x0 + side_w, win.y0 + 1, win.y1 - 1, t["border"])
    hy = win.y0 + head_h // 2
    p.text(win.x0 + 24, hy, "Settings", 17, t["text"], bold=True)
    sx = win.x0 + side_w - 34
    p.rrect((sx - 16, hy - 16, sx + 16, hy + 16), 8, fill=t["hover"])
    p.icon("search", sx, hy, 18, t["text"])
    p.add("search", (sx - 16, hy - 16, sx + 16, hy + 16))
    titles = {k: v for k, v, _ in SETTINGS_PAGES}
    content_x0 = win.x0 + side_w + 1
    p.text((content_x0 + win.x1) / 2, hy, titles[st["page"]], 17, t["text"], anchor="mm", bold=True)
    _window_controls(p, win, hy, t)
    # sidebar items
    y = win.y0 + head_h + 12
    for key, label, ic in SETTINGS_PAGES:
        box = Box(win.x0 + 12, y, win.x0 + side_w - 12, y + 44)
        sel = key == st["page"]
        if sel:
            p.rrect(box, 8, fill=t["accent_soft"])
        col = t["accent_text"] if sel else t["text"]
        p.icon(ic, box.x0 + 24, box.y0 + 22, 20, t["accent"] if sel else t["muted"])
        p.text(box.x0 + 48, box.y0 + 22, label, 15, col, bold=sel)
        p.add(f"sidebar.{key}", box)
        y += 48
    # user card at the bottom of the sidebar
    uy = win.y1 - 46
    p.hline(win.x0 + 16, win.x0 + side_w - 16, uy - 30, t["border"])
    initials = "".join(w[0] for w in st["user"].split()[:2])
    draw_avatar(p, win.x0 + 40, uy, 17, initials, t["accent"], 13)
    p.text(win.x0 + 66, uy - 9, st["user"], 14, t["text"], bold=True)
    p.text(win.x0 + 66, uy + 10, "Administrator", 12, t["muted"])
    # content column
    col_w = 860
    cx0 = content_x0 + (win.x1 - content_x0 - col_w) // 2
    cx1 = cx0 + col_w
    y = win.y0 + head_h + 30
    for heading, rows in _settings_sections(st):
        if heading:
            p.text(cx0 + 4, y + 10, heading, 14, t["muted"], bold=True)
            y += 30
        card_h = sum(_row_height(r) for r in rows)
        p.rrect((cx0, y, cx1, y + card_h), 12, fill=t["card"], outline=t["card_border"])
        ry = y
        for i, row in enumerate(rows):
            rh = _row_height(row)
            if i:
                p.hline(cx0 + 16, cx1 - 16, ry, t["card_border"])
            _settings_row(p, row, Box(cx0, ry, cx1, ry + rh), st, t)
            ry += rh
        y += card_h + 26
    return p.screen("settings", st)


def _settings_row(p: Painter, row: Mapping[str, Any], box: Box, st: Mapping[str, Any], t: Mapping[str, Color]) -> None:
    k, key = row["kind"], row["key"]
    cy = (box.y0 + box.y1) // 2
    lx, rx = box.x0 + 20, box.x1 - 20
    p.add(f"row.{key}", box)
    if k in ("toggle", "slider", "dropdown", "link", "swatches", "app_toggle"):
        title_x = lx
        if k == "app_toggle":
            draw_app_icon(p, row["title"], lx + 16, cy, 30)
            title_x = lx + 44
        sub = row.get("sub")
        if sub:
            p.text(title_x, cy - 10, row["title"], 15, t["text"])
            p.text(title_x, cy + 11, sub, 13, t["muted"])
        else:
            p.text(title_x, cy, row["title"], 15, t["text"])
    if k in ("toggle", "app_toggle"):
        p.add(f"toggle.{key}", draw_toggle(p, rx - 46, cy - 13, row["on"], t))
    elif k == "slider":
        vx = rx - 40
        p.text(rx, cy, f"{round(row['value'])}%", 14, t["muted"], anchor="rm")
        hit, knob = draw_slider(p, vx - 330, vx - 14, cy, row["value"], t)
        p.add(f"slider.{key}", hit)
        p.add(f"slider.{key}.knob", knob)
    elif k == "dropdown":
        b = Box(rx - 280, cy - 18, rx, cy + 18)
        p.rrect(b, 8, fill=t["input"], outline=t["card_border"])
        p.text(b.x0 + 14, cy, row["value"], 14, t["text"], max_w=b.w - 46)
        p.icon("chevron_down", b.x1 - 20, cy, 14, t["muted"])
        p.add(f"dropdown.{key}", b)
    elif k == "link":
        if row["value"]:
            p.text(rx - 26, cy, row["value"], 14, t["muted"], anchor="rm")
        p.icon("chevron_right", rx - 6, cy, 14, t["faint"])
    elif k == "swatches":
        x = rx - 14
        for name in reversed(list(ACCENTS)):
            c = ACCENTS[name]
            if st["dark_mode"]:
                c = mix(c, (255, 255, 255), 0.18)
            if name == row["value"]:
                p.circle(x, cy, 16, outline=c, width=2)
                p.circle(x, cy, 11, fill=c)
                p.icon("check", x, cy, 13, (255, 255, 255))
            else:
                p.circle(x, cy, 12, fill=c)
            p.add(f"swatch.{name}", (x - 15, cy - 15, x + 15, cy + 15))
            x -= 38
    elif k == "network":
        p.icon("wifi", lx + 12, cy, 22, t["accent"] if row["connected"] else t["text"])
        p.text(lx + 40, cy - 10, row["title"], 15, t["text"], bold=row["connected"])
        sub = "Connected, secured" if row["connected"] else ("Secured" if row["secured"] else "Open")
        p.text(lx + 40, cy + 11, sub, 13, t["accent_text"] if row["connected"] else t["muted"])
        bx = rx - 10
        for i in range(4):  # signal bars
            h = 6 + 4 * i
            col = t["text"] if i < row["bars"] else t["toggle_off"]
            p.rrect((bx - 24 + i * 7, cy + 9 - h, bx - 20 + i * 7, cy + 9), 1, fill=col)
        if row["secured"]:
            p.icon("lock", rx - 60, cy, 16, t["muted"])
        if row["connected"]:
            p.icon("check", rx - 90, cy, 18, t["accent"])
    elif k == "device":
        p.circle(lx + 18, cy, 18, fill=t["hover"])
        p.icon(row["icon"], lx + 18, cy, 20, t["text"])
        p.text(lx + 50, cy - 10, row["title"], 15, t["text"])
        connected = row["sub"].startswith("Connected")
        p.text(lx + 50, cy + 11, row["sub"], 13, t["success"] if connected else t["muted"])
        b = Box(rx - 112, cy - 16, rx, cy + 16)
        p.rrect(b, 8, fill=t["card"], outline=t["card_border"])
        p.text(b.center[0], cy, "Disconnect" if connected else "Connect", 13, t["text"], anchor="mm")
        p.add(f"button.{key}", b)
    elif k == "display_preview":
        mw, mh = 300, 168
        mx, my = (box.x0 + box.x1) // 2 - mw // 2, box.y0 + 18
        p.rrect((mx, my, mx + mw, my + mh), 10, fill=rgb("#1F2430"))
        stops, blobs = DESKTOP_WALLPAPER
        inner = _wallpaper(mw - 16, mh - 16, stops, blobs)
        p.paste(inner, mx + 8, my + 8)
        if st["night_light"]:  # warm tint
            p.img.paste((255, 170, 60), (mx + 8, my + 8, mx + mw - 8, my + mh - 8),
                        Image.new("L", (mw - 16, mh - 16), 46))
        b = st["brightness"]
        if b < 100:
            p.img.paste((0, 0, 0), (mx + 8, my + 8, mx + mw - 8, my + mh - 8),
                        Image.new("L", (mw - 16, mh - 16), round((100 - b) * 1.1)))
        p.rect((mx + mw // 2 - 8, my + mh, mx + mw // 2 + 8, my + mh + 8), rgb("#9AA3B2"))
        p.rrect((mx + mw // 2 - 40, my + mh + 7, mx + mw // 2 + 40, my + mh + 12), 2, fill=rgb("#9AA3B2"))
        p.text(box.center[0], my + mh + 26, "Built-in Display  -  13.5\"  -  Primary", 13, t["muted"], anchor="mm")
        p.add("display.preview", (mx, my, mx + mw, my + mh))
    elif k == "style_preview":
        cw, ch = 220, 132
        gap = 40
        x = (box.x0 + box.x1) // 2 - cw - gap // 2
        for name, dark in (("light", False), ("dark", True)):
            sel = st["dark_mode"] == dark
            b = Box(x, box.y0 + 18, x + cw, box.y0 + 18 + ch)
            if sel:
                p.rrect(b.inset(-4), 14, outline=t["accent"], width=3)
            _mini_window(p, b, theme(dark, st["accent"]))
            label = "Light" if name == "light" else "Dark"
            p.text(b.center[0], b.y1 + 24, label, 14, t["accent_text"] if sel else t["text"], anchor="mm", bold=sel)
            p.add(f"style.{name}", (b.x0 - 4, b.y0 - 4, b.x1 + 4, b.y1 + 36))
            x += cw + gap
    elif k == "battery":
        v = row["value"]
        p.icon("battery", lx + 18, cy, 30, t["success"])
        p.text(lx + 48, cy - 11, f"{v}%", 22, t["text"], bold=True)
        p.text(lx + 48, cy + 14, "On battery power - about 5 h 20 min left", 13, t["muted"])
        bx0, bx1 = rx - 360, rx
        p.rrect((bx0, cy - 7, bx1, cy + 7), 7, fill=t["track"])
        p.rrect((bx0, cy - 7, bx0 + (bx1 - bx0) * v / 100, cy + 7), 7, fill=t["success"])


def _mini_window(p: Painter, b: Box, t: Mapping[str, Color]) -> None:
    stops, blobs = DESKTOP_WALLPAPER
    wp = _wallpaper(b.w, b.h, stops, blobs)
    p.img.paste(wp, (b.x0, b.y0), _rrect_mask(b.w, b.h, 10))
    w = Box(b.x0 + 22, b.y0 + 20, b.x1 - 22, b.y1 - 16)
    p.rrect(w, 6, fill=t["window"])
    p.rrect((w.x0, w.y0, w.x0 + 50, w.y1), 6, fill=t["sidebar"], corners=(True, False, False, True))
    p.rrect((w.x0, w.y0, w.x1, w.y0 + 14), 6, fill=t["header"], corners=(True, True, False, False))
    for i in range(4):
        p.rrect((w.x0 + 8, w.y0 + 22 + i * 14, w.x0 + 42, w.y0 + 28 + i * 14), 3,
                fill=t["accent"] if i == 1 else t["toggle_off"])
    for i in range(3):
        p.rrect((w.x0 + 62, w.y0 + 24 + i * 18, w.x1 - 38, w.y0 + 30 + i * 18), 3, fill=t["toggle_off"])
        p.rrect((w.x1 - 30, w.y0 + 22 + i * 18, w.x1 - 12, w.y0 + 32 + i * 18), 5,
                fill=t["accent"] if i != 1 else t["toggle_off"])


# --------------------------------------------------------------------------------------------------------------
# File manager (desktop)

FILES_SIDEBAR: list[tuple[str, str]] = [
    ("Recent", "clock"), ("Starred", "star"), ("Home", "home"), ("Desktop", "display"), ("Documents", "file"),
    ("Downloads", "download"), ("Music", "music"), ("Pictures", "image"), ("Videos", "video"), ("Trash", "trash"),
]

FILE_MENU = [("open", "Open", ""), ("open_with", "Open With…", ""), None, ("cut", "Cut", "Ctrl+X"),
             ("copy", "Copy", "Ctrl+C"), None, ("rename", "Rename…", "F2"), ("trash", "Move to Trash", "Delete"),
             None, ("properties", "Properties", "Alt+Enter")]
FOLDER_MENU = [("open", "Open", ""), ("open_tab", "Open in New Tab", "Ctrl+Enter"),
               ("open_window", "Open in New Window", "Shift+Enter"), None, ("cut", "Cut", "Ctrl+X"),
               ("copy", "Copy", "Ctrl+C"), None, ("rename", "Rename…", "F2"), ("trash", "Move to Trash", "Delete"),
               None, ("properties", "Properties", "Alt+Enter")]


def _fmt_size(n: int) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= k:
            v = n / k
            return f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{n} bytes"


def make_file_system(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    """A small home directory; sizes and dates come from ``rng``."""
    months = ["Jan", "Feb", "Mar", "Apr", "May"]

    def date() -> str:
        m = rng.randrange(len(months))
        return f"{rng.randint(1, 28)} {months[m]}"

    def f(name: str, lo: int, hi: int) -> dict[str, Any]:
        return dict(name=name, kind="file", size=_fmt_size(rng.randint(lo, hi)), modified=date())

    def d(name: str, n_items: int | None = None, special: bool = False) -> dict[str, Any]:
        n = rng.randint(2, 40) if n_items is None else n_items
        return dict(name=name, kind="folder", size=f"{n} items", modified=date(), special=special)

    home = [d(n, special=True) for n in ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Videos")]
    home += [d("Projects"), f("notes.txt", 800, 9000), f("todo.md", 300, 3000)]
    docs = [d("Contracts"), d("Taxes"), f("budget_2024.xlsx", 20_000, 90_000), f("draft_v2.docx", 30_000, 120_000),
            f("Meeting notes.docx", 10_000, 60_000), f("presentation.pptx", 800_000, 4_000_000),
            f("resume.pdf", 80_000, 300_000), f("scan_0012.pdf", 300_000, 2_000_000)]
    downloads = [f("IMG_2041.jpg", 1_500_000, 4_500_000), f("dataset.csv", 200_000, 9_000_000),
                 f("flight-tickets.pdf", 90_000, 400_000), f("invoice_march.pdf", 40_000, 200_000),
                 f("screenshot.png", 200_000, 900_000), f("setup-2.4.1.zip", 20_000_000, 90_000_000)]
    return {"Home": home, "Documents": docs, "Downloads": downloads,
            "Desktop": [f("shortcuts.txt", 200, 2000)], "Music": [f("demo_track.mp3", 3_000_000, 8_000_000)],
            "Pictures": [f("IMG_1988.jpg", 1_000_000, 5_000_000)], "Videos": [], "Projects": [], "Trash": []}


FILES_DEFAULTS: dict[str, Any] = {
    "folder": "Home", "view": None, "selected": None, "context_menu": None, "renaming": None, "rename_text": None,
    "rename_selected": True, "toast": None, "search": None, "dark_mode": False, "accent": "blue", "clock": "10:42",
    "date": "Tue 14 May", "free": "231 GB free of 512 GB", "used": 0.55,
}


def render_files(state: Mapping[str, Any] | None = None) -> Screen:
    """A desktop file manager (1920x1080). State keys: folder, view ("grid"/"list"; default grid for Home),
    fs (see make_file_system), selected, context_menu ({"target": name}), renaming + rename_text (rename popover),
    toast (text; shown with Undo), search (type-ahead search text)."""
    st = {**FILES_DEFAULTS, **(state or {})}
    fs = st.get("fs") or make_file_system(random.Random(0))
    st["fs"] = fs
    folder = st["folder"]
    view = st["view"] or ("grid" if folder == "Home" else "list")
    t = theme(st["dark_mode"], st["accent"])
    p = Painter(DESKTOP_SIZE)
    win = _desktop_shell(p, st, "Files", t)
    head_h, side_w = 56, 232
    p.rrect((win.x0 + 1, win.y0 + 1, win.x0 + side_w, win.y1 - 1), 11, fill=t["sidebar"], corners=(True, False, False, True))
    p.rrect((win.x0 + side_w, win.y0 + 1, win.x1 - 1, win.y0 + head_h), 11, fill=t["header"], corners=(False, True, False, False))
    p.hline(win.x0 + side_w, win.x1 - 1, win.y0 + head_h, t["border"])
    p.vline(win.x0 + side_w, win.y0 + 1, win.y1 - 1, t["border"])
    hy = win.y0 + head_h // 2
    p.text(win.x0 + 22, hy, "Files", 17, t["text"], bold=True)
    mx = win.x0 + side_w - 32
    p.rrect((mx - 16, hy - 16, mx + 16, hy + 16), 8, fill=t["hover"])
    p.icon("menu", mx, hy, 18, t["text"])
    p.add("button.menu", (mx - 16, hy - 16, mx + 16, hy + 16))
    cx0 = win.x0 + side_w + 1
    # navigation buttons
    x = cx0 + 14
    for name, ic in (("back", "chevron_left"), ("forward", "chevron_right")):
        b = Box(x, hy - 17, x + 34, hy + 17)
        p.rrect(b, 8, fill=t["hover"])
        p.icon(ic, x + 17, hy, 16, t["text"] if name == "back" and folder != "Home" else t["faint"])
        p.add(f"nav.{name}", b)
        x += 40
    # path bar or search entry
    bar = Box(x + 8, hy - 18, win.x1 - 290, hy + 18)
    if st["search"] is not None:
        p.rrect(bar, 9, fill=t["input"], outline=t["accent"], width=2)
        p.icon("search", bar.x0 + 20, hy, 16, t["muted"])
        w = p.text(bar.x0 + 40, hy, st["search"], 14, t["text"])
        p.vline(bar.x0 + 42 + w, hy - 10, hy + 10, t["text"], 2)
        p.circle(bar.x1 - 20, hy, 9, fill=t["toggle_off"])
        p.icon("close", bar.x1 - 20, hy, 10, t["window"])
        p.add("search.entry", bar)
        p.add("search.clear", (bar.x1 - 30, hy - 10, bar.x1 - 10, hy + 10))
    else:
        p.rrect(bar, 9, fill=t["input"], outline=t["card_border"])
        crumbs = ["Home"] if folder in ("Home", "Recent", "Starred", "Trash") else ["Home", folder]
        if folder in ("Recent", "Starred", "Trash"):
            crumbs = [folder]
        px = bar.x0 + 14
        p.icon("home" if crumbs[0] == "Home" else dict(FILES_SIDEBAR)[crumbs[0]], px + 8, hy, 16, t["muted"])
        px += 24
        for i, c in enumerate(crumbs):
            last = i == len(crumbs) - 1
            w = p.text(px, hy, c, 14, t["text"] if last else t["muted"], bold=last)
            p.add(f"path.{slug(c)}", (px - 4, hy - 14, px + w + 4, hy + 14))
            px += w + 8
            if not last:
                p.icon("chevron_right", px + 4, hy, 12, t["faint"])
                px += 18
    # right header buttons
    x = bar.x1 + 14
    for name, ic in (("search", "search"), ("view", "grid_view" if view == "list" else "list_view"), ("more", "more_vert")):
        b = Box(x, hy - 17, x + 34, hy + 17)
        if name == "search" and st["search"] is not None:
            p.rrect(b, 8, fill=t["accent_soft"])
            p.icon(ic, x + 17, hy, 17, t["accent"])
        else:
            p.rrect(b, 8, fill=t["hover"])
            p.icon(ic, x + 17, hy, 17, t["text"])
        p.add(f"button.{name}", b)
        x += 40
    _window_controls(p, win, hy, t)
    # sidebar
    y = win.y0 + head_h + 10
    for name, ic in FILES_SIDEBAR:
        box = Box(win.x0 + 10, y, win.x0 + side_w - 10, y + 36)
        sel = name == folder and st["search"] is None
        if sel:
            p.rrect(box, 8, fill=t["accent_soft"])
        p.icon(ic, box.x0 + 20, box.y0 + 18, 18, t["accent"] if sel else t["muted"])
        p.text(box.x0 + 42, box.y0 + 18, name, 14, t["accent_text"] if sel else t["text"], bold=sel)
        p.add(f"sidebar.{slug(name)}", box)
        y += 38
        if name == "Starred":
            p.hline(win.x0 + 20, win.x0 + side_w - 20, y + 3, t["border"])
            y += 8
    p.hline(win.x0 + 20, win.x0 + side_w - 20, y + 5, t["border"])
    y += 12
    box = Box(win.x0 + 10, y, win.x0 + side_w - 10, y + 36)
    p.icon("plus", box.x0 + 20, box.y0 + 18, 18, t["muted"])
    p.text(box.x0 + 42, box.y0 + 18, "Other Locations", 14, t["text"])
    p.add("sidebar.other_locations", box)
    sy = win.y1 - 64
    p.text(win.x0 + 22, sy, "Local Disk", 13, t["text"], bold=True)
    p.rrect((win.x0 + 22, sy + 14, win.x0 + side_w - 22, sy + 20), 3, fill=t["track"])
    p.rrect((win.x0 + 22, sy + 14, win.x0 + 22 + (side_w - 44) * st["used"], sy + 20), 3, fill=t["accent"])
    p.text(win.x0 + 22, sy + 36, st["free"], 12, t["muted"])
    # content
    area = Box(cx0, win.y0 + head_h + 1, win.x1 - 1, win.y1 - 1)
    entries = list(fs.get(folder, []))
    if st["search"] is not None:
        q = st["search"].lower()
        entries = [e for flist in fs.values() for e in flist if q and q in e["name"].lower()]
        view = "list"
    status_h = 34
    p.hline(area.x0, area.x1, area.y1 - status_h, t["border"])
    sel_entry = next((e for e in entries if e["name"] == st["selected"]), None)
    if sel_entry is not None:
        status = f"\u201c{sel_entry['name']}\u201d selected ({sel_entry['size']})"
    else:
        status = f"{len(entries)} item{'s' if len(entries) != 1 else ''}"
    p.text(area.x0 + 20, area.y1 - status_h // 2, status, 13, t["muted"])
    if st["search"] is not None and not entries:
        mid = (area.x0 + area.x1) / 2, (area.y0 + area.y1 - status_h) / 2
        p.icon("search", mid[0], mid[1] - 60, 72, t["faint"])
        p.text(mid[0], mid[1] + 10, "No Results Found", 22, t["text"], anchor="mm", bold=True)
        p.text(mid[0], mid[1] + 44, "Try a different search", 14, t["muted"], anchor="mm")
    elif not entries:
        mid = (area.x0 + area.x1) / 2, (area.y0 + area.y1 - status_h) / 2
        draw_folder(p, round(mid[0] - 48), round(mid[1] - 110), 96)
        p.text(mid[0], mid[1] + 10, "Folder is Empty", 22, t["text"], anchor="mm", bold=True)
    elif view == "grid":
        _files_grid(p, entries, area, st, t)
    else:
        _files_list(p, entries, area, st, t)
    # overlays
    if st["renaming"]:
        _rename_popover(p, st, t, win)
    if st["context_menu"]:
        _context_menu(p, st, t, win, fs)
    if st["toast"]:
        _toast(p, st["toast"], (area.x0 + area.x1) // 2, area.y1 - status_h - 34)
    return p.screen("files", st)


def _files_grid(p: Painter, entries, area: Box, st, t) -> None:
    tw, th, gap = 132, 132, 10
    x0, y = area.x0 + 24, area.y0 + 20
    x = x0
    for e in entries:
        if x + tw > area.x1 - 16:
            x, y = x0, y + th + gap
        b = Box(x, y, x + tw, y + th)
        if e["name"] == st["selected"]:
            p.rrect(b, 10, fill=t["accent_soft"])
        draw_entry_icon(p, e, x + tw // 2 - 36, y + 10, 72)
        lines = wrap_text(e["name"], 13, tw - 14)
        if len(lines) > 2:
            lines = [lines[0], fit_text(" ".join(lines[1:]), 13, tw - 14)]
        for i, line in enumerate(lines):
            p.text(x + tw / 2, y + 96 + i * 17, fit_text(line, 13, tw - 12), 13, t["text"], anchor="mm")
        p.add(f"file.{e['name']}", b)
        x += tw + gap


def _files_list(p: Painter, entries, area: Box, st, t) -> None:
    lx, rx = area.x0 + 16, area.x1 - 16
    size_x, mod_x = rx - 380, rx - 190
    y = area.y0 + 6
    hy = y + 17
    p.text(lx + 44, hy, "Name", 13, t["muted"], bold=True)
    p.icon("sort_up", lx + 90, hy, 12, t["muted"])
    p.text(size_x, hy, "Size", 13, t["muted"], bold=True)
    p.text(mod_x, hy, "Modified", 13, t["muted"], bold=True)
    y += 36
    p.hline(lx, rx, y - 1, t["border"])
    for e in entries:
        b = Box(lx, y + 2, rx, y + 42)
        if e["name"] == st["selected"]:
            p.rrect(b, 8, fill=t["accent_soft"])
        cy = b.center[1]
        draw_entry_icon(p, e, lx + 12, round(cy) - 14, 28)
        nw = p.text(lx + 50, cy, e["name"], 14, t["text"], max_w=size_x - lx - 80)
        p.text(size_x, cy, e["size"], 14, t["muted"])
        p.text(mod_x, cy, e["modified"], 14, t["muted"])
        p.add(f"row.{e['name']}", b)
        p.add(f"file.{e['name']}", (lx + 8, b.y0, lx + 50 + nw + 12, b.y1))
        y += 44


def _menu_box(items, x: int, y: int, width: int, win: Box) -> tuple[Box, int, int]:
    item_h, sep_h, pad = 34, 9, 6
    h = pad * 2 + sum(item_h if it else sep_h for it in items)
    if x + width > win.x1 - 8:
        x = win.x1 - 8 - width
    if y + h > win.y1 - 8:
        y = max(win.y0 + 8, y - h)
    return Box(x, y, x + width, y + h), item_h, sep_h


def _context_menu(p: Painter, st, t, win: Box, fs) -> None:
    target = st["context_menu"]["target"]
    tb = p.widgets[f"file.{target}"]
    entry = next((e for flist in fs.values() for e in flist if e["name"] == target), {"kind": "file"})
    items = FOLDER_MENU if entry["kind"] == "folder" else FILE_MENU
    ax, ay = st["context_menu"].get("at", tb.center)
    box, item_h, sep_h = _menu_box(items, round(ax) + 2, round(ay) + 2, 252, win)
    p.shadow(box, 10, blur=12, alpha=70, dy=5)
    p.rrect(box, 10, fill=t["card"], outline=t["card_border"])
    y = box.y0 + 6
    for it in items:
        if it is None:
            p.hline(box.x0 + 10, box.x1 - 10, y + sep_h // 2, t["border"])
            y += sep_h
            continue
        key, label, shortcut = it
        ib = Box(box.x0 + 6, y, box.x1 - 6, y + item_h)
        p.text(ib.x0 + 12, ib.center[1], label, 14, t["danger"] if key == "trash" else t["text"])
        if shortcut:
            p.text(ib.x1 - 12, ib.center[1], shortcut, 12, t["faint"], anchor="rm")
        p.add(f"menu.{key}", ib)
        y += item_h


def _rename_popover(p: Painter, st, t, win: Box) -> None:
    target = st["renaming"]
    tb = p.widgets[f"file.{target}"]
    text = st["rename_text"] if st["rename_text"] is not None else target
    w, h = 360, 132
    cx = tb.x0 + 170 if tb.w > 400 else tb.center[0]
    x0 = round(min(max(cx - w / 2, win.x0 + 240), win.x1 - w - 10))
    y0 = tb.y1 + 10
    box = Box(x0, y0, x0 + w, y0 + h)
    p.shadow(box, 12, blur=12, alpha=70, dy=5)
    p.rrect(box, 12, fill=t["card"], outline=t["card_border"])
    ax = round(cx)
    p.draw.polygon([(ax - 10, y0 + 1), (ax, y0 - 9), (ax + 10, y0 + 1)], fill=t["card"])
    p.draw.line([(ax - 10, y0), (ax, y0 - 10), (ax + 10, y0)], fill=t["card_border"], width=1)
    is_folder = "." not in target
    p.text(box.center[0], y0 + 24, "Rename Folder" if is_folder else "Rename File", 14, t["text"], anchor="mm", bold=True)
    entry = Box(x0 + 16, y0 + 46, x0 + w - 16, y0 + 82)
    p.rrect(entry, 8, fill=t["input"], outline=t["accent"], width=2)
    tx = entry.x0 + 12
    cy = entry.center[1]
    if st["rename_selected"] and st["rename_text"] is None:
        stem = text.rsplit(".", 1)[0] if not is_folder else text
        sw = text_width(stem, 14)
        p.rect((tx - 1, cy - 10, tx + sw + 1, cy + 11), t["accent_soft"])
        p.text(tx, cy, text, 14, t["text"])
    else:
        tw = p.text(tx, cy, text, 14, t["text"])
        p.vline(tx + tw + 1, cy - 10, cy + 10, t["text"], 2)
    p.add("rename.entry", entry)
    btn = Box(x0 + w - 16 - 96, y0 + 92, x0 + w - 16, y0 + 122)
    p.rrect(btn, 8, fill=t["accent"])
    p.text(btn.center[0], btn.center[1], "Rename", 14, (255, 255, 255), anchor="mm", bold=True)
    p.add("rename.button", btn)


def _toast(p: Painter, text: str, cx: int, cy: int, undo: bool = True) -> None:
    tw = text_width(text, 14)
    w = round(tw + (176 if undo else 84))
    box = Box(cx - w // 2, cy - 24, cx + w // 2, cy + 24)
    p.shadow(box, 24, blur=10, alpha=80, dy=4)
    p.rrect(box, 24, fill=rgb("#23262E"))
    p.text(box.x0 + 24, cy, text, 14, rgb("#F3F4F6"))
    p.add("toast", box)
    if undo:
        ub = Box(box.x1 - 122, cy - 16, box.x1 - 50, cy + 16)
        p.rrect(ub, 8, fill=rgb("#383C47"))
        p.text(ub.center[0], cy, "Undo", 14, rgb("#FFFFFF"), anchor="mm", bold=True)
        p.add("toast.undo", ub)
    p.icon("close", box.x1 - 26, cy, 14, rgb("#AEB4C0"))
    p.add("toast.close", (box.x1 - 40, cy - 14, box.x1 - 12, cy + 14))


# --------------------------------------------------------------------------------------------------------------
# Web form in a browser (1280x800)

WEB_TRACKS = ["Machine Learning", "Data Science", "Data Engineering", "Visualization & BI"]
WEB_FIELDS = [("name", "Full name", "e.g. Jane Doe"), ("organization", "Organization (optional)", "Company or university"),
              ("email", "Email address", "you@example.com")]

WEB_DEFAULTS: dict[str, Any] = {
    "page": "form", "values": {}, "focus": None, "dropdown_open": False, "terms": False, "errors": {},
    "banner": None, "clock": "10:42",
}


def render_web(state: Mapping[str, Any] | None = None) -> Screen:
    """A workshop-registration form in a browser (1280x800). State keys: page ("form"/"success"),
    values {name, organization, email, track}, focus (field key), dropdown_open, terms, errors {field: message},
    banner (error summary text)."""
    st = {**WEB_DEFAULTS, **(state or {})}
    t = theme(False, "blue")
    W, H = WEB_SIZE
    p = Painter(WEB_SIZE, rgb("#F5F6FA"))
    # tab strip
    strip = rgb("#DEE1E7")
    p.rect((0, 0, W, 42), strip)
    tab = Box(8, 6, 278, 42)
    p.rrect(tab, 10, fill=rgb("#FFFFFF"), corners=(True, True, False, False))
    p.rrect((18, 16, 34, 32), 4, fill=t["accent"])
    p.text(26, 24, "D", 11, (255, 255, 255), anchor="mm", bold=True)
    p.text(42, 24, "Workshop Registration · DataConf", 13, t["text"], max_w=200)
    p.icon("close", 262, 24, 12, t["muted"])
    p.add("tab.active", tab)
    p.add("tab.close", (254, 16, 270, 32))
    p.rrect((292, 16, 308, 32), 4, fill=rgb("#0284C7"))
    p.icon("mail", 300, 24, 12, (255, 255, 255))
    p.text(316, 24, "Inbox (3) - Mail", 13, t["muted"], max_w=180)
    p.vline(530, 14, 34, rgb("#B9BEC8"))
    p.add("tab.mail", (284, 6, 530, 42))
    p.icon("plus", 552, 24, 16, t["muted"])
    p.add("tab.new", (538, 10, 566, 38))
    x = W - 24
    for name in ("close", "maximize", "minimize"):
        p.icon(name, x, 21, 14, t["text"])
        p.add(f"window.{name}", (x - 16, 5, x + 16, 37))
        x -= 44
    # toolbar
    p.rect((0, 42, W, 90), rgb("#FFFFFF"))
    p.hline(0, W, 89, rgb("#E1E4EA"))
    ty = 66
    for i, (name, ic) in enumerate((("back", "arrow_left"), ("forward", "arrow_right"), ("reload", "reload"))):
        cx = 28 + i * 40
        p.icon(ic, cx, ty, 18, t["faint"] if name == "forward" else t["text"])
        p.add(f"nav.{name}", (cx - 16, ty - 16, cx + 16, ty + 16))
    url = Box(134, ty - 17, W - 110, ty + 17)
    p.rrect(url, 17, fill=rgb("#F0F2F5"))
    p.icon("lock", url.x0 + 20, ty, 14, t["muted"])
    path = "/workshops/register" + ("/confirmed" if st["page"] == "success" else "")
    w = p.text(url.x0 + 38, ty, "events.dataconf.org", 14, t["text"])
    p.text(url.x0 + 38 + w, ty, path, 14, t["muted"])
    p.icon("star", url.x1 - 22, ty, 16, t["muted"])
    p.add("url", url)
    draw_avatar(p, W - 70, ty, 14, "M", rgb("#7C3AED"), 13)
    p.add("profile", (W - 86, ty - 16, W - 54, ty + 16))
    p.icon("more_vert", W - 28, ty, 18, t["text"])
    p.add("browser.menu", (W - 44, ty - 16, W - 12, ty + 16))
    # site header
    p.rect((0, 90, W, 150), rgb("#FFFFFF"))
    p.hline(0, W, 150, rgb("#E6E8EE"))
    p.rrect((40, 104, 72, 136), 8, fill=t["accent"])
    p.icon("calendar", 56, 120, 18, (255, 255, 255))
    p.text(84, 120, "DataConf 2025", 18, t["text"], bold=True)
    x = 760
    for label in ("Program", "Speakers", "Workshops", "Venue"):
        w = p.text(x, 120, label, 14, t["accent_text"] if label == "Workshops" else t["text"], bold=label == "Workshops")
        p.add(f"nav_link.{slug(label)}", (x - 6, 108, x + w + 6, 132))
        x += w + 30
    b = Box(W - 150, 104, W - 40, 136)
    p.rrect(b, 8, fill=rgb("#FFFFFF"), outline=rgb("#D0D5DD"))
    p.text(b.center[0], 120, "My tickets", 14, t["text"], anchor="mm")
    p.add("button.my_tickets", b)
    if st["page"] == "success":
        _web_success(p, st, t)
    else:
        _web_form(p, st, t)
    return p.screen("web", st)


def _web_input(p: Painter, box: Box, value: str, placeholder: str, focused: bool, error: bool, t, chevron: bool = False) -> None:
    if focused:
        p.rrect(box.inset(-3), 11, fill=t["accent_soft"])
    border = t["danger"] if error else (t["accent"] if focused else rgb("#D0D5DD"))
    p.rrect(box, 8, fill=rgb("#FFFFFF"), outline=border, width=2 if (focused or error) else 1)
    cy = box.center[1]
    if value:
        w = p.text(box.x0 + 14, cy, value, 15, t["text"], max_w=box.w - 44)
    else:
        w = 0
        p.text(box.x0 + 14, cy, placeholder, 15, t["faint"])
    if focused and not chevron:
        p.vline(box.x0 + 15 + w, cy - 10, cy + 11, t["text"], 2)
    if chevron:
        p.icon("chevron_up" if focused else "chevron_down", box.x1 - 22, cy, 16, t["muted"])


def _web_form(p: Painter, st, t) -> None:
    vals = st["values"]
    errors = st["errors"]
    card = Box(340, 170, 940, 0)
    x0, x1 = card.x0 + 32, card.x1 - 32
    # lay out first to know the card height
    y = card.y0 + 32
    title_y = y + 12
    y += 72
    banner_y = None
    if st["banner"]:
        banner_y = y
        y += 54
    field_ys = []
    for key, _label, _ph in WEB_FIELDS + [("track", "Workshop track", "")]:
        field_ys.append(y)
        y += 74 + (20 if key in errors else 0)
    check_y = y + 4
    y += 40 + (20 if "terms" in errors else 0)
    button_y = y + 6
    y += 50 + 30
    card = Box(card.x0, card.y0, card.x1, y)
    p.shadow(card, 14, blur=14, alpha=28, dy=4)
    p.rrect(card, 14, fill=rgb("#FFFFFF"), outline=rgb("#E4E7EC"))
    p.text(x0, title_y, "Register for a workshop", 24, t["text"], bold=True)
    p.text(x0, title_y + 32, "Saturday 14 June, Hall B. Seats are limited to 40 per track.", 14, t["muted"])
    if banner_y is not None:
        bb = Box(x0, banner_y, x1, banner_y + 42)
        p.rrect(bb, 8, fill=rgb("#FEF2F2"), outline=rgb("#FCA5A5"))
        p.icon("info", bb.x0 + 20, bb.center[1], 18, t["danger"])
        p.text(bb.x0 + 40, bb.center[1], st["banner"], 14, rgb("#991B1B"))
        p.add("banner.error", bb)
    for (key, label, ph), fy in zip(WEB_FIELDS + [("track", "Workshop track", "Choose a track…")], field_ys):
        p.text(x0, fy + 8, label, 13, rgb("#344054"), bold=True)
        box = Box(x0, fy + 20, x1, fy + 62)
        is_track = key == "track"
        focused = st["dropdown_open"] if is_track else st["focus"] == key
        _web_input(p, box, vals.get(key, ""), ph, focused, key in errors, t, chevron=is_track)
        p.add(f"dropdown.{key}" if is_track else f"field.{key}", box)
        if key in errors:
            p.text(x0, box.y1 + 12, errors[key], 13, t["danger"])
    # checkbox
    cb = Box(x0, check_y, x0 + 20, check_y + 20)
    if st["terms"]:
        p.rrect(cb, 5, fill=t["accent"])
        p.icon("check", cb.center[0], cb.center[1], 15, (255, 255, 255))
    else:
        p.rrect(cb, 5, fill=rgb("#FFFFFF"), outline=t["danger"] if "terms" in errors else rgb("#98A2B3"), width=2 if "terms" in errors else 1)
    w = p.text(x0 + 32, cb.center[1], "I agree to the ", 14, t["text"])
    w2 = p.text(x0 + 32 + w, cb.center[1], "code of conduct", 14, t["accent_text"])
    p.text(x0 + 32 + w + w2, cb.center[1], " and privacy policy", 14, t["text"])
    p.add("checkbox.terms", cb.inset(-4))
    if "terms" in errors:
        p.text(x0, cb.y1 + 16, errors["terms"], 13, t["danger"])
    btn = Box(x0, button_y, x1, button_y + 46)
    p.rrect(btn, 10, fill=t["accent"])
    p.text(btn.center[0], btn.center[1], "Register", 16, (255, 255, 255), anchor="mm", bold=True)
    p.add("button.register", btn)
    # side note
    p.text(card.x1 + 40, card.y0 + 40, "Need help?", 14, t["text"], bold=True)
    p.text(card.x1 + 40, card.y0 + 64, "workshops@dataconf.org", 13, t["accent_text"])
    # open dropdown list (drawn last, over the form)
    if st["dropdown_open"]:
        db = p.widgets["dropdown.track"]
        opts = ["Choose a track…"] + WEB_TRACKS
        lb = Box(db.x0, db.y1 + 6, db.x1, db.y1 + 6 + 12 + 38 * len(opts))
        p.shadow(lb, 10, blur=12, alpha=60, dy=5)
        p.rrect(lb, 10, fill=rgb("#FFFFFF"), outline=rgb("#E4E7EC"))
        oy = lb.y0 + 6
        for i, o in enumerate(opts):
            ob = Box(lb.x0 + 6, oy, lb.x1 - 6, oy + 38)
            sel = o == vals.get("track")
            if sel:
                p.rrect(ob, 6, fill=t["accent_soft"])
                p.icon("check", ob.x1 - 20, ob.center[1], 16, t["accent"])
            p.text(ob.x0 + 12, ob.center[1], o, 15, t["faint"] if i == 0 else t["text"])
            if i:
                p.add(f"option.{slug(o)}", ob)
            oy += 38


def _web_success(p: Painter, st, t) -> None:
    vals = st["values"]
    card = Box(340, 180, 940, 640)
    p.shadow(card, 14, blur=14, alpha=28, dy=4)
    p.rrect(card, 14, fill=rgb("#FFFFFF"), outline=rgb("#E4E7EC"))
    cx = card.center[0]
    p.circle(cx, card.y0 + 72, 36, fill=rgb("#DCFCE7"))
    p.icon("check", cx, card.y0 + 72, 40, t["success"])
    p.text(cx, card.y0 + 138, "You're registered!", 26, t["text"], anchor="mm", bold=True)
    p.text(cx, card.y0 + 172, f"A confirmation is on its way to {vals.get('email') or 'your inbox'}.", 14, t["muted"], anchor="mm")
    sb = Box(card.x0 + 40, card.y0 + 208, card.x1 - 40, card.y0 + 208 + 3 * 48)
    p.rrect(sb, 10, fill=rgb("#F8FAFC"), outline=rgb("#E4E7EC"))
    rows = [("Attendee", vals.get("name", "")), ("Workshop", vals.get("track", "")),
            ("When", "Sat 14 June, 9:30 - 12:30")]
    for i, (k, v) in enumerate(rows):
        ry = sb.y0 + 24 + i * 48
        if i:
            p.hline(sb.x0 + 16, sb.x1 - 16, sb.y0 + i * 48, rgb("#E4E7EC"))
        p.text(sb.x0 + 20, ry, k, 14, t["muted"])
        p.text(sb.x1 - 20, ry, v, 14, t["text"], anchor="rm", bold=True)
    b1 = Box(card.x0 + 40, card.y1 - 86, cx - 8, card.y1 - 40)
    b2 = Box(cx + 8, card.y1 - 86, card.x1 - 40, card.y1 - 40)
    p.rrect(b1, 10, fill=rgb("#FFFFFF"), outline=rgb("#D0D5DD"))
    p.text(b1.center[0], b1.center[1], "Add to calendar", 15, t["text"], anchor="mm")
    p.rrect(b2, 10, fill=t["accent"])
    p.text(b2.center[0], b2.center[1], "Back to program", 15, (255, 255, 255), anchor="mm", bold=True)
    p.add("button.add_to_calendar", b1)
    p.add("button.back_to_program", b2)


# --------------------------------------------------------------------------------------------------------------
# Phone (1080x2400)

PHONE_WALLPAPER = (
    (rgb("#0F3D5E"), rgb("#1F5F7A"), rgb("#3A2E6E")),
    ((0.8, 0.25, 0.35, rgb("#2A9D8F")), (0.2, 0.7, 0.4, rgb("#5B3F99")), (0.7, 0.85, 0.3, rgb("#1B2A55"))),
)
HOME_APPS = ["Clock", "Calendar", "Photos", "Maps", "Weather", "Notes", "Music", "Files", "Mail", "Store",
             "Calculator", "Settings"]
DOCK_APPS = ["Phone", "Messages", "Browser", "Camera"]

PHONE_SETTINGS_ROWS = [
    ("network_internet", "Network & internet", "Wi-Fi, mobile data, hotspot", "wifi", rgb("#2563EB")),
    ("connected_devices", "Connected devices", "Bluetooth, pairing", "bluetooth", rgb("#0D9488")),
    ("apps", "Apps", "Recent apps, default apps", "apps", rgb("#16A34A")),
    ("notifications", "Notifications", "Notification history, conversations", "bell", rgb("#EA580C")),
    ("battery", "Battery", "{battery}% - Should last until 11:30 PM", "battery", rgb("#65A30D")),
    ("storage", "Storage", "54% used - 58 GB free", "folder", rgb("#7C3AED")),
    ("sound", "Sound & vibration", "Volume, haptics, Do Not Disturb", "sound", rgb("#0891B2")),
    ("display", "Display", "Dark theme, font size, brightness", "sun", rgb("#4F46E5")),
    ("security", "Security & privacy", "App security, device lock", "shield", rgb("#DB2777")),
    ("about", "About phone", "Pixel 8", "info", rgb("#64748B")),
]

PHONE_DEFAULTS: dict[str, Any] = {
    "screen": "home", "clock": "9:41", "date": "Tuesday, May 14", "battery": 82, "temp": "18°C",
    "bt_on": False, "scanning": False, "found": 0, "device_name": "Pixel 8",
    "conversations": [
        ("Alex Chen", "Are we still on for 6?", "5:12 PM", True, rgb("#2563EB")),
        ("Mom", "Call me when you can", "4:40 PM", False, rgb("#DB2777")),
        ("Jordan Lee", "Sent the slides, take a look", "2:03 PM", False, rgb("#16A34A")),
        ("Priya Patel", "Haha yes, that was great", "Mon", False, rgb("#EA580C")),
        ("Smile Dental", "Reminder: appointment on Thu at 10:00", "Mon", False, rgb("#0891B2")),
        ("Sam Rivera", "Photo", "Sun", False, rgb("#7C3AED")),
        ("Book club", "Dana: Next one is The Overstory", "Sat", False, rgb("#CA8A04")),
    ],
    "thread": "Alex Chen",
    "messages": [
        (False, "Hey! Are we still on for dinner tonight?"),
        (True, "Yes! 6pm at Luigi's?"),
        (False, "Perfect, I booked a table for four"),
        (False, "Are we still on for 6?"),
    ],
    "draft": "", "keyboard": False,
}


def _phone_status(p: Painter, st, light: bool) -> None:
    c = (255, 255, 255) if light else rgb("#1F2937")
    p.text(64, 58, st["clock"], 38, c, bold=True)
    x = 1020
    bw, bh = 52, 26
    p.rrect((x - bw, 45, x, 45 + bh), 8, outline=c, width=3)
    p.rrect((x + 3, 52, x + 8, 64), 2, fill=c)
    p.rrect((x - bw + 6, 51, x - bw + 6 + (bw - 12) * st["battery"] / 100, 45 + bh - 6), 4, fill=c)
    p.text(x - bw - 12, 58, f"{st['battery']}%", 32, c, anchor="rm")
    p.icon("wifi", x - bw - 110, 56, 40, c)
    p.icon("signal", x - bw - 160, 56, 40, c)


def _gesture_bar(p: Painter, light: bool) -> None:
    c = (255, 255, 255) if light else rgb("#1F2937")
    p.rrect((540 - 130, 2360, 540 + 130, 2372), 6, fill=c)


def render_phone(state: Mapping[str, Any] | None = None) -> Screen:
    """An Android-like phone (1080x2400). State key ``screen``: home, drawer, settings, connected_devices,
    messages, conversation; plus bt_on, scanning, found (0-2), draft, keyboard (see PHONE_DEFAULTS)."""
    st = {**PHONE_DEFAULTS, **(state or {})}
    p = Painter(PHONE_SIZE, rgb("#F6F7FA"))
    screen = st["screen"]
    light_status = screen in ("home", "drawer")
    {"home": _phone_home, "drawer": _phone_drawer, "settings": _phone_settings,
     "connected_devices": _phone_connected, "messages": _phone_messages,
     "conversation": _phone_conversation}[screen](p, st)
    _phone_status(p, st, light_status)
    _gesture_bar(p, light_status and screen == "home")
    return p.screen("phone", st)


def _phone_app(p: Painter, app: str, cx: int, cy: int, label_color: Color | None, shadow: bool = True) -> None:
    b = draw_app_icon(p, app, cx, cy, 156)
    if label_color is not None:
        if shadow:
            p.text(cx + 2, cy + 124, app, 34, (20, 24, 40), anchor="mm")
        p.text(cx, cy + 122, app, 34, label_color, anchor="mm")
        p.add(f"app.{slug(app)}", (b.x0 - 16, b.y0 - 10, b.x1 + 16, cy + 150))
    else:
        p.add(f"app.{slug(app)}", b.inset(-10))


def _phone_home(p: Painter, st) -> None:
    stops, blobs = PHONE_WALLPAPER
    p.paste(_wallpaper(1080, 2400, stops, blobs), 0, 0)
    white = (255, 255, 255)
    p.text(72, 300, st["date"], 52, white)
    p.icon("sun", 96, 390, 52, rgb("#FCD34D"))
    p.text(140, 392, f"{st['temp']}  Mostly sunny", 40, rgb("#E5E7EB"))
    p.add("widget.glance", (56, 250, 760, 430))
    cols = [135, 405, 675, 945]
    for i, app in enumerate(HOME_APPS):
        _phone_app(p, app, cols[i % 4], 1160 + (i // 4) * 290, white)
    dock = Box(40, 1990, 1040, 2190)
    p.img.paste(white, dock.as_tuple(), _rrect_mask(dock.w, dock.h, 70).point(lambda v: v * 46 // 255))
    for i, app in enumerate(DOCK_APPS):
        _phone_app(p, app, cols[i], 2090, None)
    sb = Box(56, 2222, 1024, 2330)
    p.rrect(sb, 54, fill=rgb("#F1F3F7"))
    p.icon("search", sb.x0 + 70, sb.center[1], 48, rgb("#4B5563"))
    p.text(sb.x0 + 120, sb.center[1], "Search", 40, rgb("#6B7280"))
    p.icon("mic", sb.x1 - 70, sb.center[1], 48, rgb("#4B5563"))
    p.add("search.bar", sb)


def _phone_drawer(p: Painter, st) -> None:
    stops, blobs = PHONE_WALLPAPER
    p.paste(_wallpaper(1080, 2400, stops, blobs), 0, 0)
    sheet = Box(0, 140, 1080, 2400)
    p.rrect(sheet, 60, fill=rgb("#F4F5F9"), corners=(True, True, False, False))
    p.rrect((490, 168, 590, 180), 6, fill=rgb("#C4C9D2"))
    sb = Box(56, 220, 1024, 336)
    p.rrect(sb, 58, fill=rgb("#E4E7EE"))
    p.icon("search", sb.x0 + 70, sb.center[1], 48, rgb("#4B5563"))
    p.text(sb.x0 + 120, sb.center[1], "Search apps", 40, rgb("#6B7280"))
    p.add("search.apps", sb)
    apps = sorted(set(HOME_APPS + DOCK_APPS + ["Contacts"]))
    cols = [135, 405, 675, 945]
    for i, app in enumerate(apps):
        _phone_app(p, app, cols[i % 4], 520 + (i // 4) * 300, rgb("#1F2937"), shadow=False)


def _phone_title(p: Painter, title: str, back: bool) -> int:
    if back:
        p.icon("arrow_left", 84, 190, 60, rgb("#1F2937"))
        p.add("nav.back", (34, 140, 134, 240))
    p.text(64, 360, title, 72, rgb("#111827"), bold=True)
    return 470


def _phone_settings(p: Painter, st) -> None:
    y = _phone_title(p, "Settings", back=False)
    sb = Box(48, y - 10, 1032, y + 110)
    p.rrect(sb, 60, fill=rgb("#E6E9F0"))
    p.icon("search", sb.x0 + 70, sb.center[1], 48, rgb("#374151"))
    p.text(sb.x0 + 124, sb.center[1], "Search settings", 40, rgb("#4B5563"))
    p.add("search.settings", sb)
    y += 150
    for key, title, sub, ic, color in PHONE_SETTINGS_ROWS:
        if y + 170 > 2330:
            break
        b = Box(0, y, 1080, y + 170)
        cy = b.center[1]
        p.circle(120, cy, 50, fill=color)
        p.icon(ic, 120, cy, 52, (255, 255, 255))
        p.text(212, cy - 26, title, 44, rgb("#111827"))
        p.text(212, cy + 30, sub.format(battery=st["battery"]), 34, rgb("#6B7280"), max_w=820)
        p.add(f"row.{key}", b)
        y += 170


def _phone_toggle(p: Painter, x: int, cy: int, on: bool) -> Box:
    t = theme(False, "blue")
    w, h = 124, 68
    b = Box(x, cy - h // 2, x + w, cy + h // 2)
    if on:
        p.rrect(b, h // 2, fill=t["accent"])
        p.circle(b.x1 - h // 2, cy, 24, fill=(255, 255, 255))
        p.icon("check", b.x1 - h // 2, cy, 30, t["accent"])
    else:
        p.rrect(b, h // 2, fill=rgb("#E4E7EC"), outline=rgb("#6B7280"), width=4)
        p.circle(b.x0 + h // 2, cy, 16, fill=rgb("#6B7280"))
    return b


def _phone_connected(p: Painter, st) -> None:
    t = theme(False, "blue")
    y = _phone_title(p, "Connected devices", back=True)
    y += 10

    def row(key: str, title: str, sub: str | None, icon: str | None, icon_color: Color = rgb("#374151"), h: int = 170) -> Box:
        nonlocal y
        b = Box(0, y, 1080, y + h)
        cy = b.center[1]
        tx = 64
        if icon:
            p.icon(icon, 104, cy, 56, icon_color)
            tx = 190
        if sub:
            p.text(tx, cy - 26, title, 44, rgb("#111827"))
            p.text(tx, cy + 30, sub, 34, rgb("#6B7280"), max_w=1080 - tx - 200)
        else:
            p.text(tx, cy, title, 44, rgb("#111827"))
        p.add(f"row.{key}", b)
        y += h
        return b

    row("pair_new_device", "Pair new device", None, "plus", t["accent"], 150)
    b = row("bluetooth", "Bluetooth", "On" if st["bt_on"] else "Off", "bluetooth")
    p.vline(880, b.y0 + 40, b.y1 - 40, rgb("#D0D5DD"), 2)
    p.add("toggle.bluetooth", _phone_toggle(p, 912, round(b.center[1]), st["bt_on"]))
    if st["bt_on"]:
        p.text(64, y + 30, f"Visible as \u201c{st['device_name']}\u201d to other devices", 34, rgb("#6B7280"))
        y += 90
        y += 30
        p.text(64, y + 20, "Available devices", 36, t["accent_text"], bold=True)
        if st["scanning"]:
            p.draw.arc((960, y - 6, 1012, y + 46), 200, 470, fill=t["accent"], width=6)
        y += 60
        found = [("jbl_flip_5", "JBL Flip 5", "speaker"), ("galaxy_watch5", "Galaxy Watch5 (7C1A)", "watch")]
        for key, name, ic in found[: st["found"]]:
            row(key, name, "Available", ic)
        if st["found"] == 0:
            p.text(64, y + 40, "Searching for nearby devices…", 38, rgb("#6B7280"))
            y += 100
    y += 30
    p.text(64, y + 20, "Previously connected devices", 36, t["accent_text"], bold=True)
    y += 60
    row("pixel_buds_pro", "Pixel Buds Pro", "Not connected" if st["bt_on"] else "Turn on Bluetooth to connect", "headphones")
    row("honda_hft", "Honda HFT", "Not connected" if st["bt_on"] else "Turn on Bluetooth to connect", "car")
    y += 10
    p.hline(0, 1080, y, rgb("#E4E7EC"), 2)
    y += 10
    row("connection_preferences", "Connection preferences", "Bluetooth, Android Auto, NFC", "settings_none" if False else None)


def _phone_messages(p: Painter, st) -> None:
    t = theme(False, "blue")
    p.text(64, 230, "Messages", 60, rgb("#111827"), bold=True)
    p.icon("search", 900, 230, 56, rgb("#374151"))
    p.add("button.search", (860, 190, 940, 270))
    draw_avatar(p, 1000, 230, 42, "M", rgb("#7C3AED"), 36)
    p.add("button.account", (958, 188, 1042, 272))
    y = 320
    for name, preview, when, unread, color in st["conversations"]:
        b = Box(0, y, 1080, y + 200)
        cy = b.center[1]
        initials = "".join(w[0] for w in name.split()[:2]).upper()
        draw_avatar(p, 124, cy, 62, initials, color, 48)
        p.text(226, cy - 30, name, 44, rgb("#111827"), bold=unread, max_w=600)
        p.text(226, cy + 30, preview, 38, rgb("#111827") if unread else rgb("#6B7280"), bold=unread, max_w=640)
        p.text(1016, cy - 30, when, 32, t["accent_text"] if unread else rgb("#6B7280"), anchor="rm", bold=unread)
        if unread:
            p.circle(1000, cy + 30, 14, fill=t["accent"])
        p.add(f"conversation.{slug(name)}", b)
        y += 200
    fab = Box(650, 2150, 1020, 2296)
    p.shadow(fab, 40, blur=10, alpha=50, dy=6)
    p.rrect(fab, 40, fill=rgb("#D6E4FF"))
    p.icon("message", fab.x0 + 80, fab.center[1], 52, rgb("#1E3A8A"))
    p.text(fab.x0 + 130, fab.center[1], "Start chat", 40, rgb("#1E3A8A"), bold=True)
    p.add("button.start_chat", fab)


KEY_ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]


def _keyboard(p: Painter, top: int, suggestions: list[str]) -> None:
    t = theme(False, "blue")
    p.rect((0, top, 1080, 2400), rgb("#E6E9EF"))
    sy = top + 60
    for i, s in enumerate(suggestions[:3]):
        cx = 180 + i * 360
        p.text(cx, sy, s, 38, rgb("#1F2937"), anchor="mm", bold=i == 1)
        if i:
            p.vline(i * 360, sy - 24, sy + 24, rgb("#C4C9D2"), 2)
    y = top + 122
    kh, gap, margin = 126, 12, 14
    kw = (1080 - 2 * margin - 9 * gap) / 10

    def key(x0: float, w: float, label: str, name: str, special: bool = False, icon: str | None = None, accent: bool = False) -> None:
        b = Box(round(x0), y, round(x0 + w), y + kh)
        fill = t["accent"] if accent else (rgb("#CDD3DD") if special else rgb("#FFFFFF"))
        p.rrect((b.x0, b.y0 + 3, b.x1, b.y1 + 3), 18, fill=rgb("#B4BAC6"))
        p.rrect(b, 18, fill=fill)
        col = (255, 255, 255) if accent else rgb("#111827")
        if icon:
            p.icon(icon, b.center[0], b.center[1], 52, col)
        else:
            p.text(b.center[0], b.center[1] - 2, label, 50 if len(label) == 1 else 36, col, anchor="mm")
        p.add(f"key.{name}", b)

    for r, letters in enumerate(KEY_ROWS):
        if r == 0:
            x = margin
        elif r == 1:
            x = margin + (kw + gap) / 2
        else:
            sw = kw * 1.5 + gap / 2
            key(margin, sw, "", "shift", special=True, icon="shift")
            x = margin + sw + gap
        for ch in letters:
            key(x, kw, ch, ch)
            x += kw + gap
        if r == 2:
            key(x, 1080 - margin - x, "", "backspace", special=True, icon="backspace")
        y += kh + gap + 10
    x = margin
    for label, name, units, special, icon, accent in (("?123", "symbols", 1.5, True, None, False), (",", "comma", 1, True, None, False),
                                                       ("", "emoji", 1, True, "smile", False), ("", "space", 4, False, None, False),
                                                       (".", "period", 1, True, None, False), ("", "enter", 1.5, True, "enter", True)):
        w = kw * units + gap * (units - 1)
        key(x, w, label, name, special=special, icon=icon, accent=accent)
        x += w + gap


def _phone_conversation(p: Painter, st) -> None:
    t = theme(False, "blue")
    name = st["thread"]
    color = next((c[4] for c in st["conversations"] if c[0] == name), t["accent"])
    # app bar
    p.rect((0, 0, 1080, 260), rgb("#F6F7FA"))
    p.icon("arrow_left", 80, 190, 58, rgb("#1F2937"))
    p.add("nav.back", (30, 140, 130, 240))
    draw_avatar(p, 210, 190, 46, "".join(w[0] for w in name.split()[:2]).upper(), color, 36)
    p.text(280, 190, name, 46, rgb("#111827"), bold=True)
    p.icon("phone", 880, 190, 52, rgb("#374151"))
    p.add("button.call", (840, 150, 920, 230))
    p.icon("more_vert", 1000, 190, 52, rgb("#374151"))
    p.add("button.more", (960, 150, 1040, 230))
    p.hline(0, 1080, 260, rgb("#E4E7EC"), 2)
    # input bar (above the keyboard when shown)
    kb_top = 2400 - 812
    bottom = kb_top if st["keyboard"] else 2330
    draft = st["draft"]
    field_w = 1080 - 190 - 150
    lines = wrap_text(draft, 40, field_w - 140) if draft else [""]
    fh = max(124, 56 * len(lines) + 68)
    field = Box(176, bottom - 24 - fh, 176 + field_w, bottom - 24)
    p.rect((0, field.y0 - 24, 1080, bottom), rgb("#F6F7FA"))
    p.circle(100, field.y1 - 62, 48, fill=rgb("#DCE6FB"))
    p.icon("plus", 100, field.y1 - 62, 48, rgb("#1E3A8A"))
    p.add("button.attach", (52, field.y1 - 110, 148, field.y1 - 14))
    p.rrect(field, 58, fill=rgb("#E9ECF2"), outline=t["accent"] if st["keyboard"] else None, width=3)
    if draft:
        for i, line in enumerate(lines):
            ly = field.y0 + 62 + i * 56
            w = p.text(field.x0 + 48, ly, line, 40, rgb("#111827"))
        if st["keyboard"]:
            p.vline(field.x0 + 50 + w, ly - 26, ly + 26, t["accent"], 4)
    else:
        p.text(field.x0 + 48, field.center[1], "Text message", 40, rgb("#6B7280"))
        if st["keyboard"]:
            p.vline(field.x0 + 46, field.center[1] - 26, field.center[1] + 26, t["accent"], 4)
    p.icon("smile", field.x1 - 62, field.y1 - 62, 52, rgb("#4B5563"))
    p.add("input.message", field)
    p.add("button.emoji", (field.x1 - 104, field.y1 - 104, field.x1 - 20, field.y1 - 20))
    sc = (1080 - 80, field.y1 - 62)
    if draft:
        p.circle(sc[0], sc[1], 56, fill=t["accent"])
        p.icon("send", sc[0] + 3, sc[1], 52, (255, 255, 255))
        p.add("button.send", (sc[0] - 58, sc[1] - 58, sc[0] + 58, sc[1] + 58))
    else:
        p.circle(sc[0], sc[1], 56, fill=rgb("#E9ECF2"))
        p.icon("mic", sc[0], sc[1], 52, rgb("#374151"))
        p.add("button.voice", (sc[0] - 58, sc[1] - 58, sc[0] + 58, sc[1] + 58))
    # bubbles, stacked upwards from the input bar
    y = field.y0 - 60
    msgs = list(st["messages"])
    blocks = []
    for i in range(len(msgs) - 1, -1, -1):
        mine, text = msgs[i]
        blines = wrap_text(text, 40, 700)
        bw = max(text_width(line, 40) for line in blines) + 80
        bh = 56 * len(blines) + 52
        last_of_group = i == len(msgs) - 1 or msgs[i + 1][0] != mine
        if last_of_group:
            y -= 44
        y0 = y - bh
        if y0 < 290:
            break
        blocks.append((mine, blines, bw, y0, bh, last_of_group, i))
        y = y0 - 12
    for mine, blines, bw, y0, bh, last, i in blocks:
        x0 = 1080 - 48 - bw if mine else 48
        b = Box(round(x0), round(y0), round(x0 + bw), round(y0 + bh))
        p.rrect(b, 46, fill=t["accent"] if mine else rgb("#E6E9EF"))
        for j, line in enumerate(blines):
            p.text(b.x0 + 40, b.y0 + 54 + j * 56, line, 40, (255, 255, 255) if mine else rgb("#111827"))
        if last:
            label = st.get("times", {}).get(i, "")
            if label:
                p.text(b.x1 - 10 if mine else b.x0 + 10, b.y1 + 26, label, 30, rgb("#6B7280"), anchor="rm" if mine else "lm")
        p.add(f"bubble.{i}", b)
    if st["keyboard"]:
        sugg = ["I'm", "On my way", "Thanks"] if not draft else ["me", "you", "everyone"]
        _keyboard(p, kb_top, sugg)
