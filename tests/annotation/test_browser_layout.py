"""The page layout at 1366×768 and 1920×1080: the workspace's zoom (a quarter a wheel notch,
"100 %" the screenshot's own pixels, "Fit" apart), the keyboard point reached in a few presses from the recorded
point, the hint under the stage (gone once the point is placed; a point outside its box said there, with "Clear
box"). Screenshots go to test-artifacts/."""

from __future__ import annotations

import re

import pytest

from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

VIEWPORTS = [(1366, 768), (1920, 1080)]


@pytest.fixture(params=VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def viewport(request):
    return request.param


@pytest.fixture
def correcting(browser, live_server, project, annotator, tmp_path, viewport):
    """An annotator at τ = 2 of a 1920×1080 trace (the recorded click at (200,260)), the corrected type click."""
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="layout"))
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")
    page.keyboard.press("Tab")
    page.select_option("[data-slot-type='corrected']", "click")
    page.keyboard.press("Escape")
    page.locator("#ws-step-label").click()  # nothing focused: the page's keys are live
    yield page
    context.close()
    assert errors == []


def zoom(page) -> dict:
    return page.evaluate("window.wsZoom()")


def placed_point(page) -> tuple[int, int] | None:
    match = re.search(r"\((\d+),(\d+)\)", page.inner_text("[data-canonical='corrected']"))
    return (int(match[1]), int(match[2])) if match else None


def wait_point(page, point) -> None:
    page.wait_for_function(
        "p => /\\((\\d+),(\\d+)\\)/.test(document.querySelector(\"[data-canonical='corrected']\").innerText)"
        " && document.querySelector(\"[data-canonical='corrected']\").innerText.includes(p)",
        arg=point,
    )


def test_wheel_zoom_steps_a_quarter_and_100_percent_is_one_to_one(correcting, viewport, artifacts_dir):
    page = correcting
    frame = page.locator(".ws-frame.placing").bounding_box()
    page.mouse.move(frame["x"] + frame["width"] * 0.4, frame["y"] + frame["height"] * 0.4)
    page.mouse.wheel(0, -120)  # a notch of a mouse wheel: a fifth
    page.wait_for_function("() => window.wsZoom().scale > 1.1")
    assert zoom(page)["scale"] == pytest.approx(1.197, abs=0.01)
    page.keyboard.press("0")
    for _ in range(3):
        page.mouse.wheel(0, -500)  # three fast notches: a quarter each at most (they went from 100 % to 386 %)
    page.wait_for_function("() => window.wsZoom().scale > 1.9")
    page.wait_for_timeout(100)
    assert zoom(page)["scale"] == pytest.approx(1.25**3, rel=1e-6)
    # The level is of the screenshot's own pixels: fitted to the pane, a 1920-pixel screenshot shows below 100 %.
    page.click("#ws-zoom-fit")
    assert zoom(page) == {"scale": 1, "ox": 0, "oy": 0}
    width = page.locator(".ws-frame.placing").evaluate("f => f.clientWidth")
    assert page.inner_text("#ws-zoom-level") == f"{round(width / 1920 * 100)} %"
    assert page.get_attribute("#ws-zoom-fit", "aria-pressed") == "true"
    # 100 %: one screenshot pixel per screen pixel.
    page.click("#ws-zoom-level")
    image = page.locator(".ws-frame.placing .ws-zoom img").bounding_box()
    assert image["width"] == pytest.approx(1920, abs=1)
    assert page.inner_text("#ws-zoom-level") == "100 %"
    assert page.get_attribute("#ws-zoom-fit", "aria-pressed") == "false"
    page.screenshot(path=str(artifacts_dir / f"layout-zoom-1to1-{viewport[0]}.png"))
    page.keyboard.press("0")
    assert zoom(page)["scale"] == 1


def bisect_presses(start: tuple[float, float], target: tuple[float, float], per_axis: int = 3) -> list[str]:
    """The arrow presses of the cursor's bisection (static/js/workspace/keyboard.js cursorMove) towards ``target``
    from ``start``, both in fractions of the screenshot, the view fitted."""
    keys, at, ranges = [], list(start), [[0.0, 1.0], [0.0, 1.0]]
    for _ in range(per_axis):
        for axis, (minus, plus) in enumerate((("ArrowLeft", "ArrowRight"), ("ArrowUp", "ArrowDown"))):
            if target[axis] == at[axis]:
                continue
            lo, hi = ranges[axis]
            if target[axis] > at[axis]:
                keys.append(plus)
                lo = at[axis]
            else:
                keys.append(minus)
                hi = at[axis]
            at[axis] = (lo + hi) / 2
            ranges[axis] = [lo, hi]
    return keys


