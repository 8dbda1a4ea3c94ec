"""Edit, then accept: the lead edits actions with the workspace's structured editor (shared
static/js/action_editor.js, checked by the server's grammar through the review check endpoint), places points on
o_τ by clicking, keeps the focus while typing, and a refused edit comes back with what was typed and the problem."""

from __future__ import annotations

import math
import re

import pytest
from django.db import transaction

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.services import annotation_transition
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


@pytest.fixture
def submitted(project, annotator, tmp_path) -> Annotation:
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="edit"))
    trace = Trace.objects.get(project=project)
    with transaction.atomic():
        annotation = Annotation.objects.create(
            trace=trace,
            project=project,
            annotator=annotator,
            verdict=Verdict.ERROR,
            tau=2,
            error_category=project.error_categories[0],
            corrected_thought="Open the display page.",
            corrected_action="click(start_box='<|box_start|>(500,300)<|box_end|>')",
            reflection_thought="Wrong page; back.",
            reflection_action="hotkey(key='alt left')",
        )
        annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
    return annotation


def open_editor(page, base, annotation):
    page.goto(f"{base}/reviews/{annotation.pk}/")
    page.click("#edit-accept summary")
    page.wait_for_selector("#edit-accept[data-ready='1']")
    page.wait_for_selector("[data-review-slot='corrected'] [data-errors='corrected'] li.ok")


def test_the_lead_edits_with_the_structured_editor_and_places_the_point_on_o_tau(
    browser, live_server, lead, submitted, artifacts_dir
):
    page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    login(page, live_server.url, lead.username)
    open_editor(page, live_server.url, submitted)
    corrected = page.locator("[data-review-slot='corrected']")
    assert corrected.locator("[data-canonical='corrected']").inner_text() == (
        "click(start_box='<|box_start|>(500,300)<|box_end|>')"
    )
    # A click on o_τ moves the corrected point to that pixel (relative-1000 of the image under the pointer).
    frame = page.locator(".shot-frame[data-markers='error-markers'] .zoom-layer")
    frame.scroll_into_view_if_needed()
    box = frame.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.75)
    # (Within a pixel's rounding of the screenshot's size on the screen.)
    page.wait_for_function(
        "() => /\\((2[45]\\d),(7[45]\\d)\\)/.test(document.getElementById('edit-corrected_action').value)"
    )
    placed = page.input_value("#edit-corrected_action")
    x, y = map(int, re.search(r"\((\d+),(\d+)\)", placed).groups())
    # A pointer event lands on a whole CSS pixel: one pixel of the frame on the screen, in relative-1000 units.
    pixel_x, pixel_y = math.ceil(1000 / box["width"]), math.ceil(1000 / box["height"])
    assert abs(x - 250) <= pixel_x and abs(y - 750) <= pixel_y, (placed, box)
    # The post-reflection: another type from the platform's list, its key typed slowly (each keystroke checked by the
    # server, the editor redrawn) without losing the focus.
    page.select_option("[data-review-slot='reflection'] [data-slot-type='reflection']", "hotkey")
    key = page.locator("[data-review-slot='reflection'] [data-arg='key']")
    key.click()
    key.press_sequentially("ctrl shift t", delay=180)
    page.wait_for_function(
        "(want) => document.getElementById('edit-reflection_action').value === want", arg="hotkey(key='ctrl shift t')"
    )
    assert page.evaluate("document.activeElement.dataset.arg") == "key"
    page.screenshot(path=str(artifacts_dir / "review-edit-structured.png"), full_page=True)
    page.click("#edit-accept-button")
    page.wait_for_load_state()
    submitted.refresh_from_db()
    assert submitted.status == AnnotationStatus.ACCEPTED
    assert submitted.corrected_action == placed
    assert submitted.reflection_action == "hotkey(key='ctrl shift t')"


def test_a_refused_edit_keeps_what_was_typed_and_says_why_beside_it(
    browser, live_server, lead, submitted, artifacts_dir
):
    page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    login(page, live_server.url, lead.username)
    open_editor(page, live_server.url, submitted)
    key = page.locator("[data-review-slot='reflection'] [data-arg='key']")
    key.fill("ctrl alt shift t")  # four keys: the prompt allows at most three
    page.wait_for_selector("[data-review-slot='reflection'] [data-errors='reflection'] li:not(.ok)")
    beside = page.inner_text("[data-review-slot='reflection'] [data-errors='reflection']")
    assert "at most 3" in beside, beside
    page.fill("textarea[name=corrected_thought]", "Open the Display page, then Night Light.")
    page.click("#edit-accept-button")
    page.wait_for_selector("#edit-error")
    assert "Not saved" in page.inner_text("#edit-error")
    # What the lead typed is still there: the thought, and the refused action in the editor.
    assert page.input_value("textarea[name=corrected_thought]") == "Open the Display page, then Night Light."
    page.wait_for_selector("#edit-accept[data-ready='1']")
    assert page.input_value("[data-review-slot='reflection'] [data-arg='key']") == "ctrl alt shift t"
    page.screenshot(path=str(artifacts_dir / "review-edit-refused.png"), full_page=True)
    submitted.refresh_from_db()
    assert submitted.status == AnnotationStatus.SUBMITTED
    assert submitted.reflection_action == "hotkey(key='alt left')"


