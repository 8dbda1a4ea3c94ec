"""The workspace in a real Chromium: the real dart-gui trace, keyboard, click-to-place, reload, submit, conflict."""

from __future__ import annotations

import re

import pytest

from annotation.models import Annotation, AnnotationStatus, Lease
from studio.permissions import Role
from tests.conftest import login
from tests.fixtures_annotation import import_dart_gui_example, import_folder, write_native_trace
from traces.services import membership_add

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


@pytest.fixture
def dart_trace(project, realtraces):
    return import_dart_gui_example(project, realtraces)


def open_next_trace(page, base_url):
    page.goto(f"{base_url}/queue/")
    page.click("[data-next-trace]")
    page.wait_for_url(re.compile(r"/annotations/\d+/$"))
    page.wait_for_selector("#ws[data-ready='1']")


def click_on_screenshot(page, fx: float, fy: float):
    box = page.locator(".ws-frame.placing").bounding_box()
    page.mouse.click(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)


def wait_saved(page):
    page.wait_for_selector("#ws-save[data-state='saved']", timeout=15000)


def test_annotate_real_trace_end_to_end(browser, live_server, project, dart_trace, annotator, make_user, artifacts_dir):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    page_errors = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    failed_requests = []  # e.g. a missing icon or prefetched screenshot: the page asked for it, the server had none
    page.on(
        "response",
        lambda response: response.status >= 400 and failed_requests.append(f"{response.status} {response.url}"),
    )
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    assert page.inner_text("#ws-instruction") == dart_trace.instruction.strip()
    page.keyboard.press("j")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("k")
    page.keyboard.press("j")
    assert page.inner_text("#ws-step-label") == f"Step 3 of {dart_trace.step_count}"
    assert page.locator(".ws-thumb.current").get_attribute("data-step") == "3"
    page.keyboard.press("e")
    assert page.locator(".ws-thumb.tau").get_attribute("data-step") == "3"
    assert page.locator(".ws-thumb.after-tau").count() >= dart_trace.step_count - 3
    page.select_option("#f-error_category", "wrong element / grounding")
    page.fill("#f-corrected_thought", "I should open the Extensions view first.")
    page.select_option("[data-slot-type='corrected']", "click")
    click_on_screenshot(page, 0.25, 0.5)
    try:
        page.wait_for_selector("[data-errors='corrected'] li.ok", timeout=8000)
    except Exception:
        raise AssertionError(
            page.inner_text("#ws-correction")
            + " | "
            + page.inner_text("#ws-banner")
            + " | "
            + page.inner_text("#ws-save")
        ) from None
    canonical = page.inner_text("[data-canonical='corrected']")
    x, y = map(int, re.search(r"\((\d+),(\d+)\)", canonical).groups())
    assert abs(x - 250) <= 1 and abs(y - 500) <= 1
    wait_saved(page)
    page.screenshot(path=str(artifacts_dir / "workspace-desktop-correction.png"))

    page.reload()  # mid-way: the draft comes back from the server
    page.wait_for_selector("#ws[data-ready='1']")
    assert page.input_value("#f-corrected_thought") == "I should open the Extensions view first."
    assert page.locator(".ws-thumb.current").get_attribute("data-step") == "3"
    assert page.inner_text("[data-canonical='corrected']") == canonical

    page.keyboard.press("j")  # o_{τ+1}
    page.wait_for_selector("#ws-reflection:not([hidden])")
    assert page.inner_text(".ws-tag.refl") == "o₄ · post-reflection"  # as the screen's caption names it
    page.fill("#f-reflection_thought", "Clicking there did nothing useful; I will open the Extensions view instead.")
    page.select_option("[data-slot-type='reflection']", "click")
    click_on_screenshot(page, 0.02, 0.3)
    page.wait_for_selector("[data-errors='reflection'] li.ok")
    reflection = page.inner_text("[data-canonical='reflection']")
    page.keyboard.press("o")
    page.keyboard.press("o")
    page.keyboard.press("c")
    page.screenshot(path=str(artifacts_dir / "workspace-desktop-reflection-compare.png"))
    page.keyboard.press("c")
    page.keyboard.press("?")
    assert page.is_visible("#ws-help")
    # the help's keys are the key table's (keyboard.js KEYS): the keys this test pressed are the ones it shows
    assert page.inner_text("#ws-help tr[data-command='next'] td:first-child").split() == ["→", "j"]
    assert page.inner_text("#ws-help tr[data-command='compare'] td:first-child") == "c"
    assert page.locator("#ws-help td.ws-keys-of:empty").count() == 0
    assert "{" not in page.inner_text("#ws-help")  # no template syntax shown as text
    page.screenshot(path=str(artifacts_dir / "workspace-help.png"))
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#ws-next:not([hidden])")

    annotation = Annotation.objects.get(trace=dart_trace, annotator=annotator)
    assert annotation.status == AnnotationStatus.SUBMITTED
    assert (annotation.verdict, annotation.tau, annotation.error_category) == ("error", 3, "wrong element / grounding")
    assert annotation.corrected_thought == "I should open the Extensions view first."
    assert annotation.corrected_action == canonical
    assert annotation.reflection_thought.startswith("Clicking there did nothing useful")
    assert annotation.reflection_action == reflection
    assert Lease.objects.get(trace=dart_trace, user=annotator).release_reason == "submitted"
    assert not page_errors, page_errors
    assert not failed_requests, failed_requests
    context.close()