def test_the_keyboard_point_starts_on_the_recorded_one_and_reaches_a_corner_in_six_presses(
    correcting, viewport, artifacts_dir
):
    page = correcting
    hint = page.locator("#ws-place-hint")
    assert hint.is_visible() and "Click the screenshot to place" in hint.inner_text()
    page.keyboard.press("p")
    page.keyboard.press("Enter")  # placed where the source clicked
    wait_point(page, "(200,260)")
    assert hint.is_hidden()  # the point is placed: nothing left to ask
    # A target in the far corner: six presses from the recorded point, within an eighth of the view.
    target = (0.93, 0.06)
    keys = bisect_presses((0.2, 0.26), target)
    assert len(keys) <= 6
    page.keyboard.press("p")
    for key in keys:
        page.keyboard.press(key)
    page.screenshot(path=str(artifacts_dir / f"layout-keyboard-cursor-{viewport[0]}.png"))
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => !document.querySelector(\"[data-canonical='corrected']\").innerText.includes('(200,260)')"
    )
    got = placed_point(page)
    assert got is not None
    assert abs(got[0] - target[0] * 1000) <= 125 and abs(got[1] - target[1] * 1000) <= 125, got


def test_a_click_outside_the_box_says_so_under_the_stage_and_offers_to_clear_it(correcting, viewport, artifacts_dir):
    page = correcting
    frame = page.locator(".ws-frame.placing").bounding_box()
    at = lambda fx, fy: (frame["x"] + frame["width"] * fx, frame["y"] + frame["height"] * fy)  # noqa: E731
    page.keyboard.down("Shift")
    page.mouse.move(*at(0.1, 0.2))
    page.mouse.down()
    page.mouse.move(*at(0.3, 0.4), steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    page.wait_for_function(
        "() => /\\((\\d+),(\\d+)\\)/.test(document.querySelector(\"[data-canonical='corrected']\").innerText)"
    )
    hint = page.locator("#ws-place-hint")
    assert hint.is_hidden()  # the box's centre is the point: placed
    page.mouse.click(*at(0.8, 0.8))  # outside the box
    page.wait_for_selector("#ws-place-hint.ws-place-warning")
    assert "outside the element box" in hint.inner_text()
    clear = page.locator("#ws-hint-clear-box")
    assert clear.is_visible()
    # Where the eye is: the warning lies in the window, under the screenshot just clicked.
    box = hint.bounding_box()
    assert box["y"] + box["height"] <= viewport[1] and box["y"] >= frame["y"]
    page.screenshot(path=str(artifacts_dir / f"layout-point-outside-box-{viewport[0]}.png"))
    clear.click()
    page.wait_for_selector("#ws-place-hint.ws-place-warning", state="detached", timeout=5000)
    assert hint.is_hidden()
    page.wait_for_selector("#ws-save[data-state='saved']", timeout=15000)


@pytest.fixture
def submitted_with_box(project, annotator, tmp_path):
    from django.db import transaction

    from annotation.models import Annotation, AnnotationStatus, Verdict
    from annotation.services import annotation_transition
    from traces.models import Trace

    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="review-layout"))
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
            editor_state={
                "corrected": {
                    "type": "click",
                    "args": {"start_box": [500, 300]},
                    "style": "box",
                    "target_box": [450, 250, 550, 350],
                }
            },
            reflection_thought="Wrong page; back.",
            reflection_action="click(start_box='<|box_start|>(100,100)<|box_end|>')",
        )
        annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
    return annotation


