"""One full correction with the keyboard only: τ, category, corrected thought, a
click placed from the keyboard, post-reflection, submit. Counts the keys (reported, not asserted), at 1366×768
with a long real thought shown whole."""

from __future__ import annotations

import re

import pytest

from annotation.models import Annotation, AnnotationStatus
from tests.annotation.test_browser_workspace import open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

LONG = "I see the Settings window with the sidebar on the left and the Display page open. " * 12


def test_a_full_correction_with_the_keyboard_only(browser, live_server, project, annotator, tmp_path, artifacts_dir):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, thoughts={2: LONG}, external_id="kbd"))
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    keys = []

    def press(key, times=1):
        for _ in range(times):
            page.keyboard.press(key)
            keys.append(key)

    press("j")  # to step 2
    thought = page.locator("#ws-thought")
    # The long thought is cut to three lines (the form stays in view), "Show all" opens it (tests/annotation/test_browser_layout.py).
    assert thought.evaluate("el => el.scrollHeight > el.clientHeight + 1")
    assert page.is_visible("#ws-thought-more")
    press("e")
    assert page.evaluate("document.activeElement.id") == "f-error_category"
    press("1")  # the first category
    assert page.evaluate("document.activeElement.id") == "f-corrected_thought"
    page.keyboard.type("I should open the Display page first.")
    press("Tab")
    assert page.evaluate("document.activeElement.dataset.slotType") == "corrected"
    press("1")  # click: the keyboard cursor starts on the recorded point, (200,260)
    press("ArrowRight")  # half way to the right edge: 600
    press("ArrowDown")  # half way to the bottom: 630
    press("Shift+ArrowLeft")  # a fine nudge: 1 % of the view
    press("Enter")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    canonical = page.inner_text("[data-canonical='corrected']")
    x, y = map(int, re.search(r"\((\d+),(\d+)\)", canonical).groups())
    assert (x, y) == (590, 630)  # relative-1000
    page.screenshot(path=str(artifacts_dir / "keyboard-correction-1366.png"))

    press("j")  # o_{τ+1}
    press("f")
    assert page.evaluate("document.activeElement.id") == "f-reflection_thought"
    page.keyboard.type("That click went nowhere; I will go back.")
    press("Tab")
    press("5")  # hotkey: no point, the key field takes the focus
    assert page.evaluate("document.activeElement.dataset.arg") == "key"
    page.keyboard.type("alt left")
    page.wait_for_selector("[data-errors='reflection'] li.ok")
    press("Control+Enter")
    page.wait_for_selector("#ws-next:not([hidden])")
    stored = Annotation.objects.get(annotator=annotator)
    assert stored.status == AnnotationStatus.SUBMITTED and stored.tau == 2
    assert stored.corrected_action == "click(start_box='<|box_start|>(590,630)<|box_end|>')"
    assert stored.reflection_action == "hotkey(key='alt left')"
    print(f"\nkeyboard-only correction: {len(keys)} keys besides the typed text: {' '.join(keys)}")
    assert len(keys) == 14


def test_the_help_is_a_dialog_the_page_keys_wait_behind(browser, live_server, project, annotator, tmp_path):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="help"))
    page = browser.new_context(viewport={"width": 1366, "height": 600}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("?")
    assert page.is_visible("#ws-help")
    assert page.evaluate("document.activeElement.hasAttribute('data-close')")  # the focus is in the dialog
    card = page.locator("#ws-help .ws-modal-card").bounding_box()
    assert card["y"] >= 0 and card["y"] + card["height"] <= 600, card  # a short window scrolls it, not cuts it
    assert page.evaluate("document.querySelector('#ws-help .ws-modal-card').scrollTop") == 0  # shown from its top
    # Keys pressed while reading the help do nothing behind it: no τ marked unseen, no step changed.
    page.keyboard.press("e")
    page.keyboard.press("j")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.hasAttribute('data-close')")  # Tab stays in the dialog
    assert page.inner_text("#ws-verdict-text") == "Not decided yet."
    assert page.inner_text("#ws-step-label") == "Step 1 of 3"
    page.keyboard.press("Escape")
    assert page.is_hidden("#ws-help")
    page.keyboard.press("j")  # closed: the keys work again
    assert page.inner_text("#ws-step-label") == "Step 2 of 3"
    # Opened with its button, closed with Close: the focus goes back to the button.
    page.click("#ws-help-btn")
    page.click("#ws-help [data-close]")
    assert page.is_hidden("#ws-help")
    assert page.evaluate("document.activeElement.id") == "ws-help-btn"


def test_e_refused_on_the_final_screen_leaves_the_focus_and_the_keys_alone(
    browser, live_server, project, annotator, tmp_path
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="final"))
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")  # τ = 2
    page.keyboard.press("1")  # the first category; the focus goes on to the corrected thought
    page.keyboard.press("Escape")
    category = page.input_value("#f-error_category")
    wait_saved(page)  # a save's answer clears the banner: none may land between the refused e and the reading
    page.keyboard.press("End")  # the final screen
    # The stage and the step's panel name it alike (the panel read "Step 4 (final screen) as recorded").
    assert page.inner_text("#ws-step-label") == page.inner_text("#ws-step-num") == "Final screen (after step 3)"
    assert page.is_hidden("#ws-step-recorded")
    page.keyboard.press("e")  # refused: the final screen is not a step
    assert "final screen is not a step" in page.inner_text("#ws-banner")
    assert page.evaluate("document.activeElement === document.body")  # not in the category list
    page.keyboard.press("t")  # so t goes to τ, rather than picking a category starting with t
    assert page.inner_text("#ws-step-label") == page.inner_text("#ws-step-num") == "Step 2 of 3"
    assert page.is_visible("#ws-step-recorded")
    assert page.input_value("#f-error_category") == category
