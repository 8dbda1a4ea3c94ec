"""Gaps in a recording: the native format says steps are missing before a step; the workspace
shows the gap; a post-reflection sample whose next screen is not the one right after step τ is refused, named in
the manifest."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.files.storage import default_storage

from annotation.models import Verdict
from exports import services as export_services
from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.factories import native_trace_folder
from tests.fixtures_export import accepted_annotation
from traces import services
from traces.models import Step, Trace


def import_with_gap(project, tmp_path, *, before_step=3, value=2):
    folder = native_trace_folder(tmp_path / "batch" / "gappy", external_id="gappy", steps=4)
    document = json.loads((folder / "trace.json").read_text())
    document["steps"][before_step - 1]["missing_before"] = value
    (folder / "trace.json").write_text(json.dumps(document))
    job = services.import_job_create(
        project=project, user=None, upload_name=str(folder.parent), original_name="b", server_path=True, enqueue=False
    )
    return services.import_job_run(job_id=job.pk)


@pytest.mark.django_db
def test_missing_before_is_imported_and_a_bad_value_refused(project, tmp_path):
    job = import_with_gap(project, tmp_path)
    assert job.traces_imported == 1
    assert Step.objects.get(trace__external_id="gappy", index=3).context == {"missing_before": 2}
    job = import_with_gap(project, tmp_path / "again", value=-1)
    assert job.traces_failed == 1 and "missing_before must be a positive number" in str(job.errors)


@pytest.mark.django_db
def test_post_reflection_across_a_gap_is_refused(project, annotator, lead, engineer, tmp_path):
    import_with_gap(project, tmp_path, before_step=3)
    trace = Trace.objects.get(external_id="gappy")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        corrected_thought="Open Display.",
        corrected_action="click(start_box='(400,300)')",
        reflection_thought="Wrong; go back.",
        reflection_action="hotkey(key='alt left')",
    )
    job = export_services.export_job_create(
        project=project, user=engineer, fmt="trl", enqueue=False, options={"validation_fraction": 0.0}
    )
    job = export_services.export_job_run(job_id=job.pk)
    with default_storage.open(job.bundle_name) as handle, zipfile.ZipFile(handle) as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
    assert manifest["counts"]["by_kind"] == {"dpo": 1, "error_correction": 1}
    assert manifest["counts"]["skipped_by_reason"] == {"gap_after_tau": 1}
    assert "not o_(τ+1)" in manifest["skipped"][0]["reason"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_workspace_shows_the_gap(browser, live_server, project, annotator, tmp_path, role_groups, artifacts_dir):
    import_with_gap(project, tmp_path, before_step=3, value=2)
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    assert page.inner_text(".ws-gap-mark") == "⋯ 2"
    # The count in the server's words (studio.words), not the page's "2 step(s)"
    assert page.get_attribute(".ws-gap-mark", "title") == "2 steps missing here"
    assert page.locator("#ws-gap").is_hidden()
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert "dropped 2 steps right before this one" in page.inner_text("#ws-gap")
    page.screenshot(path=str(artifacts_dir / "workspace-gap.png"))
