"""What other apps add to the trace pages and to a project's records, registered from their ``AppConfig.ready()``.

traces stores what the agent did and knows nothing of who reads or corrects it (tests/architecture/
test_import_graph.py): the apps downstream register here, and the pages, the admin and ``project_save`` read what
is registered.

- A trace panel: a fragment of the trace page, below the steps (annotation: the trace's history).
- A trace list column: a column of the trace list, read once for the page's traces (annotation: each trace's
  annotations by status).
- A project record: rows a project owns, counted on the admin's page that deletes the project (annotation:
  annotations).
- A category guard: what refuses to drop an error category that rows still name (annotation: annotations).
- A project settings section: a part of a project's settings page, below its form, with its own form posting to
  its app's own URL (annotation: the quality control settings, for those who may change them).

Each is registered under a name (registering a name again replaces it) and read in ``order``, then by name, so the
pages are the same whichever app is ready first."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Model
from django.utils.functional import Promise


@dataclass(frozen=True)
class Fragment:
    """A template and the context it is rendered with, inside the page's own (``{% fragment %}``)."""

    template: str
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TracePanel:
    name: str
    template: str
    context: Callable[[Any, Any], dict[str, Any]]  # (user, trace) -> the template's context
    order: int = 100


@dataclass(frozen=True)
class TraceListColumn:
    name: str
    heading: str | Promise  # a lazy translation: the page shows it in the request's language
    template: str  # one cell (a <td>), given ``trace`` and its ``value``
    values: Callable[[Any, list[Any]], dict[int, Any]]  # (user, the page's traces) -> trace id -> value
    order: int = 100


@dataclass(frozen=True)
class ProjectRecord:
    name: str
    model: type[Model]
    count: Callable[[Any], int]  # project -> how many of its rows


@dataclass(frozen=True)
class CategoryGuard:
    name: str
    refusal: Callable[[Any, list[str]], str]  # (project, categories to drop) -> why not, or ""


@dataclass(frozen=True)
class ProjectSettingsSection:
    name: str
    template: str  # a <section>, with its own form; given the context below
    context: Callable[[Any, Any], dict[str, Any] | None]  # (user, project) -> its context, or None: not shown
    order: int = 100


_panels: dict[str, TracePanel] = {}
_columns: dict[str, TraceListColumn] = {}
_records: dict[str, ProjectRecord] = {}
_guards: dict[str, CategoryGuard] = {}
_settings_sections: dict[str, ProjectSettingsSection] = {}


def trace_panel_register(panel: TracePanel) -> None:
    _panels[panel.name] = panel


def trace_list_column_register(column: TraceListColumn) -> None:
    _columns[column.name] = column


def project_record_register(record: ProjectRecord) -> None:
    _records[record.name] = record


def category_guard_register(guard: CategoryGuard) -> None:
    _guards[guard.name] = guard


def project_settings_section_register(section: ProjectSettingsSection) -> None:
    _settings_sections[section.name] = section


def project_settings_sections(user, project) -> list[Fragment]:
    """The settings page's sections for ``user``, in order (a section whose context is None is left out)."""
    sections = sorted(_settings_sections.values(), key=lambda s: (s.order, s.name))
    shown = ((section, section.context(user, project)) for section in sections)
    return [Fragment(section.template, context) for section, context in shown if context is not None]


def trace_panels(user, trace) -> list[Fragment]:
    """The trace page's panels for ``user``, in order."""
    panels = sorted(_panels.values(), key=lambda p: (p.order, p.name))
    return [Fragment(panel.template, panel.context(user, trace)) for panel in panels]


def trace_list_columns() -> list[TraceListColumn]:
    return sorted(_columns.values(), key=lambda c: (c.order, c.name))


def trace_list_cells(user, columns: list[TraceListColumn], traces: Iterable) -> dict[int, list[Fragment]]:
    """Trace id -> its cells of ``columns``, one read per column for all of ``traces``."""
    traces = list(traces)
    values = [column.values(user, traces) for column in columns]
    return {
        trace.pk: [
            Fragment(column.template, {"value": read.get(trace.pk)})
            for column, read in zip(columns, values, strict=True)
        ]
        for trace in traces
    }


def project_records() -> list[ProjectRecord]:
    return sorted(_records.values(), key=lambda r: r.name)


def category_refusal(project, categories: list[str]) -> str:
    """Why the project may not drop ``categories`` (the first guard that objects), or ""."""
    for guard in sorted(_guards.values(), key=lambda g: g.name):
        said = guard.refusal(project, categories)
        if said:
            return said
    return ""
