"""What every importer yields: source-neutral traces that ``services.trace_import_one`` stores.

An importer reads one source layout and yields ``ImportedTrace`` objects, or ``TraceReadError`` for
a trace it cannot read; it never stops a batch because one trace is broken (``read_each``).
"""

from __future__ import annotations

import enum
import errno
import json
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.utils.translation import gettext

from studio.errors import describe_error
from traces import grammar

log = logging.getLogger(__name__)


class TraceReadError(Exception):
    """A trace (or a file of it) that cannot be read; ``where`` names the file or line."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


@dataclass(frozen=True)
class ImageRef:
    """A screenshot still in the source: ``name`` for messages, ``read`` for its bytes; ``path``, the file it reads
    (None for one read from elsewhere), so that a shard can read it from its part of the upload instead."""

    name: str
    read: Callable[[], bytes]
    path: Path | None = None

    @classmethod
    def from_path(cls, path: Path, *, root: Path | None = None) -> ImageRef:
        return cls(name=name_within(path, root), read=path.read_bytes, path=path)


def name_within(path: Path, root: Path | None) -> str:
    """``path`` as messages name it: relative to ``root`` when it lies inside it, whichever of the two is given
    resolved (import roots and trace folders are often reached through symbolic links)."""
    if root is None:
        return path.name
    if path.is_relative_to(root):
        return str(path.relative_to(root))
    # Resolved only when the names as given do not say it: a resolve is a system call for every part of the path.
    inside, base = path.resolve(), root.resolve()
    if inside.is_relative_to(base):
        return str(inside.relative_to(base))
    return path.name


@dataclass
class ImportedStep:
    screenshot: ImageRef | None
    raw_response: str
    # Filled by the importer only when the source already separates them; else parsed from raw_response.
    thought: str | None = None
    action_text: str | None = None
    human_edited_response: str = ""
    context: dict = field(default_factory=dict)
    # Set by an importer that knows why the recorded action cannot be read (kept raw in action_text).
    parse_error: str = ""


class WarningCode(enum.StrEnum):
    """What an importer's warning is about, for the code that acts on it; the words are for people."""

    INSTRUCTION_MISSING = "instruction-missing"  # the source records no instruction (the import's note quotes it)
    SCREENSHOT_MISSING = "screenshot-missing"  # a step has no screenshot of its own
    SCREENSHOTS_UNMATCHED = "screenshots-unmatched"  # screenshots and steps do not pair up one to one


@dataclass(frozen=True)
class ImportWarning:
    """A note an importer makes on a trace it read: ``code`` is what code selects it by (never the words, which
    are in the language of whoever imports and may be reworded); ``text`` says it to people."""

    code: WarningCode
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass
class ImportedTrace:
    external_id: str
    instruction: str
    source: str
    steps: list[ImportedStep]
    source_path: str = ""
    outcome: str = "unknown"
    metadata: dict = field(default_factory=dict)
    final_screenshot: ImageRef | None = None
    # A plain string (an importer that gives no code) is a warning shown as it is and selected by no code.
    warnings: list[ImportWarning | str] = field(default_factory=list)
    # The language of its text as the source says it (BCP 47; traces.languages), "" when it says none.
    language: str = ""


TraceOrError = ImportedTrace | TraceReadError


class Importer(Protocol):
    format_name: str  # what an import's ``format`` takes
    label: str  # what the import page and the command line show
    # Detection tries importers by this number, then in the order declared: a layout whose markers are loose
    # (native: any ``*.jsonl``) goes after the stricter ones.
    detect_order: int

    def detect(self, root: Path) -> bool: ...

    def units(self, root: Path) -> list[Path]: ...

    def read_units(self, root: Path, units: list[Path]) -> Iterator[TraceOrError]: ...

    def read(self, root: Path) -> Iterator[TraceOrError]: ...


DETECT_ORDER_DEFAULT = 100


