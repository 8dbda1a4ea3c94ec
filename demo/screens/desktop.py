"""Desktop screens (1920x1080): the shell, the Settings app and the Files app."""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from PIL import Image

from demo.screens.base import (
    ACCENTS,
    DESKTOP_SIZE,
    Box,
    Color,
    Painter,
    Screen,
    draw_app_icon,
    draw_avatar,
    draw_entry_icon,
    draw_folder,
    draw_slider,
    draw_toggle,
    fit_text,
    mix,
    rgb,
    rounded_rect_mask,
    slug,
    text_width,
    theme,
    wallpaper,
    wrap_text,
)

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
def _desktop_base(
    active_app: str, window_fill: Color, window_border: Color
) -> tuple[Image.Image, tuple[tuple[str, Box], ...]]:
    """Wallpaper, taskbar (without the clock) and the empty window with its shadow; cached, it never changes."""
    p = Painter(DESKTOP_SIZE)
    W, H = p.W, p.H
    stops, blobs = DESKTOP_WALLPAPER
    p.paste(wallpaper(W, H, stops, blobs), 0, 0)
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
    "page": "wifi",
    "dark_mode": False,
    "accent": "blue",
    "brightness": 45,
    "night_light": False,
    "wifi_on": True,
    "bluetooth_on": True,
    "airplane": False,
    "volume": 65,
    "dnd": False,
    "transparency": True,
    "text_size": 50,
    "animations": True,
    "clock": "10:42",
    "date": "Tue 14 May",
    "user": "Alex Morgan",
    "hostname": "alex-laptop",
    "battery": 82,
    "networks": [
        ("HomeNet-5G", 4, True),
        ("HomeNet", 3, True),
        ("CoffeeBar_Guest", 2, False),
        ("Office-Secure", 2, True),
        ("DIRECT-7C-Printer", 1, True),
    ],
}


