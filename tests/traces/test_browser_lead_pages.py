"""The lead's and engineer's forms and lists in Chromium, as they read them: fields that look like fields, and words
that stay the same whether the page was rendered or updated live."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Verdict
from exports import services
from tests.conftest import login
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

pytestmark = pytest.mark.browser


def _field_look(page, selector: str) -> dict:
    return page.evaluate(
        """(sel) => { const el = document.querySelector(sel); const s = getComputedStyle(el);
            return {width: el.getBoundingClientRect().width, weight: s.fontWeight, radius: s.borderTopLeftRadius}; }""",
        selector,
    )


def page_at_1366(browser, live_server, user, path: str = ""):
    """A page at 1366x768, logged in as ``user``, at ``path`` (when given)."""
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, user.username)
    if path:
        page.goto(f"{live_server.url}{path}")
    return page


def test_url_and_date_fields_look_like_the_other_fields_and_read_in_normal_weight(
    browser, live_server, project, lead, artifacts_dir
):
    # The webhook address field was the browser's bare box (about 180 px: its own placeholder cut off), the
    # dashboard's dates the same, and every field inside a bold label read bold (the export form).
    page = page_at_1366(browser, live_server, lead, f"/projects/{project.pk}/webhooks/")
    url = _field_look(page, "#webhook-form input[name=url]")
    form = page.evaluate("document.getElementById('webhook-form').getBoundingClientRect().width")
    assert url["width"] > 0.9 * form and url["radius"] == "7px" and url["weight"] == "400", url
    page.screenshot(path=str(artifacts_dir / "webhooks-form.png"))
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard/")
    date = _field_look(page, "form.range input[name=from]")
    assert date["radius"] == "7px" and date["weight"] == "400", date
    page.goto(f"{live_server.url}/exports/")
    for field in ("select[name=project]", "select[name=format]", "input[name=validation_fraction]"):
        assert _field_look(page, field)["weight"] == "400", field
    page.close()


def test_an_export_followed_live_offers_its_diff_as_soon_as_it_succeeds(
    browser, live_server, project, annotator, lead, engineer, artifacts_dir
):
    # The download link appeared live when the job succeeded, the "what changed" link only after a reload.
    trace = make_trace(project, replies=REPLIES, external_id="live-diff", image_seed=1)
    accepted_annotation(trace, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    job = services.export_job_create(project=project, user=engineer, fmt="trl", options={}, enqueue=False)
    page = page_at_1366(browser, live_server, engineer, f"/exports/{job.pk}/")
    assert page.locator("#export-diff-link").is_hidden() and page.locator("#export-download").is_hidden()
    assert services.export_job_run(job_id=job.pk).status == "succeeded"
    expect(page.locator("#export-download")).to_be_visible(timeout=15000)
    expect(page.locator("#export-diff-link")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "export-job-live.png"))
    page.close()


def test_a_project_with_no_rounds_says_so_without_empty_charts(browser, live_server, project, lead, artifacts_dir):
    # A fresh project's rounds page said "No rounds yet" above an empty table and six bare axes.
    page = page_at_1366(browser, live_server, lead, f"/projects/{project.pk}/dashboard/rounds/")
    page.wait_for_selector("#rounds[data-loaded]", state="attached")
    assert page.locator("#rounds-empty").is_visible()
    assert page.locator("#round-table").is_hidden() and page.locator("#rounds .chart-grid").is_hidden()
    page.screenshot(path=str(artifacts_dir / "rounds-empty.png"), full_page=True)
    page.close()


def test_the_trace_list_title_stays_on_one_line_beside_its_buttons(browser, live_server, project, lead, artifacts_dir):
    # At 1366 px the buttons and the "no model configured" note flowed as text: the note ran under the buttons and the
    # title ("Desktop & web demo") was squeezed into two lines. The head's buttons may take a row of their own.
    project.name = "Desktop & web demo"
    project.save(update_fields=["name"])
    page = page_at_1366(browser, live_server, lead, f"/projects/{project.pk}/traces/")
    page.screenshot(path=str(artifacts_dir / "trace-list-head.png"))
    title = page.locator(".page-head h1").bounding_box()
    line = page.evaluate("parseFloat(getComputedStyle(document.querySelector('.page-head h1')).lineHeight) || 30")
    assert title["height"] < 1.5 * line, title
    if page.locator("#prescore-model-hint").count():
        hint, off = (
            page.locator("#prescore-model-hint").bounding_box(),
            page.locator("#prescore-model-off").bounding_box(),
        )
        # One line, next to its button (beside it, or under it once the buttons take a row of their own), and over
        # no other button.
        assert hint["height"] < off["height"], (hint, off)
        assert hint["y"] - (off["y"] + off["height"]) < 20 and hint["x"] < off["x"] + off["width"], (hint, off)
        for button in page.locator(".page-head .actions .button, .page-head .actions button").all():
            box = button.bounding_box()
            if box:
                apart = (
                    hint["x"] >= box["x"] + box["width"]
                    or box["x"] >= hint["x"] + hint["width"]
                    or hint["y"] >= box["y"] + box["height"]
                    or box["y"] >= hint["y"] + hint["height"]
                )
                assert apart, (hint, box)
    page.close()


def test_the_evaluations_table_shows_every_column_at_1366(browser, live_server, project, engineer, artifacts_dir):
    # Fourteen columns in the 1200 px page: "Created" was cut off at the right edge behind a scroll with no sign of it.
    page = page_at_1366(browser, live_server, engineer, f"/projects/{project.pk}/evaluations/")
    widths = page.evaluate(
        "(() => { const box = document.getElementById('evaluations').parentElement;"
        " return [box.scrollWidth, box.clientWidth]; })()"
    )
    assert widths[0] <= widths[1], widths
    page.screenshot(path=str(artifacts_dir / "evaluations-1366.png"))
    page.close()


def test_a_long_project_name_without_spaces_wraps_instead_of_widening_the_page(
    browser, live_server, project, lead, artifacts_dir
):
    # "Quarterly_reinforcement_…_final" ran out of its card and made every project page scroll sideways.
    project.name = "Quarterly_reinforcement_reflection_tuning_batch_for_the_enterprise_desktop_agent_" + (
        "evaluation_suite_v2_final_really_final"
    )
    project.save(update_fields=["name"])
    page = page_at_1366(browser, live_server, lead)
    for path in ("/projects/", f"/projects/{project.pk}/traces/", f"/projects/{project.pk}/dashboard/", "/reviews/"):
        page.goto(f"{live_server.url}{path}")
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], (path, widths)
    page.goto(f"{live_server.url}/projects/")
    page.screenshot(path=str(artifacts_dir / "projects-long-name.png"))
    page.close()


def test_a_paused_webhook_endpoint_says_why_beside_its_address(browser, live_server, project, lead, artifacts_dir):
    import datetime

    from django.utils import timezone

    from webhooks.models import Delivery, DeliveryStatus, Webhook

    hook = Webhook.objects.create(
        project=project,
        url="https://ci.example.org/trace-studio/hooks/receive",
        events=["bundle.ready", "import.failed"],
        secret="s" * 64,
        failures_in_a_row=5,
        paused_until=timezone.now() + datetime.timedelta(minutes=10),
        pause_reason="5 deliveries failed in a row, the last: timed out: no whole answer within 15 s",
    )
    Delivery.objects.create(webhook=hook, event="bundle.ready", payload={}, status=DeliveryStatus.DELIVERED)
    Delivery.objects.create(webhook=hook, event="import.failed", payload={}, last_error="timed out")
    page = page_at_1366(browser, live_server, lead, f"/projects/{project.pk}/webhooks/")
    # A waiting delivery offers "cancel" beside "re-send"; a delivered one only "re-send".
    expect(page.locator('#delivery-log tr[data-status="pending"] button', has_text="cancel")).to_be_visible()
    expect(page.locator('#delivery-log tr[data-status="delivered"] button', has_text="cancel")).to_have_count(0)
    # Link-like buttons in the page read as links (the accent), not in the top bar's near-white.
    cancel = page.locator('#delivery-log tr[data-status="pending"] button', has_text="cancel")
    assert cancel.evaluate("b => getComputedStyle(b).color") == "rgb(59, 91, 219)"
    log = page.locator("#delivery-log").bounding_box()
    assert log and log["x"] + log["width"] <= 1366
    row = page.locator('#webhook-list tr[data-paused="true"]')
    expect(row.locator(".webhook-paused")).to_contain_text("Paused until")
    expect(row.locator("button", has_text="try again now")).to_be_visible()
    table = page.locator("#webhook-list").bounding_box()
    assert table and table["x"] + table["width"] <= 1366  # the pause's words wrap inside the page
    page.screenshot(path=str(artifacts_dir / "webhook-paused.png"), full_page=True)
    page.context.close()
