"""Unparsed recorded steps are never trained on by accident: not an SFT target, not the DPO
rejected side, and a history that holds one is skipped by default or kept verbatim when asked; every skip is
counted by reason in the manifest and the job message."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.files.storage import default_storage

from annotation.models import Verdict
from exports import services
from tests.fixtures_export import accepted_annotation, make_trace

pytestmark = pytest.mark.django_db

WEB_AGENT = [
    "Thought: Open the search box.\nAction: click(start_box='(100,40)')",
    "Thought: Type the query.\nAction: Type [7]; comedy movies",  # a web agent's element-id action: no UI-TARS
    "Thought: Open the first result.\nAction: click(start_box='(300,400)')",
    "Thought: Done.\nAction: finished()",
]
FIX = {
    "corrected_thought": "Open the second result.",
    "corrected_action": "click(start_box='(300,500)')",
    "reflection_thought": "That was the wrong result; go back.",
    "reflection_action": "hotkey(key='alt left')",
}


def export(project, user, **options):
    job = services.export_job_create(
        project=project, user=user, fmt="trl", enqueue=False, options={"validation_fraction": 0.0, **options}
    )
    job = services.export_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    with default_storage.open(job.bundle_name) as handle, zipfile.ZipFile(handle) as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
        records = [
            json.loads(line)
            for name in bundle.namelist()
            if name.endswith(".jsonl")
            for line in bundle.read(name).decode().splitlines()
        ]
        readme = bundle.read("README.md").decode()
    return job, manifest, records, readme


def all_text(records) -> str:
    return json.dumps(records)


def test_a_history_with_an_unparsed_step_is_skipped_by_default(project, annotator, lead, engineer):
    trace = make_trace(project, replies=WEB_AGENT, external_id="web-1")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        error_category=project.error_categories[0],
        **FIX,
    )
    job, manifest, records, readme = export(project, engineer, include_valid_prefix=True)
    assert "Type [7]" not in all_text(records)
    assert [r["kind"] for r in records] == ["valid_prefix"]  # step 1 only
    assert manifest["counts"]["skipped_by_reason"] == {"unparsed_history": 3, "unparsed_target": 1}
    assert {s["kind"] for s in manifest["skipped"]} == {"valid_prefix", "error_correction", "dpo", "post_reflection"}
    assert "unparsed_history" in job.message and "left out" in readme


def test_verbatim_keeps_the_step_as_recorded_and_says_so(project, annotator, lead, engineer):
    trace = make_trace(project, replies=WEB_AGENT, external_id="web-2")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        error_category=project.error_categories[0],
        **FIX,
    )
    job, manifest, records, readme = export(project, engineer, unparsed_history="verbatim")
    kinds = sorted(r["kind"] for r in records)
    assert kinds == ["dpo", "error_correction", "post_reflection"]
    assert "Type [7]; comedy movies" in all_text([r["prompt"] for r in records])  # in the history only
    assert all("Type [7]" not in json.dumps(r.get("completion", r.get("rejected"))) for r in records)
    assert manifest["filters"]["unparsed_history"] == "verbatim" and "as it was recorded" in readme


def test_an_unparsed_wrong_step_is_never_the_rejected_side(project, annotator, lead, engineer):
    trace = make_trace(project, replies=WEB_AGENT, external_id="web-3")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        error_category=project.error_categories[0],
        **FIX,
    )
    job, manifest, records, readme = export(project, engineer)
    assert [r["kind"] for r in records] == ["error_correction"]
    assert manifest["counts"]["skipped_by_reason"] == {"unparsed_history": 1, "unparsed_rejected": 1}


def test_error_free_traces_never_train_on_an_unparsed_step(project, annotator, lead, engineer):
    trace = make_trace(project, replies=WEB_AGENT, external_id="web-4")
    accepted_annotation(trace, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    job, manifest, records, readme = export(project, engineer, include_error_free=True)
    assert [r["kind"] for r in records] == ["error_free"]  # step 1; step 2 is unparsed, 3 and 4 follow it
    assert "Type [7]" not in all_text(records)
    assert manifest["counts"]["skipped_by_reason"] == {"unparsed_history": 2, "unparsed_target": 1}


def test_unknown_option_value_is_refused(project, engineer, api_client):
    response = api_client(engineer).post(
        f"/api/projects/{project.pk}/exports/",
        {"format": "trl", "options": {"unparsed_history": "sometimes"}},
        format="json",
    )
    assert response.status_code == 400 and "unparsed_history must be one of skip, verbatim" in json.dumps(
        response.json()
    )
