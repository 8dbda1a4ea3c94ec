"""Start from what exists: one key (s) copies the first starting point into the
correction: the source's human-edited reply, else the pre-scoring model's own reply, else the recorded action. The
model's reply is read by the server's grammar (``model_start`` in the suggestions API); a blind project offers none."""

from __future__ import annotations

import pytest

from prescoring.models import PrescoreJob, Scorer, StepSuggestion, TraceSuggestion
from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Step, Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

MODEL_REPLY = "Thought: The Display entry is on the left; I open it.\nAction: click(start_box='<|box_start|>(123,456)<|box_end|>')"


def score_step_two(project, reply: str = MODEL_REPLY) -> None:
    trace = Trace.objects.get(project=project)
    job = PrescoreJob.objects.create(project=project, scorer=Scorer.QWEN2VL, status="succeeded", model_name="tiny")
    StepSuggestion.objects.create(
        step=Step.objects.get(trace=trace, index=2), job=job, scorer=Scorer.QWEN2VL, model_action=reply, suspicion=0.9
    )
    TraceSuggestion.objects.create(trace=trace, job=job, scorer=Scorer.QWEN2VL, suggested_tau=2, max_suspicion=0.9)


def mark_error_at_step_two(page) -> None:
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")
    page.keyboard.press("Escape")  # out of the thought field: the page's keys are live


def test_s_copies_the_models_reply_into_the_correction(
    browser, live_server, project, annotator, tmp_path, artifacts_dir
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="starts"))
    score_step_two(project)
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    mark_error_at_step_two(page)
    # The model's reply comes with the suggestions request, after the page's own starting points.
    page.wait_for_selector('[data-starts="corrected"] .ws-start.model')
    assert (
        page.locator('[data-starts="corrected"] .ws-start')
        .first.inner_text()
        .startswith("Start from the model's reply")
    )
    page.keyboard.press("s")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    assert page.input_value("#f-corrected_thought") == "The Display entry is on the left; I open it."
    assert "(123,456)" in page.inner_text("[data-canonical='corrected']")
    page.screenshot(path=str(artifacts_dir / "starts-model-reply.png"))


def test_the_human_edited_reply_comes_first_and_a_blind_project_offers_no_model_reply(
    browser, live_server, project, annotator, tmp_path
):
    human = {2: "Thought: Open Display first.\nAction: click(start_box='<|box_start|>(321,654)<|box_end|>')"}
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="starts", human_edited=human))
    score_step_two(project)
    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    mark_error_at_step_two(page)
    page.wait_for_selector('[data-starts="corrected"] .ws-start')
    page.wait_for_timeout(500)  # time for the suggestions request, which a blind project answers {hidden: true}
    labels = page.locator('[data-starts="corrected"] .ws-start').all_inner_texts()
    assert [label.split(" s")[0] for label in labels] == [
        "Start from the human-edited reply",
        "Start from the recorded action",
    ]
    page.keyboard.press("s")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    assert "(321,654)" in page.inner_text("[data-canonical='corrected']")


def test_the_models_own_action_is_drawn_where_it_points(browser, live_server, project, annotator, tmp_path):
    """Pre-scoring's ghost comes in the one coordinate form (the model's point in the project's convention, here
    relative-1000 on a 1280 × 800 screenshot) and the page places it with the step's extent (static/js/geometry.js)."""
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="ghost", size=(1280, 800)))
    score_step_two(project)
    StepSuggestion.objects.filter(scorer=Scorer.QWEN2VL).update(
        model_action_parsed=[{"type": "click", "args": {"start_box": [250, 750]}, "style": "box"}], loglik_mean=-0.5
    )
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    ghost = page.locator("#ws-stage .ws-overlay .prescore-ghost circle")
    ghost.wait_for()
    mark, image = ghost.bounding_box(), page.locator("#ws-stage .ws-frame img").bounding_box()
    assert mark["x"] + mark["width"] / 2 == pytest.approx(image["x"] + 0.25 * image["width"], abs=1.5)
    assert mark["y"] + mark["height"] / 2 == pytest.approx(image["y"] + 0.75 * image["height"], abs=1.5)
    assert errors == []


def test_a_model_row_without_a_likelihood_shows_its_action_and_no_error(
    browser, live_server, project, annotator, tmp_path
):
    """A model row may carry no mean log-likelihood (the recorded reply was not scored): the strip shows the model's
    own action and leaves the figure out, instead of throwing and leaving the step's strip stale."""
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="no-loglik"))
    score_step_two(project)
    assert StepSuggestion.objects.get(scorer=Scorer.QWEN2VL).loglik_mean is None
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    model = page.locator("#prescore-model")
    model.wait_for()
    page.wait_for_function("document.getElementById('prescore-model').textContent.includes(\"Model's own action\")")
    assert "click" in model.inner_text() and "log-likelihood" not in model.inner_text()
    assert errors == []
