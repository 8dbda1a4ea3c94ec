"""The search in Chromium, reached from the navigation: a project and ``search-box`` chosen on /search/, the project's
search page finds the corrections that say "search box" (however punctuated) first, then the one whose instruction
says it, and its CSV link carries the same search."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import login
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import plant_corrections

pytestmark = pytest.mark.browser


def test_the_search_is_reached_from_the_navigation_and_finds_search_box(
    browser, live_server, project, annotator, lead, artifacts_dir, tmp_path
):
    from traces.services import trace_instruction_set

    traces = make_traces(project, tmp_path, count=4, steps=3)
    made = plant_corrections(project, traces, annotator=annotator, lead=lead, planted=set())
    said = {}
    for trace, (thought, note) in zip(
        traces,
        [
            ("Click the search box first, then type.", ""),
            ("The page was still loading.", "the search-box was hidden"),
            ("The field was wrong.", ""),
            ("Scroll down once more.", ""),
        ],
        strict=True,
    ):
        annotation = made[trace.pk]
        annotation.corrected_thought, annotation.note = thought, note
        annotation.save()
        said[thought] = annotation.pk
    trace_instruction_set(
        trace_id=traces[2].pk, actor=lead, instruction="Type the city into the search box of the search box page"
    )

    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    login(page, live_server.url, lead.username)
    page.click("nav.mainnav #nav-search")
    expect(page.locator("h1")).to_have_text("Search corrections")
    page.select_option("#search-home-form select[name=project]", str(project.pk))
    page.fill("#search-home-form input[name=q]", "search-box")
    page.screenshot(path=str(artifacts_dir / "insights-search-home.png"), full_page=True)
    page.click("#search-home-form button[type=submit]")
    expect(page).to_have_url(f"{live_server.url}/projects/{project.pk}/search/?q=search-box")
    expect(page.locator("#search-count")).to_contain_text("3 corrections")
    cards = page.locator(".step-card")
    expect(cards).to_have_count(3)
    # The corrections that say it first (in any order between them), then the one whose instruction says it.
    order = [int(cards.nth(i).get_attribute("data-annotation")) for i in range(3)]
    assert set(order[:2]) == {said["Click the search box first, then type."], said["The page was still loading."]}
    assert order[2] == said["The field was wrong."]
    expect(page.locator("#search-help")).to_contain_text("a OR b")
    assert page.locator("#search-csv").get_attribute("href").endswith("?q=search-box")
    page.screenshot(path=str(artifacts_dir / "insights-search-from-nav.png"), full_page=True)
    page.close()
