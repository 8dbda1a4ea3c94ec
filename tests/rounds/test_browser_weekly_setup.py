"""The lead's set-up for a weekly round in Chromium at 1366x768 and 1920x1080: double annotation on the
settings page, instructions for many traces from one file, and the Account menu that leads to the API token page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import login
from tests.fixtures_annotation import make_traces
from traces.models import Trace

pytestmark = pytest.mark.browser

SIZES = [(1366, 768), (1920, 1080)]


def _page(browser, live_server, user, size, path: str):
    page = browser.new_context(viewport={"width": size[0], "height": size[1]}).new_page()
    login(page, live_server.url, user.username)
    page.goto(f"{live_server.url}{path}")
    return page


def _within_view(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width and box["y"] + box["height"] <= height


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_lead_turns_on_double_annotation_on_the_settings_page(
    browser, live_server, project, lead, artifacts_dir, size
):
    page = _page(browser, live_server, lead, size, f"/projects/{project.pk}/settings/")
    block = page.locator("[data-fieldset=double-annotation]")
    expect(block).to_be_visible()
    # The block is in the form's first screen beside the categories, not under the members' list.
    assert _within_view(page, "[data-fieldset=double-annotation] legend"), page.locator(
        "[data-fieldset=double-annotation]"
    ).bounding_box()
    page.fill("input[name=double_annotation_annotators]", "1")
    page.fill("input[name=double_annotation_share]", "0.25")
    page.click("#project-form button[type=submit]")
    expect(page.locator("[data-field-error=double_annotation_annotators]")).to_contain_text(
        "2 to 10 distinct annotators"
    )
    page.screenshot(path=str(artifacts_dir / f"settings-double-refused-{size[0]}.png"), full_page=True)
    page.fill("input[name=double_annotation_annotators]", "2")
    page.click("#project-form button[type=submit]")
    expect(page.locator(".notice")).to_contain_text("Settings of Test project saved")
    expect(page.locator("input[name=double_annotation_share]")).to_have_value("0.25")
    page.screenshot(path=str(artifacts_dir / f"settings-double-{size[0]}.png"))
    project.refresh_from_db()
    assert (project.double_annotation_share, project.double_annotation_annotators) == (0.25, 2)
    page.close()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_lead_fills_instructions_from_a_file(browser, live_server, project, lead, artifacts_dir, tmp_path, size):
    traces = make_traces(project, tmp_path, count=3, steps=2, instruction="")
    page = _page(browser, live_server, lead, size, f"/projects/{project.pk}/traces/")
    page.click("#instructions-link")
    expect(page.locator("#instructions-awaiting")).to_contain_text("3 traces await an instruction")
    upload = tmp_path / "instructions.csv"
    rows = [f"{t.external_id},Open the Wi-Fi settings ({n})" for n, t in enumerate(traces[:2])]
    upload.write_text("external_id,instruction\n" + "\n".join([*rows, "nope,Something", f"{traces[2].external_id},"]))
    page.set_input_files("#instructions-form input[type=file]", str(upload))
    page.click("#instructions-form button[type=submit]")
    report = page.locator("#instructions-report")
    expect(report.locator("[data-summary]")).to_have_text(
        "2 instructions set, 2 refused, 0 left as they were; 1 trace still awaits an instruction."
    )
    expect(report.locator("[data-refused]")).to_contain_text("unknown id: no trace of this project has it")
    expect(report.locator("[data-refused]")).to_contain_text("The instruction cannot be blank")
    expect(page.locator("#instructions-awaiting")).to_contain_text("1 trace awaits an instruction")
    page.screenshot(path=str(artifacts_dir / f"instructions-report-{size[0]}.png"), full_page=True)
    assert Trace.objects.get(pk=traces[0].pk).instruction == "Open the Wi-Fi settings (0)"
    page.close()


def test_the_account_menu_leads_to_the_api_token_page(
    browser, live_server, project, engineer, annotator, artifacts_dir
):
    page = _page(browser, live_server, engineer, SIZES[0], "/projects/")
    assert page.locator("#account-token-link").is_hidden()  # closed until opened
    page.click("#account-menu summary")
    expect(page.locator("#account-token-link")).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "account-menu.png"))
    page.click("#account-token-link")
    page.wait_for_url(f"{live_server.url}/account/token/")
    page.close()
    page = _page(browser, live_server, annotator, SIZES[0], "/projects/")
    page.click("#account-menu summary")
    assert page.locator("#account-token-link").count() == 0  # annotators have no token (token.manage)
    expect(page.locator("#account-menu button[type=submit]")).to_have_text("Log out")
    page.close()


@pytest.mark.worker
def test_a_prescore_run_shows_its_result_on_the_trace_list(
    browser, live_server, celery_worker, project, lead, artifacts_dir, tmp_path
):
    # The list showed "queued, 0/0 steps" and never the result; after a reload it showed nothing of the run.
    make_traces(project, tmp_path, count=2, steps=3)
    page = _page(browser, live_server, lead, SIZES[0], f"/projects/{project.pk}/traces/")
    page.click("#prescore-start button[data-scorer=rules]")
    status = page.locator("#prescore-start-status")
    expect(status).to_contain_text("succeeded", timeout=90000)
    expect(status).to_contain_text("succeeded — 6 steps scored")
    page.screenshot(path=str(artifacts_dir / "prescore-result.png"))
    page.reload()
    expect(status).to_contain_text("rules job")
    expect(status).to_contain_text("succeeded — 6 steps scored")
    assert "0/0" not in status.text_content()
    page.close()