class UnitImporter:
    """An importer reads ``root`` as a list of units (a trace folder, a trace file, a JSONL of traces), each read
    on its own: a sharded import (``traces.services``) gives each shard some of the units that ``units`` found, in
    order, and reading them all one shard after the other gives what ``read`` gives. ``detect`` and ``units`` look
    at names, folders and trace files only: in an import's plan a screenshot is an empty file (its bytes reach the
    shard that reads it, ``traces.services.IMPORT_PLAN_PLACEHOLDERS``)."""

    detect_order = DETECT_ORDER_DEFAULT

    def units(self, root: Path) -> list[Path]:
        raise NotImplementedError

    def read_units(self, root: Path, units: list[Path]) -> Iterator[TraceOrError]:
        raise NotImplementedError

    def read(self, root: Path) -> Iterator[TraceOrError]:
        yield from self.read_units(root, self.units(root))


class FolderImporter(UnitImporter):
    """An importer whose unit is a trace folder found by ``folders`` (e.g. with ``find_folders``) and read by
    ``read_folder``; a folder that fails is reported under its name within the upload, and the others go on."""

    def folders(self, root: Path, *, first_only: bool = False) -> list[Path]:
        raise NotImplementedError

    def read_folder(self, folder: Path, *, root: Path) -> ImportedTrace:
        raise NotImplementedError

    def detect(self, root: Path) -> bool:
        return root.is_dir() and bool(self.folders(root, first_only=True))

    def units(self, root: Path) -> list[Path]:
        return self.folders(root)

    def read_units(self, root: Path, units: list[Path]) -> Iterator[TraceOrError]:
        yield from read_each(
            units,
            lambda folder: self.read_folder(folder, root=root),
            where=lambda folder: name_within(folder, root),
        )


def read_json(path: Path, *, root: Path | None = None) -> Any:
    """Load a JSON file with errors that name the file, the line and the problem."""
    where = name_within(path, root)
    size = path.stat().st_size
    if size > settings.IMPORT_MAX_JSON_BYTES:
        raise TraceReadError(
            where,
            gettext("JSON file of %(size)s bytes is over the %(limit)s-byte limit")
            % {"size": size, "limit": settings.IMPORT_MAX_JSON_BYTES},
        )
    data = path.read_bytes()
    return parse_json_bytes(data, where)