def test_leased_trace_is_not_handed_to_a_second_annotator(
    browser, live_server, project, dart_trace, annotator, make_user
):
    second = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=second)
    first_ctx, second_ctx = browser.new_context(), browser.new_context()
    first, other = first_ctx.new_page(), second_ctx.new_page()
    login(first, live_server.url, "ann")
    open_next_trace(first, live_server.url)
    login(other, live_server.url, "ann2")
    other.goto(f"{live_server.url}/queue/")
    other.click("[data-next-trace]")
    other.wait_for_url(re.compile(r"/queue/$"))
    assert "No trace of Test project is open to you" in other.inner_text("main")
    assert not Annotation.objects.filter(annotator=second).exists()
    first_ctx.close(), second_ctx.close()


def test_second_tab_gets_the_conflict_and_offline_saves_retry(browser, live_server, project, dart_trace, annotator):
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    one, two = context.new_page(), context.new_page()
    login(one, live_server.url, "ann")
    open_next_trace(one, live_server.url)
    two.goto(one.url)
    two.wait_for_selector("#ws[data-ready='1']")
    one.fill("#f-note", "first tab")
    wait_saved(one)
    two.fill("#f-note", "second tab")
    two.wait_for_selector("#ws-banner.conflict")
    assert "changed elsewhere" in two.inner_text("#ws-banner")
    assert Annotation.objects.get(annotator=annotator).note == "first tab"  # never silently overwritten
    # a network drop: the save waits and retries, then lands
    context.set_offline(True)
    one.fill("#f-note", "written offline")
    one.wait_for_selector("#ws-save[data-state='offline']", timeout=10000)
    assert "retrying" in one.inner_text("#ws-save")
    context.set_offline(False)
    wait_saved(one)
    assert Annotation.objects.get(annotator=annotator).note == "written offline"
    context.close()


def test_script_payloads_render_as_text_and_phone_layout(
    browser, live_server, project, annotator, tmp_path, artifacts_dir
):
    payload = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
    project.platform = "mobile"
    project.save()
    folder = write_native_trace(
        tmp_path / "phone",
        steps=4,
        size=(1080, 2400),
        instruction="Open settings " + payload,
        thoughts={1: "Tap it " + payload},
        platform="mobile",
    )
    import_folder(project, folder)
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    assert payload in page.inner_text("#ws-instruction")
    assert payload in page.inner_text("#ws-thought")
    assert page.evaluate("window.__pwned") is None and not dialogs
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.select_option("[data-slot-type='corrected']", "drag")  # the mobile prompt's swipe
    click_on_screenshot(page, 0.5, 0.7)
    click_on_screenshot(page, 0.5, 0.3)
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    assert page.inner_text("[data-canonical='corrected']").startswith("drag(start_box=")
    page.screenshot(path=str(artifacts_dir / "workspace-phone.png"))
    context.close()


