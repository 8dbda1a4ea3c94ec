"""The trace layouts the studio reads: each importer declared once, by its own module in this package calling
``register`` when it is imported. ``discover`` imports every module of the package, so adding a layout is adding
one module (and its tests). Readers: detection (``detect_format``), the import's validation (service, API, page,
``manage.py import_traces``), the import page's menu and ``GET /api/imports/formats/`` (the command line's list)."""

from __future__ import annotations

import importlib
import pkgutil

from .base import Importer

IMPORTERS: dict[str, Importer] = {}


def register(importer: Importer) -> Importer:
    """Declare ``importer`` under its ``format_name``. A name declared twice is a programming error."""
    name = importer.format_name
    if name in IMPORTERS and type(IMPORTERS[name]) is not type(importer):
        raise ValueError(f"importer {name!r} is declared twice")
    IMPORTERS[name] = importer
    return importer


def unregister(name: str) -> None:
    """Take an importer out (a test's temporary importer)."""
    IMPORTERS.pop(name, None)


def discover() -> None:
    """Import every module of the package (its path included: a test may add a folder to it); modules imported
    before are not imported again."""
    package = importlib.import_module(__package__ or "traces.importers")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def importers_in_detect_order() -> list[Importer]:
    """Every importer in the order detection tries them: by ``detect_order``, then as declared."""
    declared = list(IMPORTERS.values())
    return sorted(declared, key=lambda importer: (importer.detect_order, declared.index(importer)))
