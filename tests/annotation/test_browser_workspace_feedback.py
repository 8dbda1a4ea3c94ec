"""The workspace in Chromium: feedback where the eye is. Submit problems appear at the top and the
fields concerned are highlighted; a returned annotation shows the lead's comment; Skip asks first and the queue
confirms it; after Submit the lease heartbeat stops (no 409s)."""

from __future__ import annotations

import re

import pytest

from annotation.models import Annotation, Lease
from annotation.review import services as review
from annotation.services import annotation_save_draft, annotation_submit, lease_next_trace
from tests.annotation.test_browser_workspace import open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def two_traces(project, tmp_path, role_groups):
    # Two tasks on the same screens: a trace is known by its content, so the same task twice would be one trace.
    for n in range(2):
        folder = write_native_trace(
            tmp_path / f"t{n}", steps=3, external_id=f"feedback-{n}", instruction=f"Open the settings ({n + 1})"
        )
        import_folder(project, folder)


def wait_until(page, predicate, what: str, tries: int = 50):
    for _ in range(tries):  # (wait_for_function needs eval, which the page's CSP forbids)
        if predicate():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"timed out waiting for {what}")


def test_submit_problems_show_at_the_top_with_the_fields_highlighted_and_the_heartbeat_stops_after_submit(
    browser, live_server, project, two_traces, annotator, artifacts_dir
):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    page.clock.install()
    beats, refused = [], []
    page.on("request", lambda r: beats.append(r.url) if "/heartbeat/" in r.url else None)
    page.on("response", lambda r: refused.append(f"{r.status} {r.url}") if r.status == 409 else None)
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)

    page.clock.fast_forward(31_000)
    wait_until(page, lambda: beats, "a heartbeat while the trace is open")

    page.keyboard.press("e")  # first error at step 1, nothing else filled in
    wait_saved(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#ws-submit-errors:not([hidden])")
    box = page.locator("#ws-submit-errors").bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 1080, box  # on screen, above the fold
    problems = page.inner_text("#ws-submit-errors")
    assert "Choose an error category" in problems and "corrected thought" in problems
    assert page.locator("#f-error_category.ws-invalid").count() == 1
    assert page.locator("#f-corrected_thought.ws-invalid").count() == 1
    assert page.locator(".ws-action-editor[data-slot='corrected'].ws-invalid").count() == 1
    page.screenshot(path=str(artifacts_dir / "workspace-submit-problems.png"))
    page.fill("#f-corrected_thought", "Open the settings first.")
    assert page.locator("#f-corrected_thought.ws-invalid").count() == 0  # typing clears its mark
    assert page.locator("#f-error_category.ws-invalid").count() == 1

    page.keyboard.press("Escape")
    page.keyboard.press("n")
    wait_saved(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#ws-next:not([hidden])")
    assert page.locator("#ws-submit-errors").is_hidden() and page.locator(".ws-invalid").count() == 0
    beats.clear()
    page.clock.fast_forward(120_000)
    page.wait_for_timeout(300)
    assert beats == [] and refused == [], (beats, refused)
    context.close()


def test_a_returned_annotation_shows_the_leads_comment_at_the_top(
    browser, live_server, project, two_traces, annotator, lead, artifacts_dir
):
    annotation, _ = lease_next_trace(user=annotator, project=project)
    saved = annotation_save_draft(
        annotation_id=annotation.pk, user=annotator, base_version=annotation.version, fields={"verdict": "no_error"}
    )
    annotation_submit(annotation_id=annotation.pk, user=annotator, base_version=saved.version)
    review.review_reject(
        annotation_id=annotation.pk, actor=lead, comment="Step 2 clicks the wrong menu: mark it as the first error."
    )
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    # The queue counts in words (one trace is left open: not "1 open traces") and names the returned annotation's
    # status as the workspace will: the server's name, not a word of the queue's own.
    page.goto(f"{live_server.url}/queue/")
    assert page.inner_text("[data-open-count]") == "1 open trace"
    assert page.inner_text(".queue-list .pill") == "Rejected"
    # Both traces have the same task: the item names its trace, so the two can be told apart.
    assert page.inner_text(".queue-list [data-trace-id]") == annotation.trace.external_id
    page.goto(f"{live_server.url}/annotations/{annotation.pk}/")
    page.wait_for_selector("#ws[data-ready='1']")
    assert page.inner_text("#ws-status-pill") == "Rejected"
    returned = page.locator("#ws-returned")
    assert "Step 2 clicks the wrong menu" in returned.inner_text() and lead.username in returned.inner_text()
    box = returned.bounding_box()
    assert box["y"] + box["height"] <= 768, box
    page.screenshot(path=str(artifacts_dir / "workspace-returned-comment.png"))
    context.close()


def test_skip_asks_first_and_the_queue_confirms_it(browser, live_server, project, two_traces, annotator, artifacts_dir):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.click("#ws-skip")
    question = page.locator("#ws-banner")
    assert "Skip this trace?" in question.inner_text()
    page.click("#ws-banner >> text=Keep working")
    assert page.locator("#ws-banner").is_hidden()
    assert not Lease.objects.filter(user=annotator, release_reason="skipped").exists()
    page.click("#ws-skip")
    page.click("#ws-banner >> text=Skip it")
    page.wait_for_url(re.compile(r"/queue/\?skipped=\d+$"))
    skipped = Annotation.objects.get(annotator=annotator)
    assert skipped.trace.external_id in page.inner_text("#skipped-notice")
    assert Lease.objects.filter(user=annotator, trace=skipped.trace, release_reason="skipped").exists()
    page.screenshot(path=str(artifacts_dir / "queue-skipped.png"))
    context.close()


def test_after_submit_the_header_says_submitted_once_and_offers_the_next_trace(
    browser, live_server, project, two_traces, annotator, artifacts_dir
):
    context = browser.new_context(viewport={"width": 1600, "height": 900})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    first = page.url
    page.keyboard.press("n")
    wait_saved(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#ws-next:not([hidden])")
    header = page.locator(".ws-head .ws-meta")
    assert header.inner_text().count("Submitted") == 1, header.inner_text()
    assert page.locator("#ws-status-pill").inner_text() == "Submitted"
    # Nothing left to skip or submit: the buttons go, and the banner does not repeat the header.
    assert page.locator("#ws-skip").is_hidden() and page.locator("#ws-submit").is_hidden()
    assert page.locator("#ws-save").is_hidden() and page.locator("#ws-banner").is_hidden()
    page.screenshot(path=str(artifacts_dir / "workspace-after-submit.png"))
    page.keyboard.press("Enter")  # the next trace has the focus
    page.wait_for_url(lambda url: url != first and re.search(r"/annotations/\d+/$", url) is not None)
    page.wait_for_selector("#ws[data-ready='1']")
    assert page.locator("#ws-submit").is_visible() and page.locator("#ws-next").is_hidden()
    context.close()


def test_a_submitted_correction_offers_no_placing_or_drawing(browser, live_server, project, two_traces, annotator):
    annotation, _ = lease_next_trace(user=annotator, project=project)
    fields = {
        "verdict": "error",
        "tau": 1,
        "error_category": project.error_categories[0],
        "corrected_thought": "Open the settings first.",
        "editor_state": {"corrected": {"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}},
        "no_reflection_reason": "The next screen does not show the result.",
    }
    saved = annotation_save_draft(
        annotation_id=annotation.pk, user=annotator, base_version=annotation.version, fields=fields
    )
    annotation_submit(annotation_id=annotation.pk, user=annotator, base_version=saved.version)
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}/annotations/{annotation.pk}/")
    page.wait_for_selector("#ws[data-ready='1']")
    page.wait_for_selector("[data-canonical='corrected']")
    assert page.inner_text("[data-point='corrected-start_box']") == "(500, 500)"
    # Read only: the element box row (no box was drawn) does not offer a drag that would do nothing.
    assert page.locator("[data-box='corrected']").count() == 0
    assert "Shift+drag" not in page.inner_text("#ws-correction")
    context.close()


def test_a_session_that_ended_asks_to_log_in_and_the_work_is_saved_after(
    browser, live_server, project, two_traces, annotator
):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    context.clear_cookies()  # the session ends (logged out elsewhere, or expired)
    page.keyboard.press("u")
    page.keyboard.type("Every screenshot is blank.")
    page.wait_for_selector("#ws-login:not([hidden])")
    assert page.inner_text("#ws-save") == "Not saved — log in again"
    # The dialog has the focus: a keyboard user reaches its buttons at once, not after the whole form.
    assert page.evaluate("document.getElementById('ws-login').contains(document.activeElement)")
    other = context.new_page()
    login(other, live_server.url, annotator.username)
    other.close()
    page.click("#ws-login-retry")
    wait_saved(page)
    assert page.is_hidden("#ws-login")
    assert Annotation.objects.get(annotator=annotator).unusable_reason == "Every screenshot is blank."
    context.close()


def test_next_trace_from_the_workspace_keeps_most_doubtful_first(browser, live_server, project, annotator, tmp_path):
    from prescoring.services import prescore_job_create, prescore_job_run
    from tests.factories import native_trace_folder

    calm = ["click(start_box='<|box_start|>(100,200)<|box_end|>')", "finished(content='done')"]
    looping = ["wait()", "wait()", "wait()", "wait()"]
    native_trace_folder(tmp_path / "a", external_id="calm", steps=2, actions=calm)
    native_trace_folder(tmp_path / "b", external_id="looping-1", steps=4, actions=looping)
    native_trace_folder(tmp_path / "c", external_id="looping-2", steps=4, actions=looping)
    for name in ("a", "b", "c"):
        import_folder(project, tmp_path / name)
    job = prescore_job_create(project=project, user=None, scorer="rules", enqueue=False)
    assert prescore_job_run(job_id=job.pk).status == "succeeded"
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}/queue/")
    page.check("[data-doubtful-first]")
    page.click("[data-next-trace]")
    page.wait_for_selector("#ws[data-ready='1']")
    assert "looping-" in page.inner_text(".ws-chip")
    page.keyboard.press("n")
    wait_saved(page)
    page.keyboard.press("Control+Enter")
    page.click("#ws-next button")  # the workspace's own Next trace: still the most doubtful, not the next by id
    page.wait_for_selector("#ws[data-ready='1']")
    assert "looping-" in page.inner_text(".ws-chip"), page.inner_text(".ws-chip")
    page.goto(f"{live_server.url}/queue/")  # the queue offers the choice again, as last made
    assert page.is_checked("[data-doubtful-first]")
    page.uncheck("[data-doubtful-first]")
    page.click("[data-next-trace]")
    page.wait_for_selector("#ws[data-ready='1']")
    page.goto(f"{live_server.url}/queue/")
    assert not page.is_checked("[data-doubtful-first]")
    context.close()