def test_the_review_page_shows_the_evidence_large_with_the_editor_beside_it(
    browser, live_server, lead, submitted_with_box, viewport, artifacts_dir
):
    page = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{submitted_with_box.pk}/")
    shots = page.locator(".review-grid .review-shot")
    assert shots.count() == 2
    for i in range(2):
        # Each of o_τ and o_τ+1 takes most of its half of the window (it was 400 px wide on a 1920 screen).
        assert shots.nth(i).bounding_box()["width"] >= viewport[0] * 0.4, shots.nth(i).bounding_box()
    # The annotator's point and element box are drawn on o_τ, beside the recorded action.
    tau_frame = page.locator(".shot-frame[data-markers='error-markers']")
    assert tau_frame.locator(".marker.original").count() == 1
    assert tau_frame.locator(".marker.corrected").count() == 1
    assert tau_frame.locator(".marker-box.corrected").count() == 1
    page.screenshot(path=str(artifacts_dir / f"layout-review-{viewport[0]}.png"))
    # Edit, then accept: each action's editor opens under the screenshot it is placed on, not a page below it.
    assert page.locator("[data-edit-beside]").first.is_hidden()
    page.click("#edit-accept summary")
    page.wait_for_selector("#edit-accept[data-ready='1']")
    for slot, markers in (("corrected", "error-markers"), ("reflection", "reflection-markers")):
        editor = page.locator(f"[data-review-slot='{slot}']")
        card = page.locator(f".card:has(.shot-frame[data-markers='{markers}'])")
        assert card.locator(f"[data-review-slot='{slot}']").count() == 1
        shot = card.locator(".review-shot").bounding_box()
        assert 0 <= editor.bounding_box()["y"] - (shot["y"] + shot["height"]) <= 250
    page.wait_for_selector("[data-review-slot='corrected'] [data-errors='corrected'] li.ok")
    tau_frame.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / f"layout-review-editing-{viewport[0]}.png"))
    # The fields beside the screenshots are the decision form's: an edit there is what is accepted.
    box = tau_frame.locator(".zoom-layer").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.48, box["y"] + box["height"] * 0.28)  # inside its element box
    page.wait_for_function(
        "() => /\\((4[78]\\d),(2[78]\\d)\\)/.test(document.querySelector('#edit-corrected_action').value)",
        timeout=10000,
    )
    moved = re.search(r"\((\d+),(\d+)\)", page.input_value("#edit-corrected_action"))[0]
    with page.expect_navigation():
        page.click("#edit-accept-button")
    assert page.locator("#edit-error").count() == 0
    submitted_with_box.refresh_from_db()
    assert submitted_with_box.status == "accepted"
    assert moved in submitted_with_box.corrected_action
    assert errors == []


LONG = "I see the Settings window with the sidebar on the left and the Display page open. " * 12


def test_at_tau_the_recorded_step_stays_small_and_in_view_above_the_correction(
    browser, live_server, project, annotator, tmp_path, viewport, artifacts_dir
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, thoughts={2: LONG}, external_id="long"))
    page = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    thought = page.locator("#ws-thought")
    # Cut to three lines, with a button for the rest.
    assert thought.bounding_box()["height"] < 80
    more = page.locator("#ws-thought-more")
    assert more.is_visible()
    more.click()
    assert thought.bounding_box()["height"] > 80 and more.inner_text() == "Show less"
    more.click()
    page.keyboard.press("e")
    page.keyboard.press("1")
    page.keyboard.press("Tab")
    page.select_option("[data-slot-type='corrected']", "click")
    page.keyboard.press("Escape")
    side = page.locator(".ws-side").bounding_box()
    inside = lambda selector: (  # noqa: E731
        lambda b: b is not None and b["y"] >= side["y"] - 1 and b["y"] + b["height"] <= side["y"] + side["height"] + 1
    )(page.locator(selector).bounding_box())
    # The correction's action is in view, and so is the recorded action it corrects (the panel stays on top).
    page.wait_for_selector("[data-errors='corrected'] li")  # checked: the editor is drawn for the last time
    page.wait_for_timeout(300)
    page.locator("[data-slot-type='corrected']").scroll_into_view_if_needed()
    assert inside("[data-slot-type='corrected']")
    assert inside("#ws-action")
    page.screenshot(path=str(artifacts_dir / f"layout-workspace-tau-{viewport[0]}.png"))
    # Measured for the report: how far the side panel must scroll for the verdict, category and action.
    heights = page.evaluate(
        "(() => { const s = document.querySelector('.ws-side'); return [s.scrollHeight, s.clientHeight]; })()"
    )
    print(f"\nside panel at τ, {viewport}: {heights[0]} px of content in {heights[1]} px")
    # Another step: the thought is cut again.
    page.keyboard.press("k")
    page.keyboard.press("j")
    assert thought.bounding_box()["height"] < 80


def test_a_phone_screenshot_takes_the_panes_height(
    browser, live_server, project, annotator, tmp_path, viewport, artifacts_dir
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=2, size=(1080, 2400), external_id="phone"))
    page = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    stage = page.locator("#ws-stage").bounding_box()
    frame = page.locator(".ws-frame").first.bounding_box()
    page.screenshot(path=str(artifacts_dir / f"layout-workspace-phone-{viewport[0]}.png"))
    print(
        f"\nphone screenshot at {viewport}: {frame['width']:.0f}×{frame['height']:.0f} in a {stage['height']:.0f} px stage"
    )
    assert frame["height"] >= stage["height"] * 0.85
