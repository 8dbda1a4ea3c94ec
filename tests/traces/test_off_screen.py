"""A recorded point outside the screen in its trace's own convention: flagged at import (counted
on the job, listed on the job page and in the CLI output), shown in the workspace, and refused at export unless the
annotator corrected that very step, in which case the correction is what gets trained on."""

from __future__ import annotations

import importlib
import json
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command

from annotation.models import Annotation, Verdict
from annotation.selectors import workspace_payload
from exports import services as export_services
from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.factories import native_trace_folder
from tests.fixtures_export import accepted_annotation
from traces import grammar, services
from traces.models import ImportJob, Step, Trace
from traces.selectors import OFF_SCREEN_POINT

OFF_SCREEN = "click(start_box='<|box_start|>(2500,300)<|box_end|>')"  # x past a 1920-wide screen
ACTIONS = [
    "click(start_box='<|box_start|>(100,200)<|box_end|>')",
    OFF_SCREEN,
    "click(start_box='<|box_start|>(1919,1079)<|box_end|>')",  # the last pixel: inside
    "type(content='display')",
]


def off_screen_folder(tmp_path, external_id="wide"):
    return native_trace_folder(tmp_path / "batch" / external_id, external_id=external_id, steps=4, actions=ACTIONS)


def import_off_screen(project, tmp_path, external_id="wide") -> ImportJob:
    folder = off_screen_folder(tmp_path, external_id)
    job = services.import_job_create(
        project=project,
        user=None,
        upload_name=str(folder.parent),
        original_name="batch",
        server_path=True,
        enqueue=False,
        coordinates=grammar.SCREEN_PIXELS,
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    return job


def one_click(x, y):
    return [grammar.parse_action(f"click(start_box='({x},{y})')")]


@pytest.mark.parametrize(
    ("convention", "inside", "outside"),
    [
        # Screen pixels index pixels: 0..W-1 (a float short of W still lies in the last pixel).
        (grammar.SCREEN_PIXELS, [(0, 0), (1919, 1079), (1919.5, 1079.5)], [(1920, 0), (0, 1080), (-1, 5), (2500, 300)]),
        # Model conventions address the continuous extent and emit its far edge: 0..1000 inclusive.
        (grammar.RELATIVE_1000, [(0, 0), (1000, 1000)], [(1001, 0), (0, 1000.5), (-0.5, 0)]),
        # Smart-resize: 0..w_resized x 0..h_resized inclusive (1920x1080 resizes to 1932x1092).
        (grammar.SMART_RESIZE_PIXELS, [(1932, 1092)], [(1933, 0), (0, 1093)]),
    ],
)
def test_the_screen_edge_in_each_convention(convention, inside, outside):
    assert grammar.smart_resize(1080, 1920) == (1092, 1932)
    for point in inside:
        assert grammar.off_screen_points(one_click(*point), convention=convention, width=1920, height=1080) == []
    for point in outside:
        (problem,) = grammar.off_screen_points(one_click(*point), convention=convention, width=1920, height=1080)
        assert "outside the screen" in problem and convention in problem


def test_every_point_of_an_action_is_checked():
    drag = grammar.parse_action("drag(start_box='(10,10)', end_box='(10,1200)')")
    (problem,) = grammar.off_screen_points([drag], convention=grammar.SCREEN_PIXELS, width=1920, height=1080)
    assert "end_box (10, 1200)" in problem


@pytest.mark.django_db
def test_import_flags_counts_and_lists_the_off_screen_step(project, tmp_path, lead, client, api_client):
    job = import_off_screen(project, tmp_path)
    assert job.off_screen_steps == 1 and job.unparsed_actions == 0
    steps = {s.index: s for s in Step.objects.filter(trace__external_id="wide")}
    assert "click start_box (2500, 300) is outside the screen" in steps[2].off_screen_point
    assert "[0, 1919] x [0, 1079]" in steps[2].off_screen_point
    assert [i for i, s in steps.items() if s.off_screen_point] == [2]  # (1919,1079) is the last pixel: inside

    (entry,) = [e for e in job.errors if e.get("kind") == OFF_SCREEN_POINT]
    assert entry["steps"] == [2] and entry["trace"] == steps[2].trace_id
    assert "step 2: click start_box (2500, 300) is outside the screen" in entry["error"]
    assert "1 off-screen step" in job.message

    listed = api_client(lead).get(f"/api/imports/{job.pk}/").json()
    assert listed["off_screen_steps"] == 1
    client.force_login(lead)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    assert "1 off-screen step" in page and "step 2: click start_box (2500, 300) is outside the screen" in page
    detail = client.get(f"/traces/{steps[2].trace_id}/").content.decode()
    assert "point outside the screen" in detail


@pytest.mark.django_db
def test_the_import_command_reports_the_off_screen_point(project, tmp_path, capsys):
    folder = off_screen_folder(tmp_path)
    call_command("import_traces", str(folder.parent), "--project", project.name, "--coordinates", "screen-pixels")
    out, err = capsys.readouterr()
    assert "1 off-screen step" in out
    assert f"{OFF_SCREEN_POINT}: " in err and "step 2: click start_box (2500, 300)" in err


@pytest.mark.django_db
def test_a_retried_import_lists_the_point_again(project, tmp_path):
    job = import_off_screen(project, tmp_path)
    job = services.import_job_run(job_id=job.pk)  # a redelivery reads the source again; the trace is stored
    assert job.off_screen_steps == 1
    assert [e["steps"] for e in job.errors if e.get("kind") == OFF_SCREEN_POINT] == [[2]]


@pytest.mark.django_db
def test_the_same_points_in_relative_1000_are_all_inside_but_1000_is_the_edge(project, tmp_path):
    folder = native_trace_folder(
        tmp_path / "b" / "rel",
        external_id="rel",
        steps=2,
        actions=["click(start_box='(1000,1000)')", "click(start_box='(1000,1001)')"],
    )
    job = services.import_job_create(
        project=project, user=None, upload_name=str(folder.parent), server_path=True, enqueue=False
    )
    job = services.import_job_run(job_id=job.pk)
    assert Trace.objects.get(external_id="rel").coordinate_convention == grammar.RELATIVE_1000
    assert job.off_screen_steps == 1
    assert list(Step.objects.filter(trace__external_id="rel").exclude(off_screen_point="").values_list("index")) == [
        (2,)
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("source", "fmt", "steps"),
    [
        ("dart-gui/examples/osworld_trajectory", "", 15),  # UI-TARS, screen pixels: click(1916,44) on 1920 is inside
        ("screenagent/data", "", 47),
        ("mobile-agent-v1/results", "mobile-agent", 254),
    ],
)
@pytest.mark.heavy
def test_real_traces_raise_no_false_flag(project, realtraces, source, fmt, steps):
    job = services.import_job_create(
        project=project, user=None, upload_name=str(realtraces / source), server_path=True, enqueue=False, fmt=fmt
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded" and job.steps_imported == steps
    assert job.off_screen_steps == 0 and "0 off-screen steps" in job.message
    assert not [e for e in job.errors if e.get("kind") == OFF_SCREEN_POINT]
    measured = Step.objects.filter(trace__project=project, screenshot__isnull=False).exclude(parsed_actions=[])
    assert measured.exists() and not Step.objects.exclude(off_screen_point="").exists()


@pytest.mark.django_db
def test_the_migration_flags_steps_stored_before_the_rule(project, tmp_path):
    job = import_off_screen(project, tmp_path)
    Step.objects.update(off_screen_point="")  # as the code before the rule stored them
    ImportJob.objects.update(off_screen_steps=0)
    migration = importlib.import_module("traces.migrations.0008_step_off_screen_point")
    from django.apps import apps

    migration.backfill(apps, None)
    flagged = Step.objects.exclude(off_screen_point="")
    assert [s.index for s in flagged] == [2] and "(2500, 300) is outside the screen" in flagged[0].off_screen_point
    job.refresh_from_db()
    assert job.off_screen_steps == 1


@pytest.mark.django_db
def test_the_workspace_payload_carries_the_flag(project, tmp_path, annotator):
    import_off_screen(project, tmp_path)
    trace = Trace.objects.get(external_id="wide")
    annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator)
    steps = workspace_payload(annotation=annotation, lease=None)["steps"]
    assert [bool(s["off_screen"]) for s in steps] == [False, True, False, False]
    assert "(2500, 300) is outside the screen" in steps[1]["off_screen"]


def export(project, engineer, **options):
    job = export_services.export_job_create(
        project=project, user=engineer, fmt="trl", enqueue=False, options={"validation_fraction": 0.0, **options}
    )
    job = export_services.export_job_run(job_id=job.pk)
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


@pytest.mark.django_db
def test_an_error_free_annotation_never_trains_on_the_off_screen_step(project, tmp_path, annotator, lead, engineer):
    import_off_screen(project, tmp_path)
    trace = Trace.objects.get(external_id="wide")
    accepted_annotation(trace, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    job, manifest, records, readme = export(project, engineer, include_error_free=True)
    assert [r["kind"] for r in records] == ["error_free"]  # step 1; step 2 is off the screen, 3 and 4 follow it
    assert "1302" not in json.dumps(records)  # 2500 px of 1920, in the project's relative-1000
    assert manifest["counts"]["skipped_by_reason"] == {"off_screen_target": 1, "off_screen_history": 2}
    reasons = [s["reason"] for s in manifest["skipped"]]
    assert any("step 2's recorded action has a point outside the screen" in r for r in reasons)
    assert "off_screen_history" in job.message and "outside the screen" in readme


@pytest.mark.django_db
def test_a_correction_of_that_very_step_is_exported(project, tmp_path, annotator, lead, engineer):
    import_off_screen(project, tmp_path)
    trace = Trace.objects.get(external_id="wide")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        error_category=project.error_categories[0],
        corrected_thought="Click the Display entry.",
        corrected_action="click(start_box='(640,280)')",
        reflection_thought="That missed the screen; go back.",
        reflection_action="hotkey(key='alt left')",
    )
    job, manifest, records, readme = export(project, engineer, include_valid_prefix=True)
    by_kind = {r["kind"]: r for r in records}
    assert sorted(by_kind) == ["dpo", "error_correction", "post_reflection", "valid_prefix"]
    assert "(640,280)" in json.dumps(by_kind["error_correction"]["completion"])
    assert "(640,280)" in json.dumps(by_kind["dpo"]["chosen"])
    assert manifest["counts"].get("skipped_by_reason", {}) == {}


@pytest.mark.django_db
def test_a_first_error_after_the_off_screen_step_is_refused(project, tmp_path, annotator, lead, engineer):
    import_off_screen(project, tmp_path)
    trace = Trace.objects.get(external_id="wide")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        error_category=project.error_categories[0],
        corrected_thought="Click the Display entry.",
        corrected_action="click(start_box='(640,280)')",
    )
    job, manifest, records, readme = export(project, engineer, include_valid_prefix=True)
    assert [r["kind"] for r in records] == ["valid_prefix"]  # step 1 only
    assert manifest["counts"]["skipped_by_reason"] == {"off_screen_target": 1, "off_screen_history": 2}


