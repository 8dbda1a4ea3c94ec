"""A 5,000-step trace on the review page: the page carries the viewer's screens around τ and a hundred steps of the
list, not every step's data (it was 3.3 MB), and the review step API serves the other screens to the project's leads
only (annotation.review), refusing bad ranges with a 400 that says why."""

from __future__ import annotations

import json
import re

import pytest
from django.db import transaction
from django.test import Client

from annotation.models import Annotation, AnnotationStatus
from annotation.selectors import STEPS_MAX_SPAN, STEPS_WINDOW
from annotation.services import annotation_transition
from studio.permissions import Role
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace
from traces.services import membership_add, project_create

STEPS = 5000
PAGE_BYTES_BAR = 300 * 1024


def _submitted(project, annotator, **answer) -> Annotation:
    trace = Trace.objects.get(project=project)
    with transaction.atomic():
        annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator, **answer)
        annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
    return annotation


@pytest.fixture
def long_trace(project, tmp_path):
    import_folder(project, write_native_trace(tmp_path / "long", steps=STEPS, size=(320, 200), shared_screen=True))
    trace = Trace.objects.get(project=project)
    assert trace.step_count == STEPS
    return trace


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _viewer(text: str) -> dict:
    found = re.search(r'<script id="trace-viewer-data" type="application/json">(.*?)</script>', text, re.S)
    assert found, "the page carries no viewer data"
    return json.loads(found.group(1))


def _listed(text: str) -> list[int]:
    steps = re.search(r'<ol class="steps"[^>]*>(.*?)</ol>', text, re.S)
    assert steps
    return [int(n) for n in re.findall(r"<li[^>]*><strong>(\d+)</strong>", steps.group(1))]


def test_the_review_page_of_a_5000_step_trace_stays_small(long_trace, project, annotator, lead):
    annotation = _submitted(
        project,
        annotator,
        verdict="error",
        tau=4000,
        error_category=project.error_categories[0],
        corrected_thought="Click the next item.",
        corrected_action="click(start_box='<|box_start|>(500,500)<|box_end|>')",
        reflection_thought="That was wrong.",
        reflection_action="press_back()",
    )
    page = _client(lead).get(f"/reviews/{annotation.pk}/")
    assert page.status_code == 200
    assert len(page.content) < PAGE_BYTES_BAR, len(page.content)
    text = page.content.decode()
    # o_τ and o_τ+1 are there, with the original thought.
    assert (
        '<span data-tau-screen="corrected">step 4000</span>: original and corrected action' in text
        and "I will click item 4000." in text
    )
    viewer = _viewer(text)
    assert (viewer["step_count"], viewer["tau"], viewer["window"]) == (STEPS, 4000, STEPS_WINDOW)
    assert viewer["steps_url"] == f"/api/reviews/{annotation.pk}/steps/"
    carried = [screen["index"] for screen in viewer["screens"]]
    assert carried[0] <= 4000 - STEPS_WINDOW // 2 and carried[-1] >= 4000 + STEPS_WINDOW // 2
    assert carried == list(range(carried[0], carried[-1] + 1)) and len(carried) <= 2 * STEPS_WINDOW
    assert [s["index"] for s in viewer["screens"] if s["is_tau"]] == [4000]
    # The list: the hundred steps holding τ, the trace page for the others.
    assert _listed(text) == list(range(3901, 4001))
    assert "Steps 3901–4000 of 5000" in text
    assert f'href="/traces/{long_trace.pk}/?step=3900"' in text and f'href="/traces/{long_trace.pk}/?step=4001"' in text


def test_a_no_error_review_of_a_5000_step_trace_opens_on_the_first_screens(long_trace, project, annotator, lead):
    annotation = _submitted(project, annotator, verdict="no_error")
    page = _client(lead).get(f"/reviews/{annotation.pk}/")
    assert page.status_code == 200 and len(page.content) < PAGE_BYTES_BAR, len(page.content)
    text = page.content.decode()
    carried = [screen["index"] for screen in _viewer(text)["screens"]]
    assert carried == list(range(1, len(carried) + 1)) and STEPS_WINDOW <= len(carried) <= 2 * STEPS_WINDOW
    assert _listed(text) == list(range(1, 101)) and "Steps 1–100 of 5000" in text


