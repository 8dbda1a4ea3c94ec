"""The review page's screenshots: the workspace's zoomable viewer (static/js/zoom.js),
fitted to the viewport (a phone screenshot no longer pushes the decision down), marks that keep their size and labels
that never overlap; and every answer, "no error" included, shows the whole trace as a filmstrip and a viewer."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.services import annotation_transition
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


def submitted(project, annotator, **answer) -> Annotation:
    trace = Trace.objects.get(project=project)
    with transaction.atomic():
        annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator, **answer)
        annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
    return annotation


FOLLOWS = """([first, second]) => !!(document.querySelector(first).compareDocumentPosition(
    document.querySelector(second)) & Node.DOCUMENT_POSITION_FOLLOWING)"""


def boxes_overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def test_a_no_error_answer_is_reviewed_over_the_whole_trace(
    browser, live_server, project, annotator, lead, tmp_path, artifacts_dir
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="clean"))
    annotation = submitted(project, annotator, verdict=Verdict.NO_ERROR)
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{annotation.pk}/")
    thumbs = page.locator("#viewer-strip .viewer-thumb")
    assert thumbs.count() == 5  # four steps and the final screen
    # With no τ the trace is all there is to judge: it comes before the decision.
    assert page.evaluate(FOLLOWS, ["#trace-viewer", ".decide"])
    page.wait_for_function("() => document.getElementById('viewer-image').naturalWidth > 0")
    assert page.inner_text("#viewer-title") == "step 1"
    assert page.locator("#viewer-frame .marker.original").count() == 1  # the recorded click, placed by the server
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.inner_text("#viewer-title") == "step 3"
    assert "I will click item 3." in page.inner_text("#viewer-thought")
    thumbs.nth(4).click()
    assert page.inner_text("#viewer-title") == "final screen"
    page.screenshot(path=str(artifacts_dir / "review-no-error-trace.png"), full_page=True)
    assert errors == []


def test_phone_screens_fit_the_window_zoom_keeps_marks_and_labels_never_overlap(
    browser, live_server, project, annotator, lead, tmp_path, artifacts_dir
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, size=(1080, 2340), external_id="phone"))
    step_two = Trace.objects.get(project=project).steps.get(index=2)
    # The correction lands 5 (of 1000) from the recorded click: the two labels would sit on each other.
    annotation = submitted(
        project,
        annotator,
        verdict=Verdict.ERROR,
        tau=2,
        error_category=project.error_categories[0],
        corrected_thought="Tap the item just below.",
        corrected_action="click(start_box='<|box_start|>(205,263)<|box_end|>')",
        reflection_thought="Wrong item; back.",
        reflection_action="press_back()",
    )
    assert "(200,260)" in step_two.action_text
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{annotation.pk}/")
    # With a τ, o_τ and o_τ+1 stay next to the decision; the whole trace comes after it.
    assert page.evaluate(FOLLOWS, [".decide", "#trace-viewer"])
    frame = page.locator(".shot-frame[data-markers='error-markers']")
    page.wait_for_function("() => [...document.querySelectorAll('.review-shot')].every(i => i.complete)")
    assert frame.bounding_box()["height"] <= 768  # fitted: a 2340-px-tall screen fits the window
    labels = page.locator(".shot-frame[data-markers='error-markers'] .marker-label")
    assert labels.count() == 2
    assert not boxes_overlap(labels.nth(0).bounding_box(), labels.nth(1).bounding_box())

    page.screenshot(path=str(artifacts_dir / "review-phone-1366.png"))
    # Zoom around the corrected point: both τ screens zoom together, the marks keep their size on screen.
    ring_before = page.locator(".shot-frame[data-markers='error-markers'] .marker.corrected").bounding_box()
    box = frame.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.205, box["y"] + box["height"] * 0.263)
    for _ in range(5):
        page.mouse.wheel(0, -240)
    page.wait_for_function("() => window.reviewZoom().scale > 3")
    page.wait_for_timeout(300)
    transforms = page.eval_on_selector_all(".shot-frame .zoom-layer", "els => els.map(e => e.style.transform)")
    assert len(set(transforms)) == 1 and "scale(" in transforms[0]
    ring_after = page.locator(".shot-frame[data-markers='error-markers'] .marker.corrected").bounding_box()
    assert ring_after["width"] == pytest.approx(ring_before["width"], rel=0.1)
    assert not boxes_overlap(labels.nth(0).bounding_box(), labels.nth(1).bounding_box())
    page.screenshot(path=str(artifacts_dir / "review-phone-zoomed-1366.png"))
    page.keyboard.press("0")
    assert page.evaluate("window.reviewZoom().scale") == 1
