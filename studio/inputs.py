"""The input rules, once: what text and numbers the studio stores. PostgreSQL's rules, applied on every database.

PostgreSQL refuses a NUL character in text (SQLite keeps it), a string with a lone surrogate cannot be encoded as
UTF-8 at all (it breaks every later JSON answer that contains it), and ``NaN`` / ``Infinity`` are not JSON. Every
entry (form and query fields, JSON bodies, imported traces) asks ``input_problem`` and refuses with a message that
names the field, so the same request gets the same 400 on SQLite and on PostgreSQL, and nothing that would break a
page later is ever stored.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from django.utils.translation import gettext

from studio.errors import Invalid

MAX_DEPTH = 64


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    if "\x00" in text:
        return gettext("contains a NUL character (%(escape)s)") % {"escape": "\\u0000"}
    for char in text:
        if "\ud800" <= char <= "\udfff":
            return gettext("contains a lone surrogate (%(escape)s), which is not valid Unicode") % {
                "escape": f"\\u{ord(char):04x}"
            }
    return None


def _walk(value: Any, path: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > MAX_DEPTH:
        yield path, gettext("is nested too deeply")
        return
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            yield path, problem
    elif isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            yield path, gettext("is %(value)s, which JSON cannot hold") % {"value": value}
    elif isinstance(value, dict):
        for key, item in value.items():
            key_text = str(key)
            problem = text_problem(key_text) if isinstance(key, str) else None
            if problem:
                yield f"{path}.<key>" if path else "<key>", problem
            yield from _walk(item, f"{path}.{key_text}" if path else key_text, depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]", depth + 1)


def input_problem(value: Any, *, name: str = "") -> str | None:
    """The first thing in ``value`` (text, number, or nested JSON) that cannot be stored, as "field: why" (the why in
    the active language, the field's path as it is)."""
    for path, problem in _walk(value, name, 0):
        return gettext("%(field)s: %(problem)s") % {"field": path or gettext("value"), "problem": problem}
    return None


# An id is a bigint key: a longer run of digits names no row (and ``int`` refuses one of thousands of digits).
ID_MAX_DIGITS = 19


def id_from_text(text: str) -> int | None:
    """``text`` as an object id (a query or form field), or None when it is none: ASCII digits only, at most
    ``ID_MAX_DIGITS``. ``str.isdigit`` also says yes to "²" and other digits ``int`` refuses, so a check with it
    before ``int`` let such a field through to a ValueError (a 500); callers say "no such" in their own words."""
    if text.isascii() and text.isdigit() and len(text) <= ID_MAX_DIGITS:
        return int(text)
    return None


def form_number(form: Mapping[str, Any], name: str, kind: type, default: Any) -> Any:
    """A number field of a page's form (``kind`` int or float; blank: ``default``); text that is no number is an
    Invalid naming the field, so a view never catches a bare ValueError (which would hide a bug as a 400)."""
    raw = form.get(name) or ""
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        raise Invalid(
            gettext("%(name)s must be a number, not %(value)s") % {"name": name, "value": repr(raw[:40])}
        ) from None


# OFFSET is a 64-bit integer on PostgreSQL (bigint) and SQLite: a page whose first row lies past it cannot be asked
# for (PostgreSQL answers "bigint out of range", SQLite an overflow), so it is refused as a bad page number instead.
ROW_OFFSET_MAX = 2**63 - 1


def page_number(text: str | None, *, page_size: int, name: str = "page") -> int:
    """A 1-based page number from a query field (blank: the first page): ASCII digits, at least 1, and no further
    than the last page whose first row a database can skip to. Anything else is an Invalid naming the field, for
    every paged endpoint alike (the search and DRF's lists, ``studio.api.PageNumbers``)."""
    if not text:
        return 1
    last = ROW_OFFSET_MAX // page_size + 1
    number = id_from_text(text)
    if number is None or not 1 <= number <= last:
        raise Invalid(
            gettext("%(name)s must be a whole number from 1 to %(last)s, not %(value)s")
            % {"name": name, "last": last, "value": repr(text[:40])},
            field=name,
        )
    return number
