"""Counts and empty lists as a lead reads them on the project pages: "1 trace", never "1 traces", and an empty trace
list that says what to do next rather than only "No traces."."""

from __future__ import annotations

import pytest

from traces.models import Step, Trace

pytestmark = pytest.mark.django_db


def _trace(project, external_id: str, steps: int) -> Trace:
    trace = Trace.objects.create(
        project=project, external_id=external_id, instruction="Open settings", source="test", step_count=steps
    )
    Step.objects.bulk_create(
        [Step(trace=trace, index=i, thought="t", action_text="wait()") for i in range(1, steps + 1)]
    )
    return trace


def test_one_trace_and_one_step_are_counted_in_the_singular(project, lead, client):
    trace = _trace(project, "only", steps=1)
    client.force_login(lead)
    projects = client.get("/projects/").content.decode()
    assert "<p>1 trace" in projects and "1 traces" not in projects
    listing = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert "Page 1 of 1 · 1 trace</span>" in listing
    detail = client.get(f"/traces/{trace.pk}/").content.decode()
    assert "· 1 step ·" in detail and "its 1 step and" in detail and "1 steps" not in detail
    # The outcome in the trace list's word ("Success"), not the stored value ("outcome success").
    assert f'<span class="pill {trace.outcome}" id="trace-outcome">{trace.get_outcome_display()}</span>' in detail


def test_an_empty_project_says_how_to_fill_it_and_an_empty_search_how_to_go_back(project, lead, annotator, client):
    client.force_login(lead)
    empty = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert f'No traces yet. <a href="/projects/{project.pk}/import/">Import traces</a>' in empty
    assert "Page 1 of 1 · 0 traces" in empty
    _trace(project, "one", steps=2)
    searched = client.get(f"/projects/{project.pk}/traces/?q=nothing-like-it").content.decode()
    assert "No traces match “nothing-like-it”." in searched
    assert f'<a href="/projects/{project.pk}/traces/">All traces</a>' in searched
    client.force_login(annotator)  # who cannot import is not offered it
    project.traces.all().delete()
    page = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert "No traces yet: a lead of this project imports them." in page and "/import/" not in page


def test_a_long_trace_list_links_its_first_and_last_pages(project, lead, client):
    Trace.objects.bulk_create(
        [
            Trace(project=project, external_id=f"bulk-{n:03d}", instruction="Open settings", source="t", step_count=1)
            for n in range(80)
        ]
    )
    client.force_login(lead)
    first = client.get(f"/projects/{project.pk}/traces/?q=bulk").content.decode()
    assert "Page 1 of 4 · 80 traces" in first and '&page=4">Last »</a>' in first and "« First" not in first
    middle = client.get(f"/projects/{project.pk}/traces/?q=bulk&page=3").content.decode()
    assert '?q=bulk&state=&round=&page=1">« First</a>' in middle and "Last »" not in middle  # page 4 is Next
