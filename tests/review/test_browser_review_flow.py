"""A lead's review sitting in Chromium: decide with the keyboard and land on the next undecided annotation; the
history folds an annotator's autosaves into one row per sitting, with human field names."""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.review.selectors import history_rows, trace_history
from annotation.services import annotation_record_edit, annotation_transition
from tests.conftest import login
from tests.fixtures_export import REPLIES, make_trace

pytestmark = pytest.mark.browser


def submitted(project, annotator, external_id: str, *, autosaves: int = 3) -> Annotation:
    # Its own instruction: a trace is known by its content, and ids of one length would share their screens.
    trace = make_trace(
        project,
        replies=REPLIES,
        external_id=external_id,
        instruction=f"Open the display settings ({external_id})",
        image_seed=len(external_id),
    )
    with transaction.atomic():
        annotation = Annotation.objects.create(
            trace=trace,
            project=project,
            annotator=annotator,
            verdict=Verdict.ERROR,
            tau=3,
            error_category=project.error_categories[0],
            corrected_thought="Open the right item.",
            corrected_action="click(start_box='<|box_start|>(400,300)<|box_end|>')",
            reflection_thought="Wrong item; go back.",
            reflection_action="hotkey(key='esc')",
        )
        for n in range(autosaves):
            annotation_record_edit(
                annotation=annotation,
                actor=annotator,
                changes={"corrected_thought": ["", f"draft {n}"], "tau": [None, 3]},
            )
        annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
    return annotation


def test_keyboard_decisions_go_on_to_the_next_undecided(browser, live_server, project, annotator, lead, artifacts_dir):
    first, second = submitted(project, annotator, "rv-1"), submitted(project, annotator, "rv-22")

    rows = history_rows(trace_history(first.trace))
    assert [r.kind for r in rows] == ["edits", "transition"]
    assert rows[0].saves == 3 and rows[0].fields == ["first error (τ)", "corrected thought"]  # the form's order

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{first.pk}/")
    history = page.locator("#history tbody tr")
    assert history.count() == 2
    assert "edited first error (τ), corrected thought (3 saves)" in history.nth(0).inner_text()
    page.screenshot(path=str(artifacts_dir / "review-keyboard.png"), full_page=True)

    page.keyboard.press("a")  # accept → the next undecided annotation, not the list
    page.wait_for_url(f"{live_server.url}/reviews/{second.pk}/")
    assert page.inner_text(".notice") == f"Annotation {first.pk} of trace {first.trace.external_id}: accepted."
    first.refresh_from_db()
    assert first.status == AnnotationStatus.ACCEPTED

    page.keyboard.press("r")  # reject: the comment takes the focus, Ctrl+Enter sends
    assert page.evaluate("document.activeElement.id") == "review-comment"
    page.keyboard.type("The corrected click misses the button.")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"{live_server.url}/reviews/")  # nothing left: back to the queue
    second.refresh_from_db()
    assert second.status == AnnotationStatus.REJECTED
    assert second.review_comment == "The corrected click misses the button."
    # Said as what happened to it ("reject done" before).
    sent_back = f"Annotation {second.pk} of trace {second.trace.external_id}: sent back to {annotator.username} with your comment."
    assert page.inner_text(".notice") == sent_back


def test_arrow_right_opens_the_next_undecided(browser, live_server, project, annotator, lead):
    first, second = (
        submitted(project, annotator, "nx-1", autosaves=0),
        submitted(project, annotator, "nx-2", autosaves=0),
    )
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{second.pk}/")
    page.keyboard.press("ArrowRight")
    page.wait_for_url(f"{live_server.url}/reviews/{first.pk}/")
    first.refresh_from_db()
    assert first.status == AnnotationStatus.SUBMITTED  # moving on decides nothing


def test_closing_the_workspace_frees_the_trace(browser, live_server, project, annotator, tmp_path):
    """The lead's "open now" must not outlive the tab: closing it sends a beacon that closes the holder's lease."""
    from annotation.models import Lease
    from tests.annotation.test_browser_workspace import open_next_trace
    from tests.fixtures_annotation import import_folder, write_native_trace

    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="close-me"))
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    lease = Lease.objects.get(user=annotator, released_at__isnull=True)
    page.close(run_before_unload=False)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Lease.objects.get(pk=lease.pk).released_at is None:
        time.sleep(0.2)
    lease.refresh_from_db()
    assert lease.released_at is not None and lease.release_reason == "closed"
    context.close()
