"""Gold references in Chromium: a lead marks an accepted answer as its trace's gold reference from the review page,
sees the trace marked gold on the trace list, unmarks it there and marks it again from the list; an annotator's
trace list shows no sign of which traces are gold."""

from __future__ import annotations

import pytest

from annotation.models import GoldEvent, GoldTrace
from tests.conftest import login
from tests.fixtures_export import REPLIES, accepted_error, make_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


@pytest.fixture
def accepted(project, annotator, lead):
    trace = make_trace(project, replies=REPLIES, external_id="display-1", size=(1280, 800))
    return accepted_error(trace, annotator=annotator, reviewer=lead, error_category=project.error_categories[0])


def test_a_lead_marks_unmarks_and_marks_gold(browser, live_server, project, annotator, lead, accepted, artifacts_dir):
    trace = accepted.trace
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{accepted.pk}/")
    card = page.locator("#gold-card")
    assert card.get_attribute("data-gold") == "none"
    assert "This trace is not gold." in card.inner_text()
    page.click("#gold-mark")  # "Use as gold reference"
    page.wait_for_selector("#gold-card[data-gold='this']")
    assert page.url == f"{live_server.url}/reviews/{accepted.pk}/"
    assert f"Answer {accepted.pk} is now the gold reference of trace display-1." in page.inner_text(".notice")
    assert "gold reference" in page.inner_text("#gold-state")
    gold = GoldTrace.objects.get(trace=trace)
    assert gold.reference_id == accepted.pk and gold.marked_by == lead
    page.screenshot(path=str(artifacts_dir / "review-gold-marked-desktop.png"), full_page=True)

    # The trace list shows it gold, to the lead, and unmarks it there.
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"{live_server.url}/projects/{project.pk}/traces/")
    mark = page.locator(f"[data-gold-trace='{trace.pk}']")
    assert "gold" in mark.inner_text()
    page.screenshot(path=str(artifacts_dir / "trace-list-gold-laptop.png"), full_page=True)
    mark.get_by_role("button", name=f"Unmark trace {trace.external_id} as gold").click()
    page.wait_for_selector(f"[data-gold-offer='{trace.pk}']")
    assert page.url == f"{live_server.url}/projects/{project.pk}/traces/"
    assert "Trace display-1 is gold no more" in page.inner_text(".notice")
    assert not GoldTrace.objects.filter(trace=trace).exists()
    assert list(GoldEvent.objects.filter(trace_id_kept=trace.pk).values_list("kind", flat=True)) == [
        "removed",
        "marked",
    ]

    page.click(f"[data-gold-offer='{trace.pk}'] button")  # the accepted answer becomes the reference again
    page.wait_for_selector(f"[data-gold-trace='{trace.pk}']")
    assert GoldTrace.objects.get(trace=trace).reference_id == accepted.pk
    page.goto(f"{live_server.url}/reviews/{accepted.pk}/")
    page.screenshot(path=str(artifacts_dir / "review-gold-marked-laptop.png"), full_page=True)
    page.click("#gold-remove")  # and unmarked from the review page
    page.wait_for_selector("#gold-card[data-gold='none']")
    assert not GoldTrace.objects.filter(trace=trace).exists()
    assert not errors, errors

    # An annotator sees no gold anywhere on the trace list.
    GoldTrace.objects.create(
        trace=trace, project=project, reference=accepted, reference_version=accepted.version, marked_by=lead
    )
    annotator_page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(annotator_page, live_server.url, annotator.username)
    annotator_page.goto(f"{live_server.url}/projects/{project.pk}/traces/")
    assert annotator_page.locator("[data-gold-trace], [data-gold-offer], .pill.gold").count() == 0
    assert "gold" not in annotator_page.inner_text("table").lower()
