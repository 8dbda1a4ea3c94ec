"""Element boxes in the workspace and on the review page, in Debian's Chromium: a box drawn with the
mouse at zoom 2.25 (exact through the zoom transform, as point placement is) and from the keyboard; the point at the
box's centre and moved inside it; a point outside its box refused by the server beside the field; an imported
element outlined on hover and snapped to on click; the stored boxes checked in the database; the review page draws
them. Screenshots in test-artifacts/."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image, ImageDraw

from annotation.models import Annotation
from annotation.selectors import action_target_box
from tests.annotation.test_browser_workspace import open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_annotation import import_folder
from traces import grammar

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

# relative-1000 boxes of two buttons the source recorded on step 2's screen (1920x1080).
SAVE = [100, 200, 300, 260]
CANCEL = [350, 200, 550, 260]


def write_trace(folder):
    folder.mkdir(parents=True, exist_ok=True)
    steps = []
    for i in range(1, 4):
        image = Image.new("RGB", (1920, 1080), (30 + 30 * i, 60, 90))
        draw = ImageDraw.Draw(image)
        for box, name in ((SAVE, "Save"), (CANCEL, "Cancel")):
            x1, y1, x2, y2 = box[0] * 1.92, box[1] * 1.08, box[2] * 1.92, box[3] * 1.08
            draw.rectangle([x1, y1, x2, y2], fill=(230, 230, 240))
            draw.text((x1 + 20, y1 + 20), name, fill=(10, 10, 10))
        image.save(folder / f"s{i}.png")
        steps.append(
            {
                "screenshot": f"s{i}.png",
                "thought": f"Step {i}.",
                "action": "click(start_box='(700,700)')",
                "elements": [{"box": SAVE, "label": "Save"}, {"box": CANCEL, "label": "Cancel"}],
            }
        )
    Image.new("RGB", (1920, 1080), (20, 120, 60)).save(folder / "final.png")
    document = {
        "format": "trace-studio/v1",
        "external_id": "boxes",
        "instruction": "Save the form",
        "steps": steps,
        "final_screenshot": "final.png",
    }
    (folder / "trace.json").write_text(json.dumps(document))
    return folder


@pytest.fixture
def correcting(browser, live_server, project, annotator, tmp_path):
    """An annotator on step 2 of a 1920x1080 trace with recorded elements, τ = 2, the corrected action a click."""
    import_folder(project, write_trace(tmp_path / "t"))
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
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
    page.locator("#ws-step-label").click()
    yield page
    context.close()
    assert errors == []


def image_box(page) -> dict:
    return page.locator(".ws-frame.placing .ws-zoom").bounding_box()


def model_at(page, x: float, y: float) -> tuple[int, int]:
    """The relative-1000 point of the screen position (x, y), measured on the transformed image."""
    box = image_box(page)
    return round((x - box["x"]) / box["width"] * 1000), round((y - box["y"]) / box["height"] * 1000)


def screen_at(page, point) -> tuple[float, float]:
    box = image_box(page)
    return box["x"] + point[0] / 1000 * box["width"], box["y"] + point[1] / 1000 * box["height"]


def stored(annotator) -> dict:
    return Annotation.objects.get(annotator=annotator).editor_state["corrected"]


def canonical_point(page) -> tuple[int, int] | None:
    match = re.search(r"\((\d+),(\d+)\)", page.inner_text("[data-canonical='corrected']"))
    return (int(match[1]), int(match[2])) if match else None


def test_a_box_drawn_with_the_mouse_at_zoom_then_the_point_moved_and_refused_outside(
    correcting, annotator, artifacts_dir
):
    page = correcting
    page.keyboard.press("+")
    page.keyboard.press("+")
    page.wait_for_function("() => window.wsZoom().scale > 2")
    page.wait_for_timeout(200)
    frame = page.locator(".ws-frame.placing").bounding_box()
    a = (frame["x"] + frame["width"] * 0.40, frame["y"] + frame["height"] * 0.42)
    b = (frame["x"] + frame["width"] * 0.63, frame["y"] + frame["height"] * 0.58)
    expected = [*model_at(page, *a), *model_at(page, *b)]
    zoom_before = page.evaluate("window.wsZoom()")
    page.keyboard.down("Shift")
    page.mouse.move(*a)
    page.mouse.down()
    page.mouse.move(b[0] - 40, b[1] - 20, steps=5)
    page.mouse.move(*b, steps=3)
    assert page.locator(".ws-overlay .ws-box-draft").count() == 1  # the box is drawn while dragging
    page.mouse.up()
    page.keyboard.up("Shift")
    assert page.evaluate("window.wsZoom()") == zoom_before  # the drag drew; it did not pan
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    shown = json.loads(page.inner_text("[data-box='corrected']"))
    assert all(abs(g - e) <= 1 for g, e in zip(shown, expected)), (shown, expected)
    # The point defaults to the box's centre as the server rounds it (an integer, a tie to even): the point trained.
    centre = (round((shown[0] + shown[2]) / 2), round((shown[1] + shown[3]) / 2))
    assert canonical_point(page) == centre
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts_dir / "boxes-mouse-zoom.png"))

    # A click inside the box moves the point there.
    inside = (a[0] + (b[0] - a[0]) * 0.2, a[1] + (b[1] - a[1]) * 0.7)
    moved = model_at(page, *inside)
    page.mouse.click(*inside)
    page.wait_for_function(
        f"() => document.querySelector(\"[data-canonical='corrected']\").textContent.includes('({moved[0]},{moved[1]})')"
    )
    page.keyboard.press("Control+s")
    wait_saved(page)
    saved = stored(annotator)
    assert saved["target_box"] == shown and saved["args"]["start_box"] == list(moved)

    # A click outside the box (on no recorded element) places the point there: the server refuses it beside the field.
    outside = (b[0] + 60, b[1] + 30)
    page.mouse.click(*outside)
    page.wait_for_selector("[data-errors='corrected'] li:has-text('lies outside its element box')")
    page.wait_for_selector("#ws-save[data-state='error']", timeout=15000)
    assert "lies outside its element box" in page.inner_text("#ws-banner")
    assert stored(annotator) == saved  # nothing stored
    page.screenshot(path=str(artifacts_dir / "boxes-refused-outside.png"))


def test_a_box_from_the_keyboard(correcting, annotator, artifacts_dir):
    page = correcting
    page.keyboard.press("p")  # the keyboard point: on the recorded click, (700,700) of 1920×1080
    page.keyboard.press("Shift+ArrowLeft")
    page.keyboard.press("Shift+ArrowUp")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    x0, y0 = canonical_point(page)
    page.keyboard.press("b")  # starts at the keyboard point
    for _ in range(5):
        page.keyboard.press("Shift+ArrowRight")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowDown")
    assert page.locator(".ws-overlay .ws-box-draft").count() == 1
    page.screenshot(path=str(artifacts_dir / "boxes-keyboard-sizing.png"))
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    # Shift+arrows move 1 % of the view: 19.2 px and 10.8 px on 1920x1080 at fit, 10 per press in relative-1000.
    assert json.loads(page.inner_text("[data-box='corrected']")) == [x0, y0, x0 + 50, y0 + 30]
    # The point goes to the box's centre (the server's default, taken over once checked).
    page.wait_for_selector(f"[data-canonical='corrected']:has-text('({x0 + 25},{y0 + 15})')")
    page.keyboard.press("Control+s")
    wait_saved(page)
    assert stored(annotator) == {
        "type": "click",
        "args": {"start_box": [x0 + 25, y0 + 15]},
        "style": "box",
        "target_box": [x0, y0, x0 + 50, y0 + 30],
    }
    page.wait_for_timeout(200)
    page.screenshot(path=str(artifacts_dir / "boxes-keyboard.png"))


def test_an_imported_element_shows_on_hover_and_a_click_snaps_to_it_then_review_draws_it(
    correcting, annotator, lead, live_server, browser, artifacts_dir
):
    page = correcting
    over_cancel = screen_at(page, (500, 240))
    page.mouse.move(*over_cancel)
    page.wait_for_selector(".ws-overlay .ws-element-hover")
    hover = page.locator(".ws-overlay .ws-element-hover").bounding_box()
    left, top = screen_at(page, CANCEL[:2])
    assert hover["x"] == pytest.approx(left, abs=3) and hover["y"] == pytest.approx(top, abs=3)
    page.screenshot(path=str(artifacts_dir / "boxes-element-hover.png"))
    page.mouse.click(*over_cancel)
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    assert json.loads(page.inner_text("[data-box='corrected']")) == CANCEL
    assert canonical_point(page) == (450, 230)  # snapped: the element's centre
    # A click inside the box moves the point, not the box.
    page.mouse.click(*screen_at(page, (520, 250)))
    page.wait_for_function(
        "() => !document.querySelector(\"[data-canonical='corrected']\").textContent.includes('(450,230)')"
    )
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    moved = canonical_point(page)
    assert moved == pytest.approx((520, 250), abs=1), moved
    page.keyboard.press("Control+s")
    wait_saved(page)
    assert stored(annotator)["target_box"] == CANCEL and stored(annotator)["args"]["start_box"] == list(moved)
    page.screenshot(path=str(artifacts_dir / "boxes-snapped.png"))

    # Submitted from the page, then the lead's review page draws the box.
    page.fill("#f-corrected_thought", "Cancel the form.")
    page.locator("#ws-step-label").click()
    page.keyboard.press("j")  # o_τ+1: the post-reflection's screen
    page.fill("#f-no_reflection_reason", "The form is gone after the click; nothing to recover.")
    page.click("#ws-submit")
    page.wait_for_selector("#ws-status-pill.submitted")
    ann = Annotation.objects.get(annotator=annotator)
    assert ann.status == "submitted" and ann.editor_state["corrected"]["target_box"] == CANCEL
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    lead_page = context.new_page()
    login(lead_page, live_server.url, lead.username)
    lead_page.goto(f"{live_server.url}/reviews/{ann.pk}/")
    lead_page.wait_for_selector(".marker-box.corrected")
    box = lead_page.locator(".shot-frame[data-markers='error-markers'] .marker-box.corrected").bounding_box()
    image = lead_page.locator(".shot-frame[data-markers='error-markers'] img").bounding_box()
    assert (box["x"] - image["x"]) / image["width"] == pytest.approx(CANCEL[0] / 1000, abs=0.005)
    assert box["width"] / image["width"] == pytest.approx((CANCEL[2] - CANCEL[0]) / 1000, abs=0.005)
    lead_page.screenshot(path=str(artifacts_dir / "boxes-review.png"))

    # The lead's editor holds the box: a point outside it is refused beside the field; cleared, the point may move.
    lead_page.click("#edit-accept summary")
    lead_page.wait_for_selector("#edit-accept[data-ready='1']")
    editor = lead_page.locator("[data-review-slot='corrected']")
    editor.locator("[data-errors='corrected'] li.ok").wait_for()
    assert json.loads(editor.locator("[data-box='corrected']").inner_text()) == CANCEL
    layer = lead_page.locator(".shot-frame[data-markers='error-markers'] .zoom-layer")
    layer.scroll_into_view_if_needed()
    frame = layer.bounding_box()
    lead_page.mouse.click(frame["x"] + frame["width"] * 0.2, frame["y"] + frame["height"] * 0.23)  # on Save
    editor.locator("[data-errors='corrected'] li", has_text="lies outside its element box").wait_for()
    lead_page.screenshot(path=str(artifacts_dir / "boxes-review-refused.png"), full_page=True)
    editor.locator("[data-clear-box='corrected']").click()
    editor.locator("[data-errors='corrected'] li.ok").wait_for()
    lead_page.click("#edit-accept-button")
    lead_page.wait_for_load_state()
    context.close()
    ann.refresh_from_db()
    assert ann.status == "accepted" and action_target_box(ann, "corrected", box_tokens=True) is None
    point = grammar.parse_action(ann.corrected_action).point()
    assert point == pytest.approx((200, 230), abs=4) and not grammar.point_in_box(point, CANCEL)  # on Save
    assert grammar.TARGET_BOX not in ann.editor_state["corrected"]


def test_the_workspace_shows_the_rules_flag_of_a_recorded_click_on_no_element(
    browser, live_server, project, annotator, lead, tmp_path, artifacts_dir
):
    from prescoring import services as prescoring

    import_folder(project, write_trace(tmp_path / "t"))  # every recorded click is (700, 700): on no element
    job = prescoring.prescore_job_run(
        job_id=prescoring.prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False).pk
    )
    assert job.status == "succeeded", job.message
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    # The flag in the server's words (prescoring.rules.FLAG_LABELS), not its code ("off element").
    badge = page.locator("#prescore-flags .prescore-flag", has_text="point on no recorded element")
    badge.wait_for()
    title = page.locator("#prescore-flags [title*='hits none of the 2 elements']")
    assert title.count() == 1
    # Any step's recorded elements show on hover, not only on a correction's screen: what the click was meant to hit.
    image = page.locator(".ws-frame .ws-zoom").bounding_box()
    page.mouse.move(image["x"] + 0.2 * image["width"], image["y"] + 0.23 * image["height"])  # on Save
    hover = page.locator(".ws-overlay .ws-element-hover")
    hover.wait_for()
    outline = hover.bounding_box()
    assert outline["x"] == pytest.approx(image["x"] + SAVE[0] / 1000 * image["width"], abs=3)
    assert outline["width"] == pytest.approx((SAVE[2] - SAVE[0]) / 1000 * image["width"], abs=3)
    page.screenshot(path=str(artifacts_dir / "boxes-off-element-flag.png"))
    context.close()
    assert errors == []
