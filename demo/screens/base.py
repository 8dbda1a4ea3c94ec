"""The drawing kit of the demo screens: boxes, colours, fonts, masks, icons, the Painter and common widgets.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

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

    def inset(self, dx: int, dy: int | None = None) -> Box:
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


@cache
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
        left, t, r, b = map(int, f.getbbox(s, anchor=anchor, stroke_width=1))
        left -= left % 2
        t -= t % 2
        w, h = r - left + 2, b - t + 2
        w += w % 2
        h += h % 2
        m = Image.new("L", (w, h), 0)
        ImageDraw.Draw(m).text((-left, -t), s, font=f, fill=255, anchor=anchor, stroke_width=1, stroke_fill=255)
        return m.reduce(2), left // 2, t // 2
    f = font(size)
    left, t, r, b = map(int, f.getbbox(s, anchor=anchor))
    m = Image.new("L", (max(1, r - left), max(1, b - t)), 0)
    ImageDraw.Draw(m).text((-left, -t), s, font=f, fill=255, anchor=anchor)
    return m, left, t


_SS = 4  # supersampling factor of the shape masks


@lru_cache(maxsize=256)
def _corner(r: int) -> Image.Image:
    """Top-left quarter disc of radius ``r``, anti-aliased."""
    n = 2 * r * _SS
    m = Image.new("L", (n, n), 0)
    ImageDraw.Draw(m).ellipse((0, 0, n - 1, n - 1), fill=255)
    return m.reduce(_SS).crop((0, 0, r, r))


@lru_cache(maxsize=192)
def rounded_rect_mask(w: int, h: int, r: int, corners: tuple[bool, bool, bool, bool] = (True,) * 4) -> Image.Image:
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
    outer = rounded_rect_mask(w, h, r, corners)
    inner = Image.new("L", (w, h), 0)
    if w > 2 * width and h > 2 * width:
        inner.paste(rounded_rect_mask(w - 2 * width, h - 2 * width, max(0, r - width), corners), (width, width))
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
    return ImageChops.multiply(grad, rounded_rect_mask(size, size, r))


@lru_cache(maxsize=64)
def _shadow_mask(w: int, h: int, r: int, blur: int, alpha: int) -> Image.Image:
    pad = blur * 2
    m = Image.new("L", (w + 2 * pad, h + 2 * pad), 0)
    m.paste(rounded_rect_mask(w, h, r), (pad, pad))
    # blur a quarter-size copy: same look, a fraction of the cost
    small = m.resize((max(1, m.width // 4), max(1, m.height // 4)), Image.Resampling.BILINEAR)
    small = small.filter(ImageFilter.GaussianBlur(max(1, blur / 4)))
    big = small.resize(m.size, Image.Resampling.BILINEAR)
    return big.point(lambda v: v * alpha // 255)


@lru_cache(maxsize=16)
def wallpaper(
    w: int, h: int, stops: tuple[Color, Color, Color], blobs: tuple[tuple[float, float, float, Color], ...]
) -> Image.Image:
    """A smooth abstract wallpaper: a diagonal 3-stop gradient plus soft colour blobs."""
    sw, sh = 96, max(2, round(96 * h / w))
    small = Image.new("RGB", (sw, sh))
    px = small.load()
    assert px is not None, "a new image has its pixels"
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
    x: float  # grid coordinates and radii, whole or half units
    y: float
    r: float
    gx: float
    gy: float
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
        poly(
            [
                (5.5, 2.5),
                (9.5, 2.5),
                (11, 7.5),
                (8.5, 9.5),
                (14.5, 15.5),
                (16.5, 13),
                (21.5, 14.5),
                (21.5, 18.5),
                (19, 21.5),
                (16, 21.5),
                (8, 17),
                (3.5, 10),
                (2.5, 6),
            ]
        )
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

    def rrect(
        self,
        box,
        r: int,
        fill: Color | None = None,
        outline: Color | None = None,
        width: int = 1,
        corners: tuple[bool, bool, bool, bool] = (True, True, True, True),
    ) -> None:
        x0, y0, x1, y1 = (round(v) for v in (box.as_tuple() if isinstance(box, Box) else box))
        w, h = x1 - x0, y1 - y0
        if w <= 0 or h <= 0:
            return
        r = round(r)
        if outline is not None and fill is not None:
            self.mask(outline, x0, y0, rounded_rect_mask(w, h, r, corners))
            if w > 2 * width and h > 2 * width:
                self.mask(
                    fill,
                    x0 + width,
                    y0 + width,
                    rounded_rect_mask(w - 2 * width, h - 2 * width, max(0, r - width), corners),
                )
        elif fill is not None:
            self.mask(fill, x0, y0, rounded_rect_mask(w, h, r, corners))
        elif outline is not None:
            self.mask(outline, x0, y0, _ring_mask(w, h, r, width, corners))

    def circle(
        self, cx: float, cy: float, r: float, fill: Color | None = None, outline: Color | None = None, width: int = 1
    ) -> None:
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

    def text(
        self,
        x: float,
        y: float,
        s: str,
        size: int = 15,
        color: Color = (17, 24, 39),
        anchor: str = "lm",
        bold: bool = False,
        max_w: float | None = None,
    ) -> float:
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
            window=rgb("#1E2028"),
            header=rgb("#262830"),
            sidebar=rgb("#23252D"),
            border=rgb("#363945"),
            card=rgb("#2A2D36"),
            card_border=rgb("#383B47"),
            text=rgb("#ECEEF2"),
            muted=rgb("#9CA3AF"),
            faint=rgb("#6B7280"),
            hover=rgb("#343743"),
            toggle_off=rgb("#4B5060"),
            track=rgb("#454957"),
            input=rgb("#22242B"),
            knob=rgb("#FFFFFF"),
            danger=rgb("#F87171"),
            success=rgb("#4ADE80"),
        )
        a = mix(a, (255, 255, 255), 0.18)
        t.update(accent=a, accent_soft=mix(t["window"], a, 0.26), accent_text=mix(a, (255, 255, 255), 0.45))
    else:
        t = dict(
            window=rgb("#FFFFFF"),
            header=rgb("#F7F8FA"),
            sidebar=rgb("#F3F4F7"),
            border=rgb("#E3E6EB"),
            card=rgb("#FFFFFF"),
            card_border=rgb("#E4E7EC"),
            text=rgb("#151A23"),
            muted=rgb("#667085"),
            faint=rgb("#98A2B3"),
            hover=rgb("#E9ECF0"),
            toggle_off=rgb("#CDD2DA"),
            track=rgb("#E2E6EC"),
            input=rgb("#FFFFFF"),
            knob=rgb("#FFFFFF"),
            danger=rgb("#DC2626"),
            success=rgb("#16A34A"),
        )
        t.update(accent=a, accent_soft=mix(a, (255, 255, 255), 0.86), accent_text=mix(a, (0, 0, 0), 0.15))
    return t


def draw_toggle(p: Painter, x: int, y: int, on: bool, t: Mapping[str, Color], w: int = 46, h: int = 26) -> Box:
    """A switch with its top-left at (x, y)."""
    p.rrect((x, y, x + w, y + h), h // 2, fill=t["accent"] if on else t["toggle_off"])
    r = h // 2 - 3
    cx = x + w - h // 2 if on else x + h // 2
    p.circle(
        cx,
        y + h / 2 + 1,
        r + 0.5,
        fill=mix(t["toggle_off"], (0, 0, 0), 0.25) if not on else mix(t["accent"], (0, 0, 0), 0.3),
    )
    p.circle(cx, y + h / 2, r, fill=t["knob"])
    return Box(x, y, x + w, y + h)


def draw_slider(
    p: Painter, x0: int, x1: int, cy: int, value: float, t: Mapping[str, Color], knob_r: int = 10
) -> tuple[Box, Box]:
    """A 0..100 slider whose track runs from x0 to x1; returns (hit box spanning the track, knob box)."""
    p.rrect((x0, cy - 3, x1, cy + 3), 3, fill=t["track"])
    kx = x0 + (x1 - x0) * max(0.0, min(100.0, value)) / 100
    p.rrect((x0, cy - 3, kx, cy + 3), 3, fill=t["accent"])
    p.circle(kx, cy + 1, knob_r + 1, fill=mix(t["track"], (0, 0, 0), 0.18))
    p.circle(kx, cy, knob_r, fill=t["knob"], outline=t["accent"], width=2)
    return Box(x0, cy - 14, x1, cy + 14), Box(
        round(kx - knob_r - 2), cy - knob_r - 2, round(kx + knob_r + 2), cy + knob_r + 2
    )


def draw_avatar(
    p: Painter, cx: float, cy: float, r: float, initials: str, color: Color, size: int | None = None
) -> None:
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

FOLDER_GLYPHS = {
    "Desktop": "display",
    "Documents": "file",
    "Downloads": "download",
    "Music": "music",
    "Pictures": "image",
    "Videos": "video",
    "Projects": "star",
}


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
    p.draw.polygon(
        [(x1 - fold, y0), (x1 + 1, y0 - 1), (x1 + 1, y0 + fold)], fill=p.img.getpixel((round(x1 + 2), round(y0 + 2)))
    )
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
            p.text(
                (band[0] + band[2]) / 2,
                (band[1] + band[3]) / 2,
                label,
                max(7, round(4.3 * s)),
                (255, 255, 255),
                anchor="mm",
                bold=True,
            )


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
