"""On-policy alternatives in the workspace, in Debian's Chromium: the stored replies of a checkpoint at τ
drawn as numbered markers at their pixel (parsed ones only; a reply that does not parse is listed as text), Alt+N
takes one as the correction's starting point (the draft saves it; the server holds the mark), w marks the hovered one
wrong (checked in the database); with no model configured the panel says what to set (and is not shown at all while
nothing was ever sampled: there is nothing to take or mark), with one it offers the button
(its job waits on the gpu queue; once it has run, the replies of the checkpoint that speaks the grammar (prescoring.tiny) are drawn); a blind
project shows annotators nothing. The other tests store replies directly, as tests/annotation/test_alternatives.py does.
Screenshots in test-artifacts/."""

from __future__ import annotations

import json
import re

import pytest

from annotation.alternatives import services
from annotation.models import AlternativeMark, AlternativesJob, Annotation, StepAlternative
from tests.annotation.test_browser_starts import mark_error_at_step_two
from tests.annotation.test_browser_workspace import open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_alternatives import store_alternatives
from tests.fixtures_annotation import import_folder, write_native_trace
from traces import grammar

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

REPLIES = [
    "Thought: Open the sound panel.\nAction: click(start_box='(510,300)')",
    "Thought: Click Display.\nAction: click(start_box='(420,260)')",
    "no action here",
]


def open_with_alternatives(page, base_url, project, tmp_path, texts=REPLIES):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="alts"))
    open_next_trace(page, base_url)
    annotation = Annotation.objects.get(pk=int(re.search(r"/annotations/(\d+)/", page.url).group(1)))
    rows = store_alternatives(annotation, 2, texts)
    page.reload()
    page.wait_for_selector("#ws[data-ready='1']")
    mark_error_at_step_two(page)
    return annotation, rows


def test_markers_drawn_one_taken_with_alt_n_another_marked_wrong(
    browser, live_server, project, annotator, tmp_path, artifacts_dir, settings
):
    settings.PRESCORE_MODEL_DIR = ""
    assert project.coordinate_convention == grammar.RELATIVE_1000
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    login(page, live_server.url, annotator.username)
    annotation, rows = open_with_alternatives(page, live_server.url, project, tmp_path)
    page.wait_for_selector("#ws-alts-list li")
    # No model: the page says what to configure instead of offering the button; the stored ones are still shown.
    assert "STUDIO_PRESCORE_MODEL_DIR" in page.inner_text("#ws-alts-problem")
    assert page.locator("#ws-alts-ask-btn").count() == 0
    # Three listed, two drawn: the reply that does not parse is text only.
    assert page.locator("#ws-alts-list li").count() == 3
    assert "no action here" in page.inner_text("#ws-alts-list li[data-alt='3']")
    assert page.locator("#ws-alts-list li[data-alt='3'] [data-alt-take]").count() == 0
    drawn = page.locator("#ws-stage .ws-overlay g[data-alt]")
    assert sorted(drawn.evaluate_all("gs => gs.map(g => g.dataset.alt)")) == ["1", "2"]
    # Marker 1 at (510, 300) of relative-1000 on the 1920x1080 screenshot: in the viewBox and on the screen.
    ring = page.locator("#ws-stage .ws-overlay g[data-alt='1'] circle.ring")
    assert float(ring.get_attribute("cx")) == pytest.approx(510 * 1.92) and float(
        ring.get_attribute("cy")
    ) == pytest.approx(300 * 1.08)
    img = page.locator("#ws-stage .ws-frame img").bounding_box()
    mark = ring.bounding_box()
    assert mark["x"] + mark["width"] / 2 == pytest.approx(img["x"] + 0.51 * img["width"], abs=1.5)
    assert mark["y"] + mark["height"] / 2 == pytest.approx(img["y"] + 0.30 * img["height"], abs=1.5)
    assert page.text_content("#ws-stage .ws-overlay g[data-alt='2'] .badge-text") == "2"
    page.screenshot(path=str(artifacts_dir / "alternatives-drawn.png"))

    # Alt+2 takes alternative 2: the thought and the action fill the correction; the draft saves it.
    page.keyboard.press("Alt+2")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    assert page.input_value("#f-corrected_thought") == "Click Display."
    assert "(420,260)" in page.inner_text("[data-canonical='corrected']")
    page.wait_for_selector("#ws-alts-list li[data-alt='2'].taken")
    wait_saved(page)
    annotation.refresh_from_db()
    assert annotation.corrected_thought == "Click Display." and "(420,260)" in annotation.corrected_action
    assert AlternativeMark.objects.get(annotation=annotation, alternative=rows[1]).verdict == "taken"

    # w marks the hovered one wrong: the server holds it, the row and the marker show it.
    page.hover("#ws-alts-list li[data-alt='1']")
    page.keyboard.press("w")
    page.wait_for_selector("#ws-alts-list li[data-alt='1'].wrong")
    assert AlternativeMark.objects.get(annotation=annotation, alternative=rows[0]).verdict == "wrong"
    assert "wrong" in page.get_attribute("#ws-stage .ws-overlay g[data-alt='1']", "class")
    assert page.inner_text("[data-alt-mark='1']") == "wrong"
    page.screenshot(path=str(artifacts_dir / "alternatives-taken-and-wrong.png"))
    # The Wrong button toggles it back.
    page.click("[data-alt-wrong='1']")
    page.wait_for_selector("#ws-alts-list li[data-alt='1']:not(.wrong)")
    assert not AlternativeMark.objects.filter(annotation=annotation, alternative=rows[0]).exists()


