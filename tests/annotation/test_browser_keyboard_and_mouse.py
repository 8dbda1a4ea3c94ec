"""Keys and the mouse mixed in one correction, in Chromium: a point placed with the mouse (a click, or a box drawn
with Shift+drag) while the keyboard cursor is out ends the keyboard placement as Enter does, so the keys that follow
act on the page (→ the next step, f the post-reflection's thought), and Enter places nothing where the hidden cursor
was. And `e` on a draft that has a category: a digit next picks the category, it is not typed into the thought."""

from __future__ import annotations

import re

import pytest

from annotation.models import Annotation
from tests.annotation.test_browser_workspace import click_on_screenshot, open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


def canonical_point(page) -> tuple[int, int] | None:
    match = re.search(r"\((\d+),(\d+)\)", page.inner_text("[data-canonical='corrected']"))
    return (int(match[1]), int(match[2])) if match else None


def near(point, expected) -> bool:
    """Within a unit of the convention (a click lands on a whole pixel of the screen)."""
    return point is not None and all(abs(p - e) <= 1 for p, e in zip(point, expected))


@pytest.fixture
def at_tau(browser, live_server, project, annotator, tmp_path):
    """The workspace at 1920×1080 with τ = 2 marked, a category, a corrected thought and a click type picked from the
    keyboard: the keyboard cursor is out, on the recorded point."""
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="mixed"))
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")  # the first category; the focus goes on to the corrected thought
    page.keyboard.type("I should open the Display page first.")
    page.keyboard.press("Tab")
    page.keyboard.press("1")  # click: the keyboard cursor starts
    assert page.locator(".ws-overlay .ws-cursor").count() == 1
    yield page
    context.close()


def test_a_click_ends_the_keyboard_placement(at_tau, artifacts_dir):
    page = at_tau
    click_on_screenshot(page, 0.3, 0.4)
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    clicked = canonical_point(page)
    assert near(clicked, (300, 400)), clicked  # relative-1000: where the mouse clicked
    assert page.locator(".ws-overlay .ws-cursor").count() == 0  # the keyboard cursor is gone
    page.screenshot(path=str(artifacts_dir / "mixed-click-ends-cursor.png"))
    page.keyboard.press("Enter")  # no hidden point is placed
    page.wait_for_timeout(300)
    assert canonical_point(page) == clicked
    page.keyboard.press("ArrowRight")  # the step, not a hidden cursor
    assert page.inner_text("#ws-step-label") == "Step 3 of 4"
    page.keyboard.press("f")
    assert page.evaluate("document.activeElement.id") == "f-reflection_thought"
    wait_saved(page)
    stored = Annotation.objects.get()
    assert stored.corrected_action == f"click(start_box='<|box_start|>({clicked[0]},{clicked[1]})<|box_end|>')"


def test_a_box_drawn_with_shift_drag_ends_the_keyboard_placement(at_tau):
    page = at_tau
    frame = page.locator(".ws-frame.placing").bounding_box()
    a = (frame["x"] + frame["width"] * 0.40, frame["y"] + frame["height"] * 0.40)
    b = (frame["x"] + frame["width"] * 0.60, frame["y"] + frame["height"] * 0.60)
    page.keyboard.down("Shift")
    page.mouse.move(*a)
    page.mouse.down()
    page.mouse.move(*b, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    centre = canonical_point(page)
    assert near(centre, (500, 500)), centre  # the box's centre
    assert page.locator(".ws-overlay .ws-cursor").count() == 0
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)
    assert canonical_point(page) == centre
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#ws-step-label") == "Step 3 of 4"


def test_e_then_a_digit_picks_the_category_of_a_draft_that_has_one(at_tau, project):
    page = at_tau
    page.keyboard.press("Escape")  # the cursor goes back in
    page.keyboard.press("Escape")
    thought = page.input_value("#f-corrected_thought")
    categories = project.error_categories
    assert page.input_value("#f-error_category") == categories[0]
    page.keyboard.press("e")  # τ already: the category is chosen, so the focus goes to the corrected thought
    page.keyboard.press("2")  # the second category, not a "2" in the thought
    assert page.input_value("#f-error_category") == categories[1]
    assert page.input_value("#f-corrected_thought") == thought
    assert page.evaluate("document.activeElement.id") == "f-corrected_thought"
    page.keyboard.type(" Then the slider.")  # the letters after it are the thought's
    assert page.input_value("#f-corrected_thought") == thought + " Then the slider."
    wait_saved(page)
    assert Annotation.objects.get().error_category == categories[1]
