"""The export formats: each declared once, in a module of this package, with its writer, its label and its parts
of the bundle README; everything that names formats reads them here.

A module in ``exports/formats/`` declares a format by calling ``register(ExportFormat(...))`` when it is imported;
``discover`` imports every module of the package (once; the accessors below call it), so adding a format is adding
one module (and its tests). Readers: the job's stored value and its label (``ExportJob.format``, whose choices are
``format_choices``), the API's validation and its list (``GET /api/exports/formats/``, which the command line reads),
the export page's menu, ``manage.py export_bundle`` and the bundle's README and manifest (through the format's
``readme`` and its writer's own methods)."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.utils.translation import gettext

from studio.errors import Invalid

if TYPE_CHECKING:
    from exports.bundle import ReadmeText
    from exports.writers import Writer

# The length of ExportJob.format: a format's name is stored there.
FORMAT_NAME_MAX = 16


@dataclass(frozen=True)
class ExportFormat:
    """One export format. ``name`` is what the API, the command line and the job store; ``label`` what pages show;
    ``writer`` turns samples into the bundle's data files (its ``sample_set`` picks the samples, its methods add the
    format's own files and manifest sections); ``readme`` holds the format's parts of the bundle's README."""

    name: str
    label: str
    writer: type[Writer]
    readme: ReadmeText


class UnknownFormat(Invalid):
    """A request names a format that is not declared."""


_FORMATS: dict[str, ExportFormat] = {}
_discovered = False


def register(export_format: ExportFormat) -> ExportFormat:
    """Declare ``export_format`` (called by its module on import). A name declared twice is a programming error."""
    name = export_format.name
    if not name or len(name) > FORMAT_NAME_MAX or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"export format name {name!r}: 1 to {FORMAT_NAME_MAX} letters, digits, '-' or '_'")
    if name in _FORMATS and _FORMATS[name] != export_format:
        raise ValueError(f"export format {name!r} is declared twice")
    _FORMATS[name] = export_format
    return export_format


def unregister(name: str) -> None:
    """Take a format out (a test's temporary format)."""
    _FORMATS.pop(name, None)


def discover() -> None:
    """Import every module of this package (its path included: a test may add a folder to it); each declares its
    formats on import. Modules imported before are not imported again."""
    global _discovered
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    _discovered = True


def export_formats() -> list[ExportFormat]:
    """Every format, in the order declared."""
    if not _discovered:
        discover()
    return list(_FORMATS.values())


def format_names() -> list[str]:
    return [f.name for f in export_formats()]


def format_choices() -> list[tuple[str, str]]:
    """(name, label) of every format: ExportJob.format's choices, the page's menu."""
    return [(f.name, f.label) for f in export_formats()]


def export_format(name: str) -> ExportFormat:
    """The format called ``name``; raises ``UnknownFormat`` (an ``Invalid`` on the field ``format``) naming the
    formats there are."""
    for declared in export_formats():
        if declared.name == name:
            return declared
    raise UnknownFormat(
        gettext("unknown format %(name)s; use one of %(formats)s")
        % {"name": repr(name), "formats": ", ".join(format_names())},
        field="format",
    )