@pytest.mark.django_db
def test_the_correction_editor_refuses_an_off_screen_point(project, tmp_path, annotator, api_client):
    import_off_screen(project, tmp_path)
    client = api_client(annotator)
    claim = client.post(f"/api/projects/{project.pk}/next-trace/").json()
    pk = claim["annotation"]["id"]
    draft = client.put(
        f"/api/annotations/{pk}/draft/",
        {
            "version": 1,
            "verdict": "error",
            "tau": 2,
            "error_category": project.error_categories[0],
            "corrected_thought": "Click Display.",
            "reflection_thought": "That missed the screen; go back.",
            "editor_state": {
                "corrected": {"type": "click", "args": {"start_box": [1200, 280]}, "style": "box"},
                "reflection": {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"},
            },
        },
        format="json",
    )
    assert draft.status_code == 200, draft.json()
    response = client.post(f"/api/annotations/{pk}/submit/", {"version": draft.json()["version"]}, format="json")
    assert response.status_code == 400
    (problem,) = response.json()["errors"].values()
    assert "(1200, 280) is outside the screen" in problem and "[0, 1000]" in problem


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_workspace_shows_the_off_screen_step(
    browser, live_server, project, annotator, tmp_path, role_groups, artifacts_dir
):
    import_off_screen(project, tmp_path)
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    assert page.locator("#ws-off-screen").is_hidden()
    assert page.locator(".ws-off-screen-mark").count() == 1
    page.keyboard.press("j")
    assert "(2500, 300) is outside the screen" in page.inner_text("#ws-off-screen")
    page.screenshot(path=str(artifacts_dir / "workspace-off-screen.png"))
    page.keyboard.press("j")
    assert page.locator("#ws-off-screen").is_hidden()