def test_a_configured_model_offers_the_button_and_its_job_is_polled_until_its_replies_are_drawn(
    browser, live_server, project, annotator, tmp_path, settings, artifacts_dir
):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from prescoring.tiny import Reply, build_tiny_qwen2vl

    right, wrong = "click(start_box='(500,500)')", "click(start_box='(200,700)')"
    model = build_tiny_qwen2vl(
        tmp_path / "agent-r1",
        reply=Reply(thought="Thought: The target is on the screen.\nAction: ", actions=(right, wrong)),
    )
    settings.PRESCORE_MODEL_DIR = str(model)
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="ask"))
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    mark_error_at_step_two(page)
    page.wait_for_selector("#ws-alts-ask-btn")
    assert page.locator("#ws-alts-problem").count() == 0
    wait_saved(page)
    page.click("#ws-alts-ask-btn")
    # No gpu worker runs here: the job waits queued, the page says so and does not offer a second request.
    page.wait_for_selector("#ws-alts-ask-btn[disabled]")
    assert page.inner_text("#ws-alts-status").startswith("Sampling at step 2")
    job = AlternativesJob.objects.get()
    assert job.step.index == 2 and job.status == "queued"
    # What a gpu worker does with it (tests/annotation/test_alternatives_e2e.py runs it on a real one): the polling page then
    # draws the checkpoint's parsed replies at their pixels on the 1920x1080 screenshot.
    services.alternatives_job_run(job_id=job.pk)
    page.wait_for_function("() => document.querySelectorAll('#ws-alts-list li').length === 4")
    # Four replies, two actions (the checkpoint draws one of two): one marker per action, numbered with every reply
    # that chose it, none hidden under another.
    by_action: dict[str, list[int]] = {}
    for row in StepAlternative.objects.filter(step=job.step).order_by("number"):
        by_action.setdefault(json.dumps(row.actions), []).append(row.number)
    assert len(by_action) == 2
    drawn = page.locator("#ws-stage .ws-overlay g[data-alt]")
    page.wait_for_function("() => document.querySelectorAll('#ws-stage .ws-overlay g[data-alt]').length === 2")
    markers = [
        (
            g.get_attribute("data-alt"),
            round(float(g.locator("circle.ring").get_attribute("cx"))),
            round(float(g.locator("circle.ring").get_attribute("cy"))),
            g.locator(".badge-text").text_content(),
        )
        for g in drawn.all()
    ]
    assert {numbers for numbers, *_ in markers} == {" ".join(map(str, n)) for n in by_action.values()}
    assert {(x, y) for _, x, y, _ in markers} == {(960, 540), (384, 756)}
    assert {label.split()[0] for *_, label in markers} == {",".join(map(str, n)) for n in by_action.values()}
    # The replies are stored before the job is marked done: a poll can draw them while the job still runs, and
    # the next poll offers the button again.
    page.wait_for_selector("#ws-alts-ask-btn:not([disabled])")
    page.screenshot(path=str(artifacts_dir / "alternatives-from-the-speaking-model.png"))


def test_a_blind_project_shows_annotators_no_alternatives(browser, live_server, project, annotator, tmp_path):
    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    login(page, live_server.url, annotator.username)
    open_with_alternatives(page, live_server.url, project, tmp_path)
    page.wait_for_selector("#ws-correction:not([hidden])")
    page.wait_for_timeout(500)  # time for the alternatives request, which a blind project refuses annotators
    assert page.locator("#ws-alts").is_hidden()
    assert page.locator("#ws-stage .ws-overlay g[data-alt]").count() == 0
    page.keyboard.press("Alt+1")
    page.wait_for_timeout(300)
    assert page.input_value("#f-corrected_thought") == ""


def test_no_model_and_nothing_sampled_shows_no_alternatives_block(
    browser, live_server, project, annotator, tmp_path, settings
):
    # The block offered nothing but the name of a setting an operator lacks, in every correction an annotator wrote.
    settings.PRESCORE_MODEL_DIR = ""
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="no-alts"))
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    mark_error_at_step_two(page)
    page.wait_for_selector("#ws-correction:not([hidden])")
    page.wait_for_load_state("networkidle")  # the alternatives' answer is in
    assert page.locator("#ws-alts").is_hidden()
    assert "STUDIO_PRESCORE_MODEL_DIR" not in page.inner_text("#ws-correction")
