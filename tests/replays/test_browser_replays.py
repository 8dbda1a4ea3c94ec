"""The replays in a browser: the trace page lists a verified and a refuted correction with the branch beside the
trace from τ, and a lead sends the failed branch to the annotation queue from there; the round dashboard counts the
corrections verified, refuted and waiting per round."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, AnnotationStatus
from annotation.review.services import review_accept
from demo import settings_env
from demo.settings_env import correction_to, record_failing_run
from replays.models import ReplayRequest
from replays.services import replay_request_create
from studio.security import api_token_issue
from tests.conftest import login
from trace_studio_cli.client import StudioClient
from trace_studio_cli.runner import HttpTransport, replay_next
from traces.models import Trace

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_the_trace_page_shows_each_replay_and_sends_a_failed_branch_to_the_queue(
    browser, live_server, project, annotator, lead, engineer, artifacts_dir
):
    runner = HttpTransport(StudioClient(live_server.url, api_token_issue(user=lead)))
    record_failing_run(runner, project.pk, "settings-failing")
    trace = Trace.objects.get(project=project, external_id="settings-failing")
    for user, widget in ((annotator, "sidebar.appearance"), (lead, "sidebar.sound")):
        answer = Annotation.objects.create(
            trace=trace,
            project=project,
            annotator=user,
            status=AnnotationStatus.SUBMITTED,
            verdict="error",
            tau=1,
            corrected_action=correction_to(widget),
        )
        replay_request_create(annotation=review_accept(annotation_id=answer.pk, actor=lead), actor=lead)
        replay_next(runner, project.pk, "browser-runner", settings_env)

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/traces/{trace.pk}/")
    panel = page.locator("#trace-replays")
    expect(panel).to_be_visible()
    expect(panel.locator("[data-verification=verified]")).to_have_count(1)
    expect(panel.locator("[data-verification=refuted]")).to_have_count(1)
    expect(panel.locator("tr.first-difference")).to_have_count(2)
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "replays-trace-page.png"), full_page=True)
    panel.get_by_role("button", name="Send this failed branch to the annotation queue").click()
    expect(page.locator(".notice")).to_contain_text("is in the annotation queue")
    refuted = ReplayRequest.objects.get(success=False)
    refuted.branch.refresh_from_db()
    assert refuted.branch.held_from_queue is False

    # A third correction asked for and not yet replayed: waiting. The round dashboard counts the three.
    third = Annotation.objects.create(
        trace=trace,
        project=project,
        annotator=engineer,
        status=AnnotationStatus.SUBMITTED,
        verdict="error",
        tau=1,
        corrected_action=correction_to("sidebar.appearance"),
    )
    replay_request_create(annotation=review_accept(annotation_id=third.pk, actor=lead), actor=lead)
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard/rounds/")
    section = page.locator("#round-replays[data-loaded]")
    expect(section).to_be_visible()
    row = section.locator("tbody tr")
    expect(row).to_have_count(1)
    cells = {name: row.locator(f"[data-figure={name}]").inner_text() for name in ("round", "verified", "refuted")}
    cells["waiting"] = row.locator("[data-figure=waiting]").inner_text()
    assert cells == {"round": "no round", "verified": "1", "refuted": "1", "waiting": "1"}
    with page.expect_download() as download:
        section.locator("[data-csv=replays]").click()
    lines = open(download.value.path()).read().splitlines()
    assert lines == ["round,verified,refuted,waiting,not_replayed", ",1,1,1,0"], lines
    page.close()
