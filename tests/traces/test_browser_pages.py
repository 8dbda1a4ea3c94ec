"""The foundation's pages in a real Chromium: upload an archive, watch its import job finish in a real worker."""

from __future__ import annotations

import zipfile

import pytest
from playwright.sync_api import expect

from tests.conftest import login
from tests.factories import native_trace_folder

pytestmark = [pytest.mark.browser, pytest.mark.worker]


def test_lead_uploads_a_zip_and_watches_the_import_finish(
    browser, live_server, celery_worker, project, lead, tmp_path, artifacts_dir
):
    for n in range(3):
        native_trace_folder(tmp_path / "src" / f"t{n}", external_id=f"upload-{n}", steps=2, size=(1280, 800))
    archive = tmp_path / "traces.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in sorted((tmp_path / "src").rglob("*")):
            if file.is_file():
                zf.write(file, file.relative_to(tmp_path / "src"))
        zf.writestr("../escape.txt", "refused by name")

    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/traces/")
    page.click("text=Import traces")
    page.set_input_files("input[name=file]", str(archive))
    page.click("text=Upload and import")
    page.wait_for_url(f"{live_server.url}/imports/*/")
    # Followed live, the status reads as the server renders it on a reload.
    expect(page.locator("[data-job=status]")).to_have_text("Succeeded", timeout=60000)
    assert "3 traces, 6 steps" in page.inner_text("[data-job=message]")
    # Followed live, the progress reads in the words the page renders first (it was "3 / 3" live, "3 traces read" after).
    assert page.inner_text("[data-job=progress]") == "3 of 3 traces read"
    # The refused file is a problem (said first, in the banner), not a note on a kept trace.
    assert "../escape.txt has '..' in its path" in page.inner_text("[data-job=problems]")
    assert page.inner_text("[data-job=attention]") == "1 file refused"
    page.screenshot(path=str(artifacts_dir / "import-job.png"))
    page.reload()
    assert page.inner_text("[data-job=status]") == "Succeeded"
    assert page.inner_text("[data-job=progress]") == "3 of 3 traces read"
    page.goto(f"{live_server.url}/projects/{project.pk}/traces/")
    assert page.locator("table tbody tr").count() == 3
