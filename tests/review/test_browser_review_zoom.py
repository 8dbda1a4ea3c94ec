"""The review page's zoom, as the workspace's (static/js/zoom.js): the level button reads the zoom in the
screenshot's own pixels and shows them 1:1, "Fit" is apart, a wheel notch zooms at most a quarter around the pointer,
a drag pans; the annotator's point and element box stay on their screenshot pixels at every zoom, a point placed at
1:1 lands on the pixel clicked, and the edit form's action editors stay under the screenshot they refer to."""

from __future__ import annotations

import json
import re

import pytest
from django.db import transaction

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.services import annotation_transition
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

SHOT = (1920, 1080)
TAU_FRAME = ".shot-frame[data-markers='error-markers']"


@pytest.fixture(params=[(1366, 768), (1920, 1080)], ids=["1366x768", "1920x1080"])
def viewport(request):
    return request.param


@pytest.fixture
def submitted(project, annotator, tmp_path) -> Annotation:
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, size=SHOT, external_id="review-zoom"))
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


def centre(box: dict) -> tuple[float, float]:
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def pixel_under(page, screen: tuple[float, float]) -> tuple[float, float]:
    """The o_τ screenshot pixel shown at a screen position (the image's rectangle on the screen, transform included)."""
    image = page.locator(f"{TAU_FRAME} .review-shot").bounding_box()
    return (
        (screen[0] - image["x"]) * SHOT[0] / image["width"],
        (screen[1] - image["y"]) * SHOT[1] / image["height"],
    )