def test_step_switching_is_measured_and_returns_home(browser, live_server, project, dart_trace, annotator):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    for _ in range(3):
        for _ in range(dart_trace.step_count):
            page.keyboard.press("j")
        for _ in range(dart_trace.step_count):
            page.keyboard.press("k")
    # Every switch is measured (the p95 itself is a benchmark, bench/annotate.py, not a test).
    durations = page.evaluate("performance.getEntriesByName('ws-step-switch').map(e => e.duration)")
    assert len(durations) >= 6 * (dart_trace.step_count - 1)
    assert page.locator(".ws-thumb.current").get_attribute("data-step") == "1"
    context.close()


def test_rule_suggestions_show_in_the_workspace_unless_blind(
    browser, live_server, project, dart_trace, annotator, artifacts_dir
):
    """Pre-scoring hints appear along the steps (strip, suggested first error, flags); a blind project hides them."""
    from prescoring.services import prescore_job_create, prescore_job_run

    job = prescore_job_create(project=project, user=None, scorer="rules", enqueue=False)
    assert prescore_job_run(job_id=job.pk).status == "succeeded"
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    page.wait_for_selector("#prescore:not([hidden]) #suspicion-strip .cell")
    assert page.locator("#suspicion-strip .cell").count() == dart_trace.step_count
    assert page.locator("#suspicion-strip .cell.first-error").count() == 1
    page.locator("#suspicion-strip .cell.first-error").click()  # jumps the workspace to the suggested step
    suggested = page.locator("#suspicion-strip .cell").evaluate_all(
        "cells => cells.findIndex(c => c.classList.contains('first-error')) + 1"
    )
    assert page.locator(".ws-thumb.current").get_attribute("data-step") == str(suggested)
    assert page.locator("#prescore-flags .prescore-flag").count() >= 1
    # The ▼ over the suggested step sits in room of its own, under the "Suggestions" head line (it overlapped it).
    marker_top, head_bottom = page.evaluate(
        """(() => {
          const cell = document.querySelector('#suspicion-strip .cell.first-error');
          const marker = getComputedStyle(cell, '::after');
          const head = document.querySelector('#prescore .prescore-head').getBoundingClientRect();
          return [cell.getBoundingClientRect().top + parseFloat(marker.top), head.bottom];
        })()"""
    )
    assert marker_top >= head_bottom, (marker_top, head_bottom)
    # Flags read in the server's words (prescoring.rules.FLAG_LABELS): never a code ("wait run", "no change").
    from prescoring.rules import FLAG_LABELS

    shown = page.locator("#prescore-flags .prescore-flag:not(.first-error)").all_inner_texts()
    assert shown and all(text in FLAG_LABELS.values() for text in shown), shown
    page.wait_for_load_state("networkidle")
    for _ in range(50):  # (wait_for_function would need eval, which the page's CSP forbids)
        if page.evaluate("[...document.images].every(i => i.complete)"):
            break
        page.wait_for_timeout(100)
    page.screenshot(path=str(artifacts_dir / "workspace-prescore.png"))
    page.locator("#prescore").screenshot(path=str(artifacts_dir / "workspace-prescore-strip.png"))
    context.close()

    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, "ann")
    # The strip starts hidden, so "hidden" proves nothing until the page has had the server's answer.
    with page.expect_response(lambda r: "/suggestions/" in r.url) as answer:
        open_next_trace(page, live_server.url)
    assert answer.value.json()["hidden"] is True
    page.wait_for_selector("#ws-stage .ws-overlay", state="attached")
    assert page.locator("#prescore").is_hidden()
    assert page.locator("#suspicion-strip .cell").count() == 0
    context.close()
