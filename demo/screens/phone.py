"""Phone screens (1080x2400): home, app drawer, settings, Bluetooth, messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from demo.screens.base import (
    PHONE_SIZE,
    Box,
    Color,
    Painter,
    Screen,
    draw_app_icon,
    draw_avatar,
    rgb,
    rounded_rect_mask,
    slug,
    text_width,
    theme,
    wallpaper,
    wrap_text,
)

ICON_GREY = rgb("#374151")

# --------------------------------------------------------------------------------------------------------------
# Phone (1080x2400)

PHONE_WALLPAPER = (
    (rgb("#0F3D5E"), rgb("#1F5F7A"), rgb("#3A2E6E")),
    ((0.8, 0.25, 0.35, rgb("#2A9D8F")), (0.2, 0.7, 0.4, rgb("#5B3F99")), (0.7, 0.85, 0.3, rgb("#1B2A55"))),
)
HOME_APPS = [
    "Clock",
    "Calendar",
    "Photos",
    "Maps",
    "Weather",
    "Notes",
    "Music",
    "Files",
    "Mail",
    "Store",
    "Calculator",
    "Settings",
]
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
    "screen": "home",
    "clock": "9:41",
    "date": "Tuesday, May 14",
    "battery": 82,
    "temp": "18°C",
    "bt_on": False,
    "scanning": False,
    "found": 0,
    "device_name": "Pixel 8",
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
    "draft": "",
    "keyboard": False,
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
    {
        "home": _phone_home,
        "drawer": _phone_drawer,
        "settings": _phone_settings,
        "connected_devices": _phone_connected,
        "messages": _phone_messages,
        "conversation": _phone_conversation,
    }[screen](p, st)
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
    p.paste(wallpaper(1080, 2400, stops, blobs), 0, 0)
    white = (255, 255, 255)
    p.text(72, 300, st["date"], 52, white)
    p.icon("sun", 96, 390, 52, rgb("#FCD34D"))
    p.text(140, 392, f"{st['temp']}  Mostly sunny", 40, rgb("#E5E7EB"))
    p.add("widget.glance", (56, 250, 760, 430))
    cols = [135, 405, 675, 945]
    for i, app in enumerate(HOME_APPS):
        _phone_app(p, app, cols[i % 4], 1160 + (i // 4) * 290, white)
    dock = Box(40, 1990, 1040, 2190)
    p.img.paste(white, dock.as_tuple(), rounded_rect_mask(dock.w, dock.h, 70).point(lambda v: v * 46 // 255))
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
    p.paste(wallpaper(1080, 2400, stops, blobs), 0, 0)
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

    def row(
        key: str, title: str, sub: str | None, icon: str | None, icon_color: Color = ICON_GREY, h: int = 170
    ) -> Box:
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
    row(
        "pixel_buds_pro",
        "Pixel Buds Pro",
        "Not connected" if st["bt_on"] else "Turn on Bluetooth to connect",
        "headphones",
    )
    row("honda_hft", "Honda HFT", "Not connected" if st["bt_on"] else "Turn on Bluetooth to connect", "car")
    y += 10
    p.hline(0, 1080, y, rgb("#E4E7EC"), 2)
    y += 10
    row(
        "connection_preferences",
        "Connection preferences",
        "Bluetooth, Android Auto, NFC",
        "settings_none" if False else None,
    )


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

    def key(
        x0: float, w: float, label: str, name: str, special: bool = False, icon: str | None = None, accent: bool = False
    ) -> None:
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
            x: float = margin
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
    for label, name, units, special, icon, accent in (
        ("?123", "symbols", 1.5, True, None, False),
        (",", "comma", 1, True, None, False),
        ("", "emoji", 1, True, "smile", False),
        ("", "space", 4, False, None, False),
        (".", "period", 1, True, None, False),
        ("", "enter", 1.5, True, "enter", True),
    ):
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
                p.text(
                    b.x1 - 10 if mine else b.x0 + 10,
                    b.y1 + 26,
                    label,
                    30,
                    rgb("#6B7280"),
                    anchor="rm" if mine else "lm",
                )
        p.add(f"bubble.{i}", b)
    if st["keyboard"]:
        sugg = ["I'm", "On my way", "Thanks"] if not draft else ["me", "you", "everyone"]
        _keyboard(p, kb_top, sugg)
