"""A 5,000-step trace in a real Chromium: jump to step 4,000 from the strip, mark τ there, write the correction, it
saves and comes back on reload; stepping with the keys across a window of steps never waits for the network."""

from __future__ import annotations

import re

import pytest

from annotation.models import Annotation
from tests.annotation.test_browser_workspace import click_on_screenshot, open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

STEPS = 5000


@pytest.fixture
def long_trace(project, tmp_path):
    import_folder(project, write_native_trace(tmp_path / "long", steps=STEPS, size=(320, 200), shared_screen=True))
    return Trace.objects.get(project=project)


def _step_shown(page, index: int) -> None:
    page.wait_for_function(
        "index => document.getElementById('ws-step-label').textContent === `Step ${index} of 5000`", arg=index
    )


def test_a_5000_step_trace_is_annotated_at_step_4000(browser, live_server, long_trace, annotator, artifacts_dir):
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    page_errors, windows = [], []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    page.on("request", lambda request: "/steps/" in request.url and windows.append(request.url))
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    assert page.locator(".ws-thumb").count() == STEPS + 1  # the whole trace and its final screen, data or not
    assert page.inner_text("#ws-thought") == "I will click item 1."

    # A thumbnail far down the strip: its step's window comes from the API, then the step shows. The strip keeps its
    # layout as the thumbnails around it fill in: what is under the pointer stays there.
    thumb = page.locator(".ws-thumb[data-step='4000']")
    thumb.scroll_into_view_if_needed()
    where = thumb.evaluate("b => [b.offsetLeft, b.offsetWidth, b.offsetHeight]")
    thumb.click()
    _step_shown(page, 4000)
    page.wait_for_selector(".ws-thumb[data-step='3960'] img", state="attached")
    assert thumb.evaluate("b => [b.offsetLeft, b.offsetWidth, b.offsetHeight]") == where
    assert page.inner_text("#ws-thought") == "I will click item 4000."
    assert page.locator(".ws-thumb.current").get_attribute("data-step") == "4000"
    assert page.locator(".ws-thumb[data-step='4000'] img").count() == 1  # its thumbnail filled in
    assert any(re.search(r"first=4001&last=4050|first=3951&last=4000", url) for url in windows), windows

    page.keyboard.press("e")
    assert page.locator(".ws-thumb.tau").get_attribute("data-step") == "4000"
    page.select_option("#f-error_category", "wrong element / grounding")
    page.fill("#f-corrected_thought", "The item to click is further down.")
    page.select_option("[data-slot-type='corrected']", "click")
    click_on_screenshot(page, 0.5, 0.5)
    page.wait_for_selector("[data-errors='corrected'] li.ok", timeout=10000)
    canonical = page.inner_text("[data-canonical='corrected']")
    wait_saved(page)
    saved = Annotation.objects.get(trace=long_trace, annotator=annotator)
    assert (saved.verdict, saved.tau, saved.corrected_thought) == ("error", 4000, "The item to click is further down.")
    assert saved.corrected_action == canonical

    page.reload()  # the page opens on τ, with its window carried by the page itself
    page.wait_for_selector("#ws[data-ready='1']")
    _step_shown(page, 4000)
    assert page.input_value("#f-corrected_thought") == "The item to click is further down."
    assert page.inner_text("[data-canonical='corrected']") == canonical
    assert not page.locator("#ws-correction").is_hidden()

    # Stepping with the keys across window edges (4050 | 4051 ahead, 3950 | 3951 behind): each press shows its step
    # at once, the next windows having been fetched ahead.
    windows.clear()
    for index in range(4001, 4061):
        page.keyboard.press("j")
        assert page.inner_text("#ws-step-label") == f"Step {index} of {STEPS}"
        assert page.get_attribute("#ws", "data-loading-step") is None
    assert page.inner_text("#ws-thought") == "I will click item 4060."
    page.keyboard.press("t")  # back to τ
    _step_shown(page, 4000)
    for index in range(3999, 3939, -1):
        page.keyboard.press("k")
        assert page.inner_text("#ws-step-label") == f"Step {index} of {STEPS}"
    assert page.inner_text("#ws-thought") == "I will click item 3940."
    assert 1 <= len(windows) <= 4, windows  # a window at a time, not a step at a time
    page.screenshot(path=str(artifacts_dir / "workspace-long-trace.png"))
    assert not page_errors, page_errors
    context.close()
