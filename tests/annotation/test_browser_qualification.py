"""The qualification in Chromium: a new member meets the qualification instead of a queue, answers its gold traces,
sees after each the reference beside their answer and what differed, fails and gets a page that says where they
stand and what to do; a lead sees the attempt on the project's quality page and allows another one."""

from __future__ import annotations

import re

import pytest
from django.db import transaction

from annotation.models import Annotation, AnnotationKind, GoldScore, QualificationAttempt, QualificationStatus
from annotation.quality.services import gold_mark, quality_settings_save
from tests.annotation.test_browser_workspace import wait_saved
from tests.conftest import login
from tests.fixtures_export import REPLIES, accepted_error, make_trace
from tests.fixtures_quality import error_fields, hand_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

SIZES = {"desktop": (1920, 1080), "laptop": (1366, 768)}


def gold_traces(project, lead, count: int) -> list:
    """``count`` gold traces, each the lead's accepted answer (a first error at step 3, a click) as its reference."""
    golds = []
    for n in range(count):
        trace = make_trace(
            project,
            replies=REPLIES,
            external_id=f"task-q{n}",
            instruction=f"Open the display settings (task {n})",
            image_seed=10 + n,
            size=(1280, 800),
        )
        reference = accepted_error(
            trace, annotator=lead, reviewer=lead, error_category=project.error_categories[0], tau=3
        )
        with transaction.atomic():
            golds.append(gold_mark(annotation=reference, user=lead)[0])
    return golds


@pytest.fixture
def qualifying_project(project, lead):
    gold_traces(project, lead, 4)
    quality_settings_save(project=project, user=lead, fields={"qualification_size": 2, "qualification_pass_mark": 0.5})
    return project


def answer_no_error_and_submit(page):
    """In the workspace of a qualification trace: "no error", saved, submitted; the page goes on to the feedback."""
    page.wait_for_selector("#ws[data-ready='1']")
    assert page.locator("#ws-qualification").is_visible()  # the annotator knows they are qualifying
    page.keyboard.press("n")
    wait_saved(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"/annotations/\d+/feedback/$"))