def test_the_review_zooms_as_the_workspace_and_marks_stay_on_their_pixels(
    browser, live_server, lead, submitted, viewport, artifacts_dir
):
    page = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{submitted.pk}/")
    page.wait_for_function("() => [...document.querySelectorAll('.review-shot')].every(i => i.naturalWidth > 0)")
    marker = json.loads(page.inner_text("#error-markers"))
    corrected = next(m for m in marker if m["kind"] == "corrected")
    # The annotator's point and element box in screenshot pixels, from the server's marker (its convention's extent).
    to_pixels = [SHOT[i % 2] / corrected["extent"][i % 2] for i in range(4)]
    point = (corrected["start"][0] * to_pixels[0], corrected["start"][1] * to_pixels[1])
    element = [v * to_pixels[i] for i, v in enumerate(corrected["box"])]
    ring = page.locator(f"{TAU_FRAME} .marker.corrected")
    element_box = page.locator(f"{TAU_FRAME} .marker-box.corrected")
    frame = page.locator(TAU_FRAME)
    fitted = frame.bounding_box()
    fitted_image = page.locator(f"{TAU_FRAME} .review-shot").bounding_box()

    def on_its_pixels() -> None:
        x, y = pixel_under(page, centre(ring.bounding_box()))
        assert abs(x - point[0]) <= 1.5 and abs(y - point[1]) <= 1.5, ((x, y), point)
        b = element_box.bounding_box()
        corners = pixel_under(page, (b["x"], b["y"])) + pixel_under(page, (b["x"] + b["width"], b["y"] + b["height"]))
        assert all(abs(a - e) <= 2 for a, e in zip(corners, element, strict=True)), (corners, element)

    # Fitted: the level reads the fit in the screenshot's own pixels; "Fit" is pressed.
    level = page.locator("#review-zoom-level")
    assert level.inner_text() == f"{round(fitted['width'] / SHOT[0] * 100)} %"
    assert page.get_attribute("#review-zoom-fit", "aria-pressed") == "true"
    on_its_pixels()
    page.screenshot(path=str(artifacts_dir / f"review-zoom-fit-{viewport[0]}.png"))

    # "100 %": one screenshot pixel per screen pixel, in the same frame (the page does not grow).
    level.click()
    assert level.inner_text() == "100 %"
    assert page.get_attribute("#review-zoom-fit", "aria-pressed") == "false"
    shown = page.locator(f"{TAU_FRAME} .review-shot").bounding_box()
    assert abs(shown["width"] - SHOT[0]) <= 1 and abs(shown["height"] - SHOT[1]) <= 1, shown
    assert frame.bounding_box() == fitted
    on_its_pixels()
    # Both τ screens share the view.
    transforms = page.eval_on_selector_all(".shot-frame .zoom-layer", "els => els.map(e => e.style.transform)")
    assert len(set(transforms)) == 1
    page.screenshot(path=str(artifacts_dir / f"review-zoom-1to1-{viewport[0]}.png"))

    # "Fit" goes back.
    page.click("#review-zoom-fit")
    assert page.evaluate("window.reviewZoom().scale") == 1
    assert page.locator(f"{TAU_FRAME} .review-shot").bounding_box() == pytest.approx(fitted_image, abs=0.5)

    # The wheel over the annotator's point: each notch at most a quarter, the point stays under the pointer.
    frame.scroll_into_view_if_needed()
    under = centre(ring.bounding_box())
    page.mouse.move(*under)
    scales = []
    for _ in range(3):
        page.mouse.wheel(0, -240)
        page.wait_for_function("(n) => window.reviewZoom().scale > n", arg=(scales or [1])[-1] + 1e-6)
        scales.append(page.evaluate("window.reviewZoom().scale"))
    steps = [b / a for a, b in zip([1, *scales], scales, strict=False)]
    assert all(1 < s <= 1.25 + 1e-9 for s in steps), steps
    assert level.inner_text() == f"{round(scales[-1] * fitted['width'] / SHOT[0] * 100)} %"
    now = centre(ring.bounding_box())
    assert abs(now[0] - under[0]) <= 2 and abs(now[1] - under[1]) <= 2, (now, under)
    on_its_pixels()
    page.screenshot(path=str(artifacts_dir / f"review-zoom-wheel-{viewport[0]}.png"))

    # A drag pans the zoomed view; the marks move with the image.
    before = page.evaluate("window.reviewZoom()")
    page.mouse.down()
    page.mouse.move(under[0] + 60, under[1] + 30, steps=5)
    page.mouse.up()
    after = page.evaluate("window.reviewZoom()")
    assert after["scale"] == before["scale"] and (after["ox"], after["oy"]) != (before["ox"], before["oy"])
    on_its_pixels()

    # Edit, then accept while zoomed: the editors stay under their screenshots; at 1:1 a click places the point on
    # the pixel under the pointer.
    page.click("#edit-accept summary")
    page.wait_for_selector("#edit-accept[data-ready='1']")
    page.wait_for_selector("[data-review-slot='corrected'] [data-errors='corrected'] li.ok")
    level.click()
    for slot, markers in (("corrected", "error-markers"), ("reflection", "reflection-markers")):
        shot = page.locator(f".shot-frame[data-markers='{markers}']").bounding_box()
        editor = page.locator(f"[data-review-slot='{slot}']").bounding_box()
        assert 0 <= editor["y"] - (shot["y"] + shot["height"]) <= 250, (slot, shot, editor)
        assert editor["x"] < shot["x"] + shot["width"] and shot["x"] < editor["x"] + editor["width"]
    frame.scroll_into_view_if_needed()
    box = frame.bounding_box()
    target = (box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.6)
    pixel = pixel_under(page, target)
    page.mouse.click(*target)
    wanted = [round(pixel[i] / SHOT[i] * corrected["extent"][i]) for i in range(2)]
    page.wait_for_function(
        "() => !document.getElementById('edit-corrected_action').value.includes('(500,300)')", timeout=10000
    )
    placed = re.search(r"\((\d+),(\d+)\)", page.input_value("#edit-corrected_action")).groups()
    assert all(abs(int(v) - w) <= 1 for v, w in zip(placed, wanted, strict=True)), (placed, wanted)
    # The edited point is drawn where it was placed, on that pixel, and stays there under the wheel.
    page.wait_for_function('() => /edited/.test(document.querySelector(".marker.corrected").title)')
    drawn = centre(ring.bounding_box())
    assert abs(drawn[0] - target[0]) <= 1.5 and abs(drawn[1] - target[1]) <= 1.5, (drawn, target)
    page.mouse.move(box["x"] + box["width"] * 0.7, box["y"] + box["height"] * 0.4)
    page.mouse.wheel(0, -240)
    page.wait_for_timeout(300)
    x, y = pixel_under(page, centre(ring.bounding_box()))
    assert abs(x - pixel[0]) <= 1.5 and abs(y - pixel[1]) <= 1.5, ((x, y), pixel)
    page.screenshot(path=str(artifacts_dir / f"review-zoom-editing-{viewport[0]}.png"))
    assert errors == []