def test_a_short_trace_review_page_carries_every_screen(project, annotator, lead, tmp_path):
    import_folder(project, write_native_trace(tmp_path / "short", steps=4))
    annotation = _submitted(project, annotator, verdict="no_error")
    text = _client(lead).get(f"/reviews/{annotation.pk}/").content.decode()
    screens = _viewer(text)["screens"]
    assert [s["title"] for s in screens] == ["step 1", "step 2", "step 3", "step 4", "final screen"]
    assert _listed(text) == [1, 2, 3, 4] and "All 4 steps" in text and "?step=" not in text


BAD_RANGES = [
    ({"first": 0, "last": 10}, "1 ≤ first ≤ last ≤ 5000"),
    ({"first": 4990, "last": 5001}, "1 ≤ first ≤ last ≤ 5000"),
    ({"first": 1, "last": STEPS_MAX_SPAN + 1}, f"at most {STEPS_MAX_SPAN} steps"),
    ({"first": "abc", "last": 3}, "whole numbers"),
]


def test_the_review_step_api_serves_screens_to_the_projects_leads_only(long_trace, project, annotator, lead, make_user):
    annotation = _submitted(project, annotator, verdict="error", tau=4000, error_category=project.error_categories[0])
    url = f"/api/reviews/{annotation.pk}/steps/"
    client = _client(lead)
    body = client.get(url, {"first": 3990, "last": 4010}).json()
    assert (body["first"], body["last"], body["step_count"]) == (3990, 4010, STEPS)
    assert [s["index"] for s in body["screens"]] == list(range(3990, 4011))
    screen = body["screens"][10]
    assert screen["title"] == "step 4000" and screen["is_tau"] and screen["thought"] == "I will click item 4000."
    assert screen["image"] and screen["markers"][0]["kind"] == "original"
    # The final screen comes with the last step.
    last = client.get(url, {"first": STEPS, "last": STEPS}).json()["screens"]
    assert [s["title"] for s in last] == ["step 5000", "final screen"]
    for query, words in BAD_RANGES:
        answer = client.get(url, query)
        assert answer.status_code == 400 and words in answer.json()["detail"], (query, answer.json())

    url = f"{url}?first=1&last=5"
    other_lead = make_user("other-lead", Role.LEAD)
    project_create(name="Another project", members=[other_lead])
    colleague = make_user("colleague", Role.ANNOTATOR)
    membership_add(project=project, user=colleague)
    # annotation.review is the project's leads' (studio.permissions.RULES): the annotator who wrote the answer, another
    # annotator of the project and another project's lead are refused.
    assert _client(other_lead).get(url).status_code == 404
    assert _client(annotator).get(url).status_code in (403, 404)
    assert _client(colleague).get(url).status_code in (403, 404)
    assert Client().get(url).status_code in (401, 403)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("role_groups")
def test_the_review_viewer_shows_step_4000_of_a_5000_step_trace(
    browser, live_server, long_trace, project, annotator, lead, artifacts_dir
):
    annotation = _submitted(project, annotator, verdict="no_error")
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{annotation.pk}/")
    assert page.locator("#viewer-strip .viewer-thumb").count() == STEPS + 1  # every step and the final screen
    assert page.inner_text("#viewer-title") == "step 1"
    # Step 4,000 is not on the page: its window is read when the lead goes to it on the strip.
    page.locator("#viewer-strip .viewer-thumb").nth(3999).click()
    page.wait_for_function("() => document.getElementById('viewer-title').textContent === 'step 4000'")
    page.wait_for_function("() => document.getElementById('viewer-image').naturalWidth > 0")
    assert page.inner_text("#viewer-thought") == "I will click item 4000."
    assert "click" in page.inner_text("#viewer-action")
    assert page.locator("#viewer-frame .marker.original").count() == 1
    page.locator("#trace-viewer").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "review-long-trace-step-4000.png"))
    # j and k step on from there without waiting (half a window stays loaded on either side).
    page.keyboard.press("j")
    assert page.inner_text("#viewer-title") == "step 4001"
    assert page.inner_text("#viewer-thought") == "I will click item 4001."
    assert errors == []
