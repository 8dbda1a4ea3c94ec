"""A browser screen (1280x800): a registration form and its success page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from demo.screens.base import (
    WEB_SIZE,
    Box,
    Painter,
    Screen,
    draw_avatar,
    rgb,
    slug,
    theme,
)

# --------------------------------------------------------------------------------------------------------------
# Web form in a browser (1280x800)

WEB_TRACKS = ["Machine Learning", "Data Science", "Data Engineering", "Visualization & BI"]
WEB_FIELDS = [
    ("name", "Full name", "e.g. Jane Doe"),
    ("organization", "Organization (optional)", "Company or university"),
    ("email", "Email address", "you@example.com"),
]

WEB_DEFAULTS: dict[str, Any] = {
    "page": "form",
    "values": {},
    "focus": None,
    "dropdown_open": False,
    "terms": False,
    "errors": {},
    "banner": None,
    "clock": "10:42",
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
    x: float = W - 24
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
        w = p.text(
            x, 120, label, 14, t["accent_text"] if label == "Workshops" else t["text"], bold=label == "Workshops"
        )
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


def _web_input(
    p: Painter, box: Box, value: str, placeholder: str, focused: bool, error: bool, t, chevron: bool = False
) -> None:
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
        p.rrect(
            cb,
            5,
            fill=rgb("#FFFFFF"),
            outline=t["danger"] if "terms" in errors else rgb("#98A2B3"),
            width=2 if "terms" in errors else 1,
        )
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
    cx = card.x0 + card.w // 2
    p.circle(cx, card.y0 + 72, 36, fill=rgb("#DCFCE7"))
    p.icon("check", cx, card.y0 + 72, 40, t["success"])
    p.text(cx, card.y0 + 138, "You're registered!", 26, t["text"], anchor="mm", bold=True)
    p.text(
        cx,
        card.y0 + 172,
        f"A confirmation is on its way to {vals.get('email') or 'your inbox'}.",
        14,
        t["muted"],
        anchor="mm",
    )
    sb = Box(card.x0 + 40, card.y0 + 208, card.x1 - 40, card.y0 + 208 + 3 * 48)
    p.rrect(sb, 10, fill=rgb("#F8FAFC"), outline=rgb("#E4E7EC"))
    rows = [
        ("Attendee", vals.get("name", "")),
        ("Workshop", vals.get("track", "")),
        ("When", "Sat 14 June, 9:30 - 12:30"),
    ]
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
