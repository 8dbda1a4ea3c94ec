"""Believable UI screenshots rendered with Pillow, with the boxes of their named widgets, by screen family.

Every renderer is a pure function of a small state dict::

    screen = render_settings({"page": "display", "brightness": 45})
    screen.image            # PIL.Image.Image, 1920x1080 RGB
    screen.widgets["sidebar.bluetooth"]   # Box(x0, y0, x1, y1), pixels, x1/y1 exclusive
    screen.center("toggle.night_light")   # (x, y) float pixel centre

- :mod:`demo.screens.base`: the drawing kit (boxes, fonts, masks, icons, :class:`Painter`, widgets);
- :mod:`demo.screens.desktop`: :func:`render_settings`, :func:`render_files` (1920x1080);
- :mod:`demo.screens.web`: :func:`render_web` (a browser, 1280x800);
- :mod:`demo.screens.phone`: :func:`render_phone` (1080x2400).
"""

from demo.screens.base import DESKTOP_SIZE, PHONE_SIZE, WEB_SIZE, Box, Screen
from demo.screens.desktop import make_file_system, render_files, render_settings
from demo.screens.phone import PHONE_DEFAULTS, render_phone
from demo.screens.web import render_web

__all__ = [
    "DESKTOP_SIZE",
    "PHONE_DEFAULTS",
    "PHONE_SIZE",
    "WEB_SIZE",
    "Box",
    "Screen",
    "make_file_system",
    "render_files",
    "render_phone",
    "render_settings",
    "render_web",
]