@pytest.mark.parametrize("screen", ["desktop", "laptop"])
def test_qualification_feedback_failure_and_another_attempt(
    browser, live_server, qualifying_project, annotator, lead, artifacts_dir, screen
):
    project = qualifying_project
    width, height = SIZES[screen]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)

    # The queue says what comes first instead of offering traces.
    page.goto(f"{live_server.url}/queue/")
    note = page.locator("[data-standing='not_started']")
    assert "Before the real queue opens, answer 2 qualification traces" in note.inner_text()
    assert page.inner_text(f"[data-next-trace='{project.pk}']") == "Start the qualification →"
    page.screenshot(path=str(artifacts_dir / f"qualification-queue-{screen}.png"), full_page=True)
    page.click(f"[data-next-trace='{project.pk}']")
    page.wait_for_url(re.compile(r"/annotations/\d+/$"))
    assert "0 of 2 answered" in page.inner_text("#ws-qualification")
    # A qualification trace is answered, never skipped: no Skip, and the chip says why.
    page.wait_for_selector("#ws[data-ready='1']")
    assert page.locator("#ws-skip").count() == 0 and page.locator("#ws-submit").is_visible()
    assert "cannot be skipped" in page.get_attribute("#ws-qualification", "title")
    page.screenshot(path=str(artifacts_dir / f"qualification-workspace-{screen}.png"))
    answer_no_error_and_submit(page)

    # The feedback: the result in words, the reference beside the answer part by part, what differed.
    result = page.inner_text("#feedback-result")
    assert (
        "Not right: 7 of the 7 parts compared differ from the reference." in result
        and "the reference: First error at step 3" in result
    )
    assert "Attempt 1: 1 of 2 answered, 0 right" in page.inner_text("#feedback-progress")
    verdict = page.locator("#feedback-parts tr[data-part='verdict']")
    assert verdict.get_attribute("data-right") == "0"
    assert "No error" in verdict.inner_text() and "First error at step 3" in verdict.inner_text()
    assert "differs" in verdict.inner_text()  # in words, not by colour alone
    assert page.locator("#feedback-parts tr[data-part='tau_exact']").get_attribute("data-right") == "0"
    assert "You said no error; the reference says a first error at step 3." in page.inner_text(
        "#feedback-differences [data-part='verdict']"
    )
    page.screenshot(path=str(artifacts_dir / f"qualification-feedback-{screen}.png"), full_page=True)

    page.click("#feedback-next-button")  # the next qualification trace
    page.wait_for_url(re.compile(r"/annotations/\d+/$"))
    assert "1 of 2 answered" in page.inner_text("#ws-qualification")
    page.wait_for_selector("#ws[data-ready='1']")
    page.screenshot(path=str(artifacts_dir / f"qualification-workspace-{screen}.png"))
    # This one is a first error at the reference's step, its click far from the reference's (handed in as the
    # workspace sends it): the feedback draws both points on the step.
    second = Annotation.objects.get(pk=int(page.url.rstrip("/").split("/")[-1]))
    far = {"type": "click", "args": {"start_box": [900, 700]}, "style": "box"}
    hand_in(second, annotator, **error_fields(3, category=project.error_categories[0], corrected=far))
    page.goto(f"{live_server.url}/annotations/{second.pk}/feedback/")
    assert "Not right: 1 of the 7 parts compared differs from the reference." in page.inner_text("#feedback-result")
    assert page.locator("#feedback-parts tr[data-part='point']").get_attribute("data-right") == "0"
    assert page.locator("#feedback-parts tr[data-part='tau_exact']").get_attribute("data-right") == "1"
    assert page.locator("#feedback-screen svg .your-point").count() == 1
    assert page.locator("#feedback-screen svg .reference-point").count() == 1
    assert "your point" in page.inner_text("#feedback-screen-legend")
    page.screenshot(path=str(artifacts_dir / f"qualification-feedback-point-{screen}.png"), full_page=True)
    assert "You did not pass the qualification" in page.inner_text("#feedback-next")
    page.click("#feedback-next-button")  # "See your result"
    page.wait_for_url(f"{live_server.url}/projects/{project.pk}/qualification/")

    # The clear page: where they stand, what to do, the feedback on each answer.
    standing = page.locator("#qualification-standing")
    assert standing.get_attribute("data-status") == "failed"
    assert "Attempt 1: 0 of 2 answers right; 50 % right was needed." in page.inner_text("#qualification-result")
    assert "until a lead allows another attempt" in standing.inner_text()
    assert f"ask a lead of the project ({lead.username})" in standing.inner_text()  # whom to ask
    assert page.locator("#qualification-go").count() == 0  # nothing to start: the queue is closed
    assert page.locator(".qualification-answers li[data-correct='0']").count() == 2
    page.screenshot(path=str(artifacts_dir / f"qualification-failed-{screen}.png"), full_page=True)
    page.goto(f"{live_server.url}/queue/")
    assert page.locator(f"[data-next-trace='{project.pk}']").count() == 0
    assert "Qualification not passed." in page.inner_text("[data-standing='failed']")
    assert not errors, errors

    scores = GoldScore.objects.filter(annotator=annotator, kind=AnnotationKind.QUALIFICATION)
    assert scores.count() == 2 and not any(s.correct for s in scores)

    # The lead sees the attempt and allows another.
    lead_page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    login(lead_page, live_server.url, lead.username)
    lead_page.goto(f"{live_server.url}/projects/{project.pk}/quality/")
    row = lead_page.locator(f"#qualification-members tr[data-member='{annotator.username}']")
    assert row.get_attribute("data-status") == "failed"
    assert "0 of 2 answered" not in row.inner_text() and "2 of 2 answered, 0 right" in row.inner_text()
    lead_page.screenshot(path=str(artifacts_dir / f"quality-page-{screen}.png"), full_page=True)
    lead_page.click(f"[data-allow='{annotator.username}']")
    lead_page.wait_for_url(f"{live_server.url}/projects/{project.pk}/quality/")
    assert f"{annotator.username} may try the qualification again (attempt 2, 2 gold traces)." in lead_page.inner_text(
        ".notice"
    )
    attempt = QualificationAttempt.objects.get(annotator=annotator, number=2)
    assert attempt.status == QualificationStatus.OPEN and attempt.allowed_by == lead

    page.goto(f"{live_server.url}/projects/{project.pk}/qualification/")
    assert page.locator("#qualification-standing").get_attribute("data-status") == "open"
    assert page.inner_text("#qualification-go") == "Continue the qualification →"
    assert lead.username in page.inner_text("#qualification-attempts tr[data-attempt='2']")
    context.close()
