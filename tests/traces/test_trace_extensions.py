"""The trace pages' extension points (traces/extensions.py): what an app registers shows on the trace page and the
trace list, in its order, with the context its function read for the user; annotation's own parts are registered."""

from __future__ import annotations

import copy

import pytest
from django.conf import settings as django_settings

from tests.review.test_review import make_trace
from traces import extensions

pytestmark = pytest.mark.django_db


@pytest.fixture
def toy_templates(tmp_path, settings, monkeypatch):
    """Two panels and a column of a toy app, its templates in a folder of their own; the registries as they were after."""
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "panel.html").write_text('<section id="toy-{{ name }}">{{ name }} for {{ who }}</section>\n')
    (tmp_path / "toy" / "cell.html").write_text('<td data-toy="{{ trace.id }}">{{ value }}</td>')
    templates = copy.deepcopy(django_settings.TEMPLATES)
    templates[0]["DIRS"] = [*templates[0]["DIRS"], tmp_path]
    settings.TEMPLATES = templates
    for registry in ("_panels", "_columns"):
        monkeypatch.setattr(extensions, registry, dict(getattr(extensions, registry)))

    def panel(name: str, order: int):
        return extensions.TracePanel(
            name=name,
            template="toy/panel.html",
            context=lambda user, trace: {"name": name, "who": user.username},
            order=order,
        )

    extensions.trace_panel_register(panel("late", 200))
    extensions.trace_panel_register(panel("early", 50))
    extensions.trace_list_column_register(
        extensions.TraceListColumn(
            name="toy",
            heading="Toy steps",
            template="toy/cell.html",
            values=lambda user, traces: {t.pk: f"{t.step_count} steps seen by {user.username}" for t in traces},
            order=500,
        )
    )


def test_registered_panels_and_columns_show_in_their_order_for_the_user(toy_templates, project, lead, client):
    trace = make_trace(project, "toy", steps=2)
    client.force_login(lead)
    page = client.get(f"/traces/{trace.pk}/").content.decode()
    # annotation's history (order 100) between the toy's early (50) and late (200) panels.
    assert page.index('id="toy-early"') < page.index('id="history"') < page.index('id="toy-late"')
    assert "early for leader" in page and "late for leader" in page
    listing = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert listing.index("<th>Annotations</th>") < listing.index("<th>Toy steps</th>")
    assert f'<td data-toy="{trace.pk}">2 steps seen by leader</td>' in listing
    assert f'data-annotation-status="{trace.pk}"' in listing
    trace.delete()
    empty = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert 'colspan="8" class="empty"' in empty  # the six of traces, annotation's and the toy's


def test_annotation_registers_its_parts_of_the_trace_pages():
    # (and replays its own: each correction's replays beside the trace, docs/runners.md)
    assert [panel.name for panel in extensions._panels.values()] == ["annotation-history", "gold", "replays"]
    assert [column.heading for column in extensions.trace_list_columns()] == ["Annotations"]
    assert [record.model._meta.label for record in extensions.project_records()] == ["annotation.Annotation"]
    assert list(extensions._guards) == ["annotations"]
