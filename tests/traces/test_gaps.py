"""Gaps in a recording: the native format says steps are missing before a step; the workspace
shows the gap; a post-reflection whose next screen is not the one right after step τ is refused where it is written
(the action check, submit: 400 naming the gap) and, as a last guard, at export (named in the manifest)."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.files.storage import default_storage

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.selectors import workspace_payload
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


@pytest.mark.django_db
def test_a_post_reflection_across_a_gap_is_refused_with_the_reason(project, annotator, api_client, tmp_path):
    """Step 3's screen comes after two dropped steps, so it is not o_3 for a first error at step 2: the API took a
    post-reflection there and the export dropped it (above). Refused with the reason where it is written; without
    one, the answer goes to review with the server's reason that there is none."""
    import_with_gap(project, tmp_path, before_step=3, value=2)
    client = api_client(annotator)
    claim = client.post(f"/api/projects/{project.pk}/next-trace/").json()
    pk = claim["annotation"]["id"]
    back = {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"}
    display = {"type": "click", "args": {"start_box": [400, 300]}}
    saved = client.put(
        f"/api/annotations/{pk}/draft/",
        {
            "version": 1,
            "verdict": "error",
            "tau": 2,
            "error_category": project.error_categories[0],
            "corrected_thought": "Open Display.",
            "reflection_thought": "Wrong; go back.",
            "editor_state": {"corrected": display, "reflection": back},
        },
        format="json",
    )
    assert saved.status_code == 200, saved.content
    gap = "the source dropped 2 steps between step 2 and step 3"
    check = client.post(
        f"/api/annotations/{pk}/check-action/", {"slot": "reflection", "tau": 2, "action": back}, format="json"
    ).json()
    assert not check["valid"] and any(gap in error for error in check["errors"]), check
    refused = client.post(f"/api/annotations/{pk}/submit/", {"version": 2}, format="json")
    assert refused.status_code == 400, refused.content
    assert gap in refused.json()["errors"]["reflection_action"].lower()
    assert Annotation.objects.get(pk=pk).status == AnnotationStatus.DRAFT

    cleared = {"version": 2, "reflection_thought": "", "editor_state": {"corrected": display, "reflection": None}}
    assert client.put(f"/api/annotations/{pk}/draft/", cleared, format="json").status_code == 200
    done = client.post(f"/api/annotations/{pk}/submit/", {"version": 3}, format="json")
    assert done.status_code == 200, done.content
    annotation = Annotation.objects.get(pk=pk)
    assert gap in annotation.no_reflection_reason.lower() and annotation.status == AnnotationStatus.SUBMITTED
    # The page is told the same reason for step 2 (it asks the annotator for none), and none for step 3.
    steps = workspace_payload(annotation=annotation, lease=None)["steps"]
    assert steps[1]["server_no_reflection_reason"] == annotation.no_reflection_reason
    assert steps[2]["server_no_reflection_reason"] == ""
    # Nowhere to write one for τ = 2 (step 3's screen is not o_3); τ = 3 writes its own on step 4.
    assert [s["reflection_screen"] for s in steps[1:3]] == [None, 4]


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


@pytest.mark.django_db
@pytest.mark.parametrize("value", [2, True, None])
def test_an_export_reads_the_gap_of_a_step_from_its_context_alone(project, tmp_path, value):
    """An export reads a step's ``missing_before`` out of its context in the query, not the whole context (a source's
    plans and evaluations) decoded: the same gap as the step's whole context gives, a number, ``true`` (1) or none."""
    from annotation.selectors import steps_dropped_before
    from exports.builders import ScreenshotCache, _steps_by_trace

    import_with_gap(project, tmp_path, before_step=3)
    step = Step.objects.get(trace__external_id="gappy", index=3)
    step.context = {"plan": ["open the menu", "pick Display"], "score": 0.5}
    if value is not None:
        step.context["missing_before"] = value
    step.save(update_fields=["context"])
    rows = _steps_by_trace([step.trace_id], ScreenshotCache())[step.trace_id]
    assert [steps_dropped_before(row) for row in rows] == [0, 0, {2: 2, True: 1, None: 0}[value], 0]
    assert steps_dropped_before(rows[2]) == steps_dropped_before(step)
