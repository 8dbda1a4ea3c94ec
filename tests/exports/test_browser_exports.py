"""The engineer's pages in Chromium: a navigation with only what an engineer can use, and an export list that says
how each bundle was made and downloads it from its row."""

from __future__ import annotations

import zipfile

import pytest

from annotation.models import Verdict
from exports import services
from tests.conftest import login
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

pytestmark = pytest.mark.browser


def test_engineer_exports_list_options_samples_and_download(
    browser, live_server, project, annotator, lead, engineer, tmp_path, artifacts_dir
):
    for i in range(2):
        trace = make_trace(project, replies=REPLIES, external_id=f"e{i}", image_seed=i + 1)
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=3,
            corrected_thought=f"Open the right item {i}.",
            corrected_action="click(start_box='<|box_start|>(400,300)<|box_end|>')",
        )
    job = services.export_job_create(
        project=project,
        user=engineer,
        fmt="trl",
        options={"include_valid_prefix": True, "validation_fraction": 0.0},
        enqueue=False,
    )
    job = services.export_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    samples = sum(job.counts["by_kind"].values())

    context = browser.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = context.new_page()
    login(page, live_server.url, engineer.username)
    page.goto(f"{live_server.url}/exports/")
    nav = page.locator("header nav, nav").first.inner_text()
    assert "Queue" not in nav and "Exports" in nav and "API docs" in nav
    row = page.locator("table tbody tr").first
    cells = row.locator("td").all_inner_texts()
    assert "valid prefix" in cells[3] and "validation 0" in cells[3] and "seed 0" in cells[3]
    assert cells[5].strip() == str(samples)
    page.screenshot(path=str(artifacts_dir / "exports-list.png"), full_page=True)
    with page.expect_download() as download:
        row.locator("a", has_text="Download").click()
    saved = tmp_path / "bundle.zip"
    download.value.save_as(saved)
    assert "manifest.json" in zipfile.ZipFile(saved).namelist()

    page.goto(f"{live_server.url}/exports/{job.pk}/")
    assert page.locator("#export-progress").get_attribute("value") == "100"
    page.screenshot(path=str(artifacts_dir / "export-job.png"), full_page=True)
    page.click("text=API docs")
    page.wait_for_url("**/api/docs/")
    context.close()

    # An annotator's navigation keeps the queue and shows none of the engineer's links.
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    nav = page.locator("header nav, nav").first.inner_text()
    assert "Queue" in nav and "Exports" not in nav and "API docs" not in nav
    context.close()