def _settings_sections(st: Mapping[str, Any]) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """Page content as (heading, rows). Row kinds: toggle, slider, dropdown, link, network, device, app_toggle,
    swatches, display_preview, style_preview, battery."""
    page = st["page"]
    if page == "wifi":
        nets = []
        for i, (name, bars, secured) in enumerate(st["networks"]):
            nets.append(
                dict(
                    kind="network",
                    key=slug(name),
                    title=name,
                    bars=bars,
                    secured=secured,
                    connected=(i == 0 and st["wifi_on"]),
                )
            )
        return [
            (
                None,
                [
                    dict(
                        kind="toggle", key="wifi", title="Wi-Fi", sub="Connect to wireless networks", on=st["wifi_on"]
                    ),
                    dict(
                        kind="toggle",
                        key="airplane",
                        title="Airplane mode",
                        sub="Disable Wi-Fi, Bluetooth and mobile broadband",
                        on=st["airplane"],
                    ),
                ],
            ),
            (
                "Visible networks",
                nets if st["wifi_on"] else [dict(kind="link", key="wifi_off", title="Wi-Fi is turned off", value="")],
            ),
            (
                None,
                [
                    dict(kind="link", key="known_networks", title="Known networks", value="6 saved"),
                    dict(kind="link", key="hidden_network", title="Connect to hidden network…", value=""),
                ],
            ),
        ]
    if page == "network":
        return [
            (
                "Wired",
                [dict(kind="toggle", key="wired", title="Ethernet (enp3s0)", sub="Connected - 1000 Mb/s", on=True)],
            ),
            (
                "VPN",
                [
                    dict(kind="link", key="vpn_office", title="Office VPN", value="Not connected"),
                    dict(kind="link", key="vpn_add", title="Add VPN…", value=""),
                ],
            ),
            ("Proxy", [dict(kind="dropdown", key="proxy", title="Network proxy", value="Off")]),
        ]
    if page == "bluetooth":
        devs = [
            ("WH-1000XM4", "headphones", "Connected - Battery 70%"),
            ("MX Master 3", "mouse", "Connected"),
            ("Pixel 8", "smartphone", "Not connected"),
            ("Keychron K2", "keyboard", "Not connected"),
        ]
        rows = (
            [dict(kind="device", key=slug(n), title=n, icon=ic, sub=s) for n, ic, s in devs]
            if st["bluetooth_on"]
            else [dict(kind="link", key="bt_off", title="Turn on Bluetooth to see devices", value="")]
        )
        return [
            (
                None,
                [
                    dict(
                        kind="toggle",
                        key="bluetooth",
                        title="Bluetooth",
                        sub=f"Visible as \u201c{st['hostname']}\u201d" if st["bluetooth_on"] else "Off",
                        on=st["bluetooth_on"],
                    )
                ],
            ),
            ("Devices", rows),
            (None, [dict(kind="link", key="pair_device", title="Pair a new device…", value="")]),
        ]
    if page == "display":
        rows = [
            dict(kind="slider", key="brightness", title="Brightness", value=st["brightness"]),
            dict(
                kind="toggle",
                key="night_light",
                title="Night Light",
                sub="Warmer colours to reduce eye strain at night",
                on=st["night_light"],
            ),
        ]
        if st["night_light"]:
            rows.append(dict(kind="dropdown", key="night_light_schedule", title="Schedule", value="Sunset to Sunrise"))
        return [
            (None, [dict(kind="display_preview", key="display_preview")]),
            ("Brightness & colour", rows),
            (
                "Layout",
                [
                    dict(kind="dropdown", key="resolution", title="Resolution", value="1920 x 1080 (16:9)"),
                    dict(kind="dropdown", key="scale", title="Scale", value="100%"),
                    dict(kind="dropdown", key="refresh_rate", title="Refresh rate", value="60.00 Hz"),
                ],
            ),
        ]
    if page == "sound":
        return [
            (
                "Output",
                [
                    dict(
                        kind="dropdown", key="output_device", title="Output device", value="Speakers - Built-in Audio"
                    ),
                    dict(kind="slider", key="volume", title="Volume", value=st["volume"]),
                    dict(kind="slider", key="balance", title="Balance", value=50),
                ],
            ),
            (
                "Input",
                [
                    dict(
                        kind="dropdown", key="input_device", title="Input device", value="Microphone - Built-in Audio"
                    ),
                    dict(kind="slider", key="input_volume", title="Input volume", value=70),
                ],
            ),
            (
                "Alerts",
                [
                    dict(kind="dropdown", key="alert_sound", title="Alert sound", value="Click"),
                    dict(
                        kind="toggle",
                        key="system_sounds",
                        title="System sounds",
                        sub="Play sounds for system events",
                        on=True,
                    ),
                ],
            ),
        ]
    if page == "notifications":
        apps = [("Calendar", True), ("Mail", True), ("Messages", True), ("Files", False), ("Terminal", False)]
        return [
            (
                None,
                [
                    dict(
                        kind="toggle",
                        key="dnd",
                        title="Do Not Disturb",
                        sub="Mute notifications except alarms",
                        on=st["dnd"],
                    ),
                    dict(
                        kind="toggle",
                        key="lock_screen_notifications",
                        title="Lock screen notifications",
                        sub="Show notifications while the screen is locked",
                        on=True,
                    ),
                ],
            ),
            ("Applications", [dict(kind="app_toggle", key=f"app_{slug(a)}", title=a, on=on) for a, on in apps]),
        ]
    if page == "appearance":
        return [
            ("Style", [dict(kind="style_preview", key="style")]),
            (
                None,
                [
                    dict(
                        kind="toggle",
                        key="dark_mode",
                        title="Dark mode",
                        sub="Use dark colours for windows and apps",
                        on=st["dark_mode"],
                    ),
                    dict(kind="swatches", key="accent", title="Accent colour", value=st["accent"]),
                    dict(
                        kind="toggle",
                        key="transparency",
                        title="Transparency effects",
                        sub="Panels and menus let the wallpaper through",
                        on=st["transparency"],
                    ),
                    dict(kind="slider", key="text_size", title="Text size", value=st["text_size"]),
                ],
            ),
        ]
    if page == "privacy":
        return [
            (
                "Permissions",
                [
                    dict(kind="link", key="location", title="Location services", value="Off"),
                    dict(kind="link", key="camera", title="Camera", value="2 apps"),
                    dict(kind="link", key="microphone", title="Microphone", value="3 apps"),
                ],
            ),
            (
                "Security",
                [
                    dict(kind="dropdown", key="screen_lock", title="Automatic screen lock", value="5 minutes"),
                    dict(
                        kind="toggle",
                        key="file_history",
                        title="File history",
                        sub="Remember recently used files",
                        on=True,
                    ),
                    dict(
                        kind="toggle",
                        key="diagnostics",
                        title="Send diagnostics",
                        sub="Help improve the system",
                        on=False,
                    ),
                ],
            ),
        ]
    if page == "power":
        return [
            ("Battery", [dict(kind="battery", key="battery", value=st["battery"])]),
            (
                "Power saving",
                [
                    dict(kind="dropdown", key="power_mode", title="Power mode", value="Balanced"),
                    dict(kind="dropdown", key="screen_blank", title="Screen blank", value="5 minutes"),
                    dict(
                        kind="toggle",
                        key="auto_suspend",
                        title="Automatic suspend",
                        sub="When on battery power",
                        on=True,
                    ),
                    dict(
                        kind="toggle",
                        key="battery_percentage",
                        title="Show battery percentage",
                        sub="In the top bar",
                        on=False,
                    ),
                ],
            ),
        ]
    # about
    return [
        (
            None,
            [
                dict(kind="link", key="device_name", title="Device name", value=st["hostname"]),
                dict(kind="link", key="model", title="Hardware model", value="Framework Laptop 13"),
                dict(kind="link", key="memory", title="Memory", value="16.0 GiB"),
                dict(kind="link", key="processor", title="Processor", value="Intel Core i7-1260P x 16"),
                dict(kind="link", key="disk", title="Disk capacity", value="512.1 GB"),
            ],
        ),
        (
            None,
            [
                dict(kind="link", key="os", title="OS name", value="Trace OS 24.04 LTS"),
                dict(kind="link", key="updates", title="Software updates", value="Up to date"),
            ],
        ),
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
    p.rrect(
        (win.x0 + 1, win.y0 + 1, win.x0 + side_w, win.y1 - 1), 11, fill=t["sidebar"], corners=(True, False, False, True)
    )
    p.rrect(
        (win.x0 + side_w, win.y0 + 1, win.x1 - 1, win.y0 + head_h),
        11,
        fill=t["header"],
        corners=(False, True, False, False),
    )
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
        inner = wallpaper(mw - 16, mh - 16, stops, blobs)
        p.paste(inner, mx + 8, my + 8)
        if st["night_light"]:  # warm tint
            p.img.paste(
                (255, 170, 60), (mx + 8, my + 8, mx + mw - 8, my + mh - 8), Image.new("L", (mw - 16, mh - 16), 46)
            )
        b = st["brightness"]
        if b < 100:
            p.img.paste(
                (0, 0, 0),
                (mx + 8, my + 8, mx + mw - 8, my + mh - 8),
                Image.new("L", (mw - 16, mh - 16), round((100 - b) * 1.1)),
            )
        p.rect((mx + mw // 2 - 8, my + mh, mx + mw // 2 + 8, my + mh + 8), rgb("#9AA3B2"))
        p.rrect((mx + mw // 2 - 40, my + mh + 7, mx + mw // 2 + 40, my + mh + 12), 2, fill=rgb("#9AA3B2"))
        p.text(box.center[0], my + mh + 26, 'Built-in Display  -  13.5"  -  Primary', 13, t["muted"], anchor="mm")
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
    wp = wallpaper(b.w, b.h, stops, blobs)
    p.img.paste(wp, (b.x0, b.y0), rounded_rect_mask(b.w, b.h, 10))
    w = Box(b.x0 + 22, b.y0 + 20, b.x1 - 22, b.y1 - 16)
    p.rrect(w, 6, fill=t["window"])
    p.rrect((w.x0, w.y0, w.x0 + 50, w.y1), 6, fill=t["sidebar"], corners=(True, False, False, True))
    p.rrect((w.x0, w.y0, w.x1, w.y0 + 14), 6, fill=t["header"], corners=(True, True, False, False))
    for i in range(4):
        p.rrect(
            (w.x0 + 8, w.y0 + 22 + i * 14, w.x0 + 42, w.y0 + 28 + i * 14),
            3,
            fill=t["accent"] if i == 1 else t["toggle_off"],
        )
    for i in range(3):
        p.rrect((w.x0 + 62, w.y0 + 24 + i * 18, w.x1 - 38, w.y0 + 30 + i * 18), 3, fill=t["toggle_off"])
        p.rrect(
            (w.x1 - 30, w.y0 + 22 + i * 18, w.x1 - 12, w.y0 + 32 + i * 18),
            5,
            fill=t["accent"] if i != 1 else t["toggle_off"],
        )


# --------------------------------------------------------------------------------------------------------------
# File manager (desktop)

FILES_SIDEBAR: list[tuple[str, str]] = [
    ("Recent", "clock"),
    ("Starred", "star"),
    ("Home", "home"),
    ("Desktop", "display"),
    ("Documents", "file"),
    ("Downloads", "download"),
    ("Music", "music"),
    ("Pictures", "image"),
    ("Videos", "video"),
    ("Trash", "trash"),
]

FILE_MENU = [
    ("open", "Open", ""),
    ("open_with", "Open With…", ""),
    None,
    ("cut", "Cut", "Ctrl+X"),
    ("copy", "Copy", "Ctrl+C"),
    None,
    ("rename", "Rename…", "F2"),
    ("trash", "Move to Trash", "Delete"),
    None,
    ("properties", "Properties", "Alt+Enter"),
]
FOLDER_MENU = [
    ("open", "Open", ""),
    ("open_tab", "Open in New Tab", "Ctrl+Enter"),
    ("open_window", "Open in New Window", "Shift+Enter"),
    None,
    ("cut", "Cut", "Ctrl+X"),
    ("copy", "Copy", "Ctrl+C"),
    None,
    ("rename", "Rename…", "F2"),
    ("trash", "Move to Trash", "Delete"),
    None,
    ("properties", "Properties", "Alt+Enter"),
]


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
    docs = [
        d("Contracts"),
        d("Taxes"),
        f("budget_2024.xlsx", 20_000, 90_000),
        f("draft_v2.docx", 30_000, 120_000),
        f("Meeting notes.docx", 10_000, 60_000),
        f("presentation.pptx", 800_000, 4_000_000),
        f("resume.pdf", 80_000, 300_000),
        f("scan_0012.pdf", 300_000, 2_000_000),
    ]
    downloads = [
        f("IMG_2041.jpg", 1_500_000, 4_500_000),
        f("dataset.csv", 200_000, 9_000_000),
        f("flight-tickets.pdf", 90_000, 400_000),
        f("invoice_march.pdf", 40_000, 200_000),
        f("screenshot.png", 200_000, 900_000),
        f("setup-2.4.1.zip", 20_000_000, 90_000_000),
    ]
    return {
        "Home": home,
        "Documents": docs,
        "Downloads": downloads,
        "Desktop": [f("shortcuts.txt", 200, 2000)],
        "Music": [f("demo_track.mp3", 3_000_000, 8_000_000)],
        "Pictures": [f("IMG_1988.jpg", 1_000_000, 5_000_000)],
        "Videos": [],
        "Projects": [],
        "Trash": [],
    }


FILES_DEFAULTS: dict[str, Any] = {
    "folder": "Home",
    "view": None,
    "selected": None,
    "context_menu": None,
    "renaming": None,
    "rename_text": None,
    "rename_selected": True,
    "toast": None,
    "search": None,
    "dark_mode": False,
    "accent": "blue",
    "clock": "10:42",
    "date": "Tue 14 May",
    "free": "231 GB free of 512 GB",
    "used": 0.55,
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
    p.rrect(
        (win.x0 + 1, win.y0 + 1, win.x0 + side_w, win.y1 - 1), 11, fill=t["sidebar"], corners=(True, False, False, True)
    )
    p.rrect(
        (win.x0 + side_w, win.y0 + 1, win.x1 - 1, win.y0 + head_h),
        11,
        fill=t["header"],
        corners=(False, True, False, False),
    )
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
        px: float = bar.x0 + 14
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
    for name, ic in (
        ("search", "search"),
        ("view", "grid_view" if view == "list" else "list_view"),
        ("more", "more_vert"),
    ):
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
    p.text(
        box.center[0], y0 + 24, "Rename Folder" if is_folder else "Rename File", 14, t["text"], anchor="mm", bold=True
    )
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