def parse_json_bytes(data: bytes, where: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceReadError(where, gettext("not valid UTF-8 (byte %(byte)s)") % {"byte": exc.start}) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceReadError(
            where,
            gettext("invalid JSON at line %(line)s column %(column)s: %(problem)s")
            % {"line": exc.lineno, "column": exc.colno, "problem": exc.msg},
        ) from None
    except RecursionError:
        raise TraceReadError(where, gettext("JSON nested too deeply")) from None
    except ValueError as exc:
        # Python refuses to read an integer of more than sys.get_int_max_str_digits() digits (a guard against
        # quadratic conversion); json raises it as a plain ValueError, which must cost this trace only.
        if "integer string conversion" in str(exc):
            raise TraceReadError(
                where,
                gettext("holds an integer of more than %(digits)s digits, which is not read")
                % {"digits": sys.get_int_max_str_digits()},
            ) from None
        raise TraceReadError(where, gettext("invalid JSON: %(problem)s") % {"problem": exc}) from None


def require(mapping: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(mapping, dict):
        raise TraceReadError(where, gettext("expected an object, found %(found)s") % {"found": type(mapping).__name__})
    if key not in mapping:
        raise TraceReadError(where, gettext("missing field '%(field)s'") % {"field": key})
    return _of_kind(mapping[key], key, kind, where)


def optional(mapping: dict, key: str, kind: type, where: str, default: Any = None) -> Any:
    """``mapping[key]`` when it is there and not null, else ``default``; a value of another JSON type is a
    TraceReadError naming the field and the type, never a TypeError deeper in (an unhashable list compared with a
    set of choices, ``str()`` of an object stored as text)."""
    value = mapping.get(key)
    return default if value is None else _of_kind(value, key, kind, where)


def _of_kind(value: Any, key: str, kind: type, where: str) -> Any:
    # JSON's true and false are ints to Python: a field that wants a number does not take them.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float)):
        raise TraceReadError(
            where,
            gettext("field '%(field)s' must be %(kind)s, found %(found)s")
            % {"field": key, "kind": kind.__name__, "found": type(value).__name__},
        )
    return value


# A file name from a trace file is shown in messages up to this many characters.
FILE_NAME_SHOWN = 120


def safe_child(root: Path, relative: str, where: str) -> Path:
    """Resolve a path named inside a trace file, refusing anything that leaves the trace's folder."""
    if not isinstance(relative, str) or not relative:
        raise TraceReadError(where, gettext("empty file name"))
    shown = relative if len(relative) <= FILE_NAME_SHOWN else relative[: FILE_NAME_SHOWN - 1] + "…"
    try:
        candidate = (root / relative).resolve()
        # A resolved path lies under a folder's name as given only if that name is resolved already (every folder
        # above a resolved path is a real one): the folder is resolved only when that test fails.
        if not candidate.is_relative_to(root) and not candidate.is_relative_to(root.resolve()):
            raise TraceReadError(where, gettext("file '%(name)s' points outside the trace folder") % {"name": shown})
        found = candidate.is_file()
    except OSError as exc:
        # A name the file system refuses (ENAMETOOLONG past 255 bytes a part or 4096 in all, a NUL) names no
        # file: said so, not as the OSError's text with the server's path.
        problem = (
            gettext("file '%(name)s' (%(length)s characters) is too long for a file name")
            if exc.errno == errno.ENAMETOOLONG
            else gettext("file '%(name)s' (%(length)s characters) cannot be looked up")
        )
        raise TraceReadError(where, problem % {"name": shown, "length": len(relative)}) from None
    except ValueError:  # a NUL character in the name
        raise TraceReadError(
            where, gettext("file '%(name)s' is no file name (it holds a NUL)") % {"name": ascii(shown)[1:-1]}
        ) from None
    if not found:
        raise TraceReadError(where, gettext("file '%(name)s' does not exist") % {"name": shown})
    return candidate


def read_each(
    units: Iterable[Any], read_one: Callable[..., ImportedTrace], *, where: Callable[..., str]
) -> Iterator[TraceOrError]:
    """``read_one(unit)`` for every unit (a trace folder, a file), yielding each trace or its error.

    Any exception while reading one unit is reported on that unit, naming its file, and the batch goes on: a
    source layout the importer did not foresee must cost one trace, never the whole import."""
    for unit in units:
        try:
            item: TraceOrError = read_one(unit)
        except TraceReadError as exc:
            item = exc
        except Exception as exc:  # noqa: BLE001 - reported per trace; the traceback goes to the worker log
            log.exception("unexpected error reading %s", where(unit))
            item = TraceReadError(where(unit), f"could not be read: {describe_error(exc)}")
        yield item


def find_folders(
    root: Path,
    pattern: str,
    *,
    max_depth: int,
    accept: Callable[[Path], bool] = lambda folder: True,
    first_only: bool = False,
) -> list[Path]:
    """Folders at most ``max_depth`` levels below ``root`` that hold a file matching ``pattern``,
    shallowest first and sorted within a level: how every source layout is found in an upload."""
    found: list[Path] = []
    for depth in range(max_depth + 1):
        for folder in sorted({path.parent for path in root.glob("/".join(["*"] * depth + [pattern]))}):
            if folder not in found and accept(folder):
                found.append(folder)
                if first_only:
                    return found
    return found


# The step context key of the elements a source recorded on a step's screen (boxes in the trace's convention).
ELEMENTS = "elements"
MAX_ELEMENTS = 5000


def read_elements(value: Any, where: str) -> list[dict]:
    """A source's element boxes of one screen as stored on the step's context: ``[{"box": [x1, y1, x2, y2],
    "label": str}]`` (box corners put in order by the grammar, in the trace's convention), or TraceReadError."""
    if not isinstance(value, list):
        raise TraceReadError(where, gettext("elements must be a list of {box, label} objects"))
    if len(value) > MAX_ELEMENTS:
        raise TraceReadError(
            where,
            gettext("%(count)s elements on one screen: at most %(limit)s are kept")
            % {"count": len(value), "limit": MAX_ELEMENTS},
        )
    elements = []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise TraceReadError(where, gettext("element %(number)s must be an object with a box") % {"number": number})
        label = item.get("label", "")
        if not isinstance(label, str):
            raise TraceReadError(where, gettext("element %(number)s's label must be a string") % {"number": number})
        try:
            box = grammar.box_of(item.get("box"))
        except (TypeError, ValueError) as exc:
            raise TraceReadError(
                where, gettext("element %(number)s: %(problem)s") % {"number": number, "problem": exc}
            ) from None
        elements.append({"box": list(box), "label": label[:200]})
    return elements
