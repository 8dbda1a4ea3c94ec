"""Zoom and pan in the workspace: wheel zoom around the pointer, drag to pan, + - 0,
a loupe while placing a point, markers that keep their size on screen, click-to-place exact at every zoom, and a
zoom that stays while stepping. The frame rate of zooming a 1920×1080 screenshot is measured and printed (reported,
not asserted)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


@pytest.fixture
def correcting(browser, live_server, project, annotator, tmp_path):
    """An annotator on step 2 of a 1920×1080 trace, τ = 2, the corrected action type set to click."""
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="zoom"))
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")  # first category; the corrected thought has the focus
    page.keyboard.press("Tab")
    page.select_option("[data-slot-type='corrected']", "click")
    page.keyboard.press("Escape")  # leave the keyboard cursor: this test places with the mouse
    page.locator("#ws-step-label").click()  # nothing focused: the page's keys are live
    yield page
    context.close()
    assert errors == []


def zoom(page) -> dict:
    return page.evaluate("window.wsZoom()")


def image_box(page) -> dict:
    return page.locator(".ws-frame.placing .ws-zoom").bounding_box()


def placed_point(page) -> tuple[int, int] | None:
    text = page.inner_text("[data-canonical='corrected']")
    match = re.search(r"\((\d+),(\d+)\)", text)
    return (int(match[1]), int(match[2])) if match else None


def test_wheel_zooms_around_the_pointer_and_clicks_stay_exact(correcting, artifacts_dir):
    page = correcting
    frame = page.locator(".ws-frame.placing").bounding_box()
    # The wheel over a point 30 % from the left, 40 % from the top: that point of the image stays under the pointer.
    px, py = frame["x"] + frame["width"] * 0.3, frame["y"] + frame["height"] * 0.4
    before = image_box(page)
    under = ((px - before["x"]) / before["width"], (py - before["y"]) / before["height"])
    page.mouse.move(px, py)
    for _ in range(4):
        page.mouse.wheel(0, -240)
    page.wait_for_function("() => window.wsZoom().scale > 2")
    after = image_box(page)
    assert after["width"] > before["width"] * 2
    still_under = ((px - after["x"]) / after["width"], (py - after["y"]) / after["height"])
    assert still_under == pytest.approx(under, abs=0.002)
    # The level is of the screenshot's own pixels (tests/annotation/test_browser_layout.py: 100 % is 1:1).
    fitted = page.locator(".ws-frame.placing").evaluate("f => f.clientWidth") / 1920
    assert page.inner_text("#ws-zoom-level") == f"{round(zoom(page)['scale'] * fitted * 100)} %"
    # The loupe follows the pointer while a point can be placed.
    page.mouse.move(px + 5, py + 5)
    assert page.locator(".ws-frame.placing .ws-loupe").is_visible()

    # A click at the zoomed view places the point on the image pixel under the pointer (relative-1000).
    target_x, target_y = frame["x"] + frame["width"] * 0.62, frame["y"] + frame["height"] * 0.55
    box = image_box(page)
    expected = (
        round((target_x - box["x"]) / box["width"] * 1000),
        round((target_y - box["y"]) / box["height"] * 1000),
    )
    page.mouse.click(target_x, target_y)
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    got = placed_point(page)
    assert got is not None and abs(got[0] - expected[0]) <= 1 and abs(got[1] - expected[1]) <= 1, (got, expected)
    page.wait_for_timeout(300)  # the markers are redrawn once the view settles
    page.screenshot(path=str(artifacts_dir / "zoom-placed-1920.png"))

    # The marker keeps its size on screen: the ring is as large at this zoom as at 100 %.
    zoomed_ring = page.locator(".ws-overlay .fix .ring").first.bounding_box()["width"]
    page.keyboard.press("0")
    page.wait_for_function("() => window.wsZoom().scale === 1")
    page.wait_for_timeout(300)
    fitted_ring = page.locator(".ws-overlay .fix .ring").first.bounding_box()["width"]
    assert zoomed_ring == pytest.approx(fitted_ring, rel=0.15)


def test_drag_pans_without_placing_and_the_zoom_stays_while_stepping(correcting, artifacts_dir):
    page = correcting
    page.keyboard.press("+")
    page.keyboard.press("+")
    z = zoom(page)
    assert z["scale"] == pytest.approx(2.25)
    frame = page.locator(".ws-frame.placing").bounding_box()
    start = (frame["x"] + frame["width"] * 0.5, frame["y"] + frame["height"] * 0.5)
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(start[0] + 120, start[1] + 60, steps=6)
    page.mouse.up()
    panned = zoom(page)
    assert panned["scale"] == z["scale"]
    assert panned["ox"] * frame["width"] == pytest.approx(z["ox"] * frame["width"] + 120, abs=1)
    assert panned["oy"] * frame["height"] == pytest.approx(z["oy"] * frame["height"] + 60, abs=1)
    assert placed_point(page) is None  # the drag placed nothing

    # Panning stops at the image's edges.
    page.mouse.move(frame["x"] + 5, frame["y"] + 5)
    page.mouse.down()
    page.mouse.move(frame["x"] + frame["width"] - 5, frame["y"] + frame["height"] - 5, steps=4)
    page.mouse.up()
    assert (zoom(page)["ox"], zoom(page)["oy"]) == (0, 0)

    # Stepping keeps the view; the compare pane shows the same region; 0 fits again; - never goes below 100 %.
    page.keyboard.press("j")
    assert zoom(page)["scale"] == pytest.approx(2.25)
    transforms = page.eval_on_selector_all(".ws-zoom", "els => els.map(e => e.style.transform)")
    assert transforms and all("scale(2.25)" in t for t in transforms)
    page.keyboard.press("c")
    transforms = page.eval_on_selector_all(".ws-zoom", "els => els.map(e => e.style.transform)")
    assert len(transforms) == 2 and transforms[0] == transforms[1]
    page.screenshot(path=str(artifacts_dir / "zoom-compare-1920.png"))
    page.keyboard.press("c")
    page.keyboard.press("0")
    page.keyboard.press("-")
    assert zoom(page) == {"scale": 1, "ox": 0, "oy": 0}
    page.click("#ws-zoom-in")
    assert zoom(page)["scale"] == pytest.approx(1.5)
    page.click("#ws-zoom-fit")
    assert zoom(page)["scale"] == 1


def test_the_keyboard_cursor_shows_the_loupe_and_stays_in_view_when_zoomed(correcting, artifacts_dir):
    page = correcting
    for _ in range(4):
        page.keyboard.press("+")  # 5.06×: about a fifth of the screen in view
    page.keyboard.press("p")  # the keyboard cursor, on the recorded point (200,260): the view centres on it
    loupe = page.locator(".ws-frame.placing .ws-loupe")
    page.wait_for_timeout(200)
    assert loupe.is_visible()
    for _ in range(8):
        page.keyboard.press("ArrowRight")  # to the zoomed region's edge, then a fine step past it
    # The view follows the cursor: it is still inside the frame (once drawn where the last key put it).
    expect(page.locator(".ws-overlay .ws-cursor circle")).to_be_visible()
    # Read in one go in the page: each key renders the stage again, so an element found by one call may be
    # replaced before the next one measures it.
    edges = page.evaluate(
        """(() => {
          const cursor = document.querySelector('.ws-overlay .ws-cursor circle');
          const frame = document.querySelector('.ws-frame.placing');
          if (!cursor || !frame) return null;
          const c = cursor.getBoundingClientRect(), f = frame.getBoundingClientRect();
          return [f.left, c.left, c.right, f.right];
        })()"""
    )
    assert edges is not None and edges == sorted(edges), f"the cursor is not inside the frame: {edges}"
    page.screenshot(path=str(artifacts_dir / "zoom-keyboard-loupe-1920.png"))
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    x, _ = placed_point(page)
    # In view: 200 ± 99 (1/5.06 of the width); six presses bisect to its right edge, two fine steps (1 % of the
    # view, 2 in relative-1000) go past it.
    assert x == pytest.approx(301, abs=3)
