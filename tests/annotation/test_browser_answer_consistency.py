"""An answer consistent with its verdict, in Chromium: a correction written before pressing `n` is not stored nor shown to the lead;
moving τ takes the placed point off the old step."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, AnnotationStatus
from tests.annotation.test_browser_workspace import click_on_screenshot, open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def four_steps(project, tmp_path, role_groups):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="verdict-change"))


def start_correction_at_step_3(page, project):
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.select_option("#f-error_category", project.error_categories[0])
    page.fill("#f-corrected_thought", "Open Display instead.")
    page.select_option("[data-slot-type='corrected']", "click")
    click_on_screenshot(page, 0.3, 0.4)
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    wait_saved(page)


def test_no_error_after_a_correction_is_stored_and_reviewed_clean(
    browser, live_server, project, four_steps, annotator, lead, artifacts_dir
):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    start_correction_at_step_3(page, project)
    page.keyboard.press("n")
    wait_saved(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#ws-next:not([hidden])")
    # Submitted, the page is read only at once: no verdict button or key offers an edit the server would refuse.
    assert page.locator("[data-verdict]:not([disabled])").count() == 0
    assert page.locator("[data-verdict].active").get_attribute("data-verdict") == "no_error"
    page.locator("body").focus()
    page.keyboard.press("e")
    page.wait_for_timeout(1000)  # an autosave would be under way by now (700 ms after an edit)
    assert page.inner_text("#ws-verdict-text") == "The trace has no error."
    assert page.locator("#ws-banner").is_hidden()
    page.screenshot(path=str(artifacts_dir / "workspace-submitted.png"))
    stored = Annotation.objects.get(annotator=annotator)
    assert stored.status == AnnotationStatus.SUBMITTED and stored.verdict == "no_error"
    assert (stored.tau, stored.error_category, stored.corrected_thought, stored.corrected_action) == (None, "", "", "")
    context.close()

    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{stored.pk}/")
    summary = page.inner_text(".instruction")
    assert "No error" in summary and "τ =" not in summary
    assert page.locator(".review-grid").count() == 0  # no correction panel for an error-free trace
    page.screenshot(path=str(artifacts_dir / "review-no-error.png"), full_page=True)
    context.close()


def test_moving_tau_takes_the_point_off_the_old_step(browser, live_server, project, four_steps, annotator):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    start_correction_at_step_3(page, project)
    assert "start_box" in page.inner_text("[data-canonical='corrected']")
    page.keyboard.press("k")
    page.keyboard.press("e")  # τ moves to step 2: the point was placed on step 3's screenshot
    wait_saved(page)
    for _ in range(50):  # (wait_for_function needs eval, which the page's CSP forbids)
        if "start_box" not in page.inner_text("[data-canonical='corrected']"):
            break
        page.wait_for_timeout(100)
    stored = Annotation.objects.get(annotator=annotator)
    assert page.inner_text("[data-canonical='corrected']") == "click()", (
        stored.tau,
        stored.corrected_action,
        stored.editor_state,
    )
    stored = Annotation.objects.get(annotator=annotator)
    assert stored.tau == 2 and stored.corrected_action == "click()"
    assert page.input_value("#f-corrected_thought") == "Open Display instead."  # the thought stays
    context.close()