def test_the_correction_fields_show_for_an_error_verdict_only(browser, live_server, lead, submitted):
    # A "no error" answer's edit form listed τ, the corrections and "click o_τ above" with no o_τ on the screen.
    page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    login(page, live_server.url, lead.username)
    open_editor(page, live_server.url, submitted)
    assert page.is_visible("#edit-tau")
    page.select_option("#edit-verdict", Verdict.NO_ERROR)
    assert page.is_hidden("#edit-tau") and page.is_hidden("[data-review-slot='corrected']")
    page.select_option("#edit-verdict", Verdict.ERROR)
    assert page.is_visible("#edit-tau")
    Annotation.objects.filter(pk=submitted.pk).update(verdict=Verdict.NO_ERROR, tau=None)
    page.goto(f"{live_server.url}/reviews/{submitted.pk}/")
    page.click("#edit-accept summary")
    assert page.is_visible("#edit-verdict") and page.is_hidden("#edit-tau")


def placed_in_the_editor(annotation: Annotation) -> Annotation:
    """``annotation``'s actions as the workspace's editor stores them (the points the τ rule knows were placed)."""
    annotation.editor_state = {
        "corrected": {"type": "click", "args": {"start_box": [500, 300]}, "style": "box"},
        "reflection": {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"},
    }
    annotation.save(update_fields=["editor_state"])
    return annotation


def test_the_screens_follow_tau_and_the_lead_places_the_action_on_the_new_one(
    browser, live_server, lead, submitted, artifacts_dir
):
    """The lead moves τ from 2 to 3: o_τ and o_τ+1 at the top become step 3's screen and the final screen, the
    recorded action under o_τ is step 3's, and the click placed there is the lead's corrected action on step 3 (the
    caption under o_τ reads it, not the annotator's); accepted with τ 3."""
    placed_in_the_editor(submitted)
    page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    login(page, live_server.url, lead.username)
    open_editor(page, live_server.url, submitted)
    step_2 = page.get_attribute(".shot-frame[data-markers='error-markers'] img", "src")
    page.fill("#edit-tau", "3")
    page.wait_for_selector("#edit-accept[data-tau-shown='3']")
    assert page.inner_text("[data-tau-screen='corrected']") == "step 3"
    assert page.inner_text("[data-tau-screen='reflection']") == "final screen"
    step_3 = page.get_attribute(".shot-frame[data-markers='error-markers'] img", "src")
    assert step_3 != step_2
    final = page.get_attribute(".shot-frame[data-markers='reflection-markers'] img", "src")
    assert final not in (step_2, step_3)
    # Step 3's recorded click (write_native_trace: (250, 290)) is the original under o_τ now, its thought the
    # original thought (plain: the served diff was against step 2's).
    assert "(250,290)" in page.inner_text("[data-legend='original']")
    assert page.inner_text("#diff-before") == "I will click item 3."
    assert page.locator("#diff-before .diff-delete, #diff-after .diff-insert").count() == 0
    # The annotator's point was placed on step 2: not drawn on step 3's screen.
    assert page.locator(".shot-frame[data-markers='error-markers'] .marker.corrected").count() == 0
    frame = page.locator(".shot-frame[data-markers='error-markers'] .zoom-layer")
    frame.scroll_into_view_if_needed()
    box = frame.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.6)
    page.wait_for_function(
        "() => /\\((39\\d|40\\d),(59\\d|60\\d)\\)/.test(document.getElementById('edit-corrected_action').value)"
    )
    placed = page.input_value("#edit-corrected_action")
    page.wait_for_function(
        "(want) => document.querySelector(\"[data-legend='corrected']\").textContent === want", arg=placed
    )
    assert page.locator(".shot-frame[data-markers='error-markers'] .marker.corrected").count() == 1
    page.screenshot(path=str(artifacts_dir / "review-edit-tau-moved.png"), full_page=True)
    page.click("#edit-accept-button")
    page.wait_for_load_state()
    submitted.refresh_from_db()
    assert (submitted.status, submitted.tau) == (AnnotationStatus.ACCEPTED, 3)
    assert submitted.corrected_action == placed
    assert submitted.reflection_action == "hotkey(key='alt left')"  # no point: it holds on any τ


def test_a_tau_moved_without_a_new_point_is_refused_and_the_new_screens_stay(
    browser, live_server, lead, submitted, artifacts_dir
):
    placed_in_the_editor(submitted)
    page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    login(page, live_server.url, lead.username)
    open_editor(page, live_server.url, submitted)
    page.fill("#edit-tau", "1")
    page.wait_for_selector("#edit-accept[data-tau-shown='1']")
    page.click("#edit-accept-button")
    page.wait_for_selector("#edit-error")
    assert "place the corrected action again on step 1" in page.inner_text("#edit-error")
    # Shown again with the τ typed, its screens at the top: the point can be placed there now.
    page.wait_for_selector("#edit-accept[data-tau-shown='1']")
    assert page.inner_text("[data-tau-screen='corrected']") == "step 1"
    submitted.refresh_from_db()
    assert (submitted.status, submitted.tau) == (AnnotationStatus.SUBMITTED, 2)
