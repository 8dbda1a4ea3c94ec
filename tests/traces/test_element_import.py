"""Element boxes a source recorded: imported onto the step's context, served to the workspace as snap
targets in the project's convention, and a recorded click that hits none of them flagged by the rules pre-scorer."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from annotation.models import Annotation
from annotation.selectors import workspace_payload
from prescoring import rules
from prescoring import services as prescoring
from prescoring.models import StepSuggestion
from tests.fixtures_annotation import import_folder
from traces import services
from traces.models import CoordinateConvention, ImportJob, Trace

# Screen pixels of a 1000x500 screenshot: a "Save" button and a text field.
SAVE = [100, 50, 300, 150]
FIELD = [400, 300, 900, 360]


def write_trace(folder, *, elements, clicks=((200, 100), (950, 450))):
    folder.mkdir(parents=True, exist_ok=True)
    steps = []
    for i, (x, y) in enumerate(clicks, start=1):
        Image.new("RGB", (1000, 500), (40 * i, 80, 120)).save(folder / f"s{i}.png")
        step = {"screenshot": f"s{i}.png", "thought": "", "action": f"click(start_box='({x},{y})')"}
        if elements is not None:
            step["elements"] = elements
        steps.append(step)
    Image.new("RGB", (1000, 500), (0, 0, 0)).save(folder / "final.png")
    document = {
        "format": "trace-studio/v1",
        "external_id": folder.name,
        "instruction": "Save the file",
        "steps": steps,
        "final_screenshot": "final.png",
    }
    (folder / "trace.json").write_text(json.dumps(document))
    return folder


def import_pixels(project, folder) -> ImportJob:
    job = services.import_job_create(
        project=project,
        user=None,
        upload_name=str(folder),
        original_name=folder.name,
        fmt="native",
        server_path=True,
        enqueue=False,
        coordinates=CoordinateConvention.SCREEN_PIXELS,
    )
    return services.import_job_run(job_id=job.pk)


@pytest.mark.django_db
def test_elements_land_on_the_step_and_reach_the_workspace_in_the_projects_convention(project, tmp_path, annotator):
    elements = [{"box": [300, 150, 100, 50], "label": "Save"}, {"box": FIELD}]
    job = import_pixels(project, write_trace(tmp_path / "saved", elements=elements))
    assert job.status == "succeeded", (job.message, job.errors)
    trace = Trace.objects.get(external_id="saved")
    step = trace.steps.get(index=1)
    assert step.context["elements"] == [{"box": SAVE, "label": "Save"}, {"box": FIELD, "label": ""}]
    annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator)
    payload = workspace_payload(annotation=annotation, lease=None)
    assert project.coordinate_convention == "relative-1000"
    # 1000x500 screen pixels -> relative-1000: x unchanged, y doubled.
    assert payload["steps"][0]["elements"] == [
        {"box": [100, 100, 300, 300], "label": "Save"},
        {"box": [400, 600, 900, 720], "label": ""},
    ]


@pytest.mark.django_db
def test_a_trace_without_elements_offers_none(project, tmp_path, annotator):
    import_folder(project, write_trace(tmp_path / "plain", elements=None))
    trace = Trace.objects.get(external_id="plain")
    annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator)
    assert [s["elements"] for s in workspace_payload(annotation=annotation, lease=None)["steps"]] == [[], []]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("elements", "message"),
    [
        ({"box": SAVE}, "elements must be a list"),
        ([{"box": [1, 2, 3]}], "element 1: a box must be [x1, y1, x2, y2]"),
        ([{"box": SAVE}, "x"], "element 2 must be an object"),
        ([{"box": SAVE, "label": 7}], "element 1's label must be a string"),
    ],
)
def test_malformed_elements_refuse_the_trace_with_the_reason(project, tmp_path, elements, message):
    job = import_pixels(project, write_trace(tmp_path / "bad", elements=elements))
    assert not Trace.objects.filter(external_id="bad").exists()
    assert message in json.dumps(job.errors)


def test_the_rule_flags_a_click_that_hits_no_element():
    def step(index, text, boxes):
        return rules.RuleStep(
            index=index, action_text=text, actions=rules.grammar.parse_actions(text), element_boxes=boxes
        )

    steps = [
        step(1, "click(start_box='(200,100)')", [tuple(SAVE)]),  # on Save
        step(2, "click(start_box='(950,450)')", [tuple(SAVE), tuple(FIELD)]),  # on nothing
        step(3, "click(start_box='(950,450)')", []),  # the source recorded no elements: no hint
        step(4, "type(content='x')", [tuple(SAVE)]),  # no point
    ]
    flags = rules.step_flags(steps, convention="screen-pixels")
    assert [[f["code"] for f in s] for s in flags] == [[], ["off_element"], [], []]
    assert flags[1][0]["message"] == (
        "click at (950, 450) hits none of the 2 elements the source recorded on this screen: check its grounding"
    )
    assert rules.flags_suspicion(flags[1]) == rules.FLAG_WEIGHTS["off_element"]


@pytest.mark.django_db
def test_a_rules_job_flags_the_recorded_click_beside_every_element(project, tmp_path, lead):
    job = import_pixels(project, write_trace(tmp_path / "miss", elements=[{"box": SAVE}, {"box": FIELD}]))
    assert job.status == "succeeded", job.errors
    run = prescoring.prescore_job_run(
        job_id=prescoring.prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False).pk
    )
    assert run.status == "succeeded", run.message
    flags = {s.step.index: [f["code"] for f in s.flags] for s in StepSuggestion.objects.filter(job=run)}
    # Step 1 clicks Save (200, 100); step 2 clicks (950, 450), beside both elements: read in the trace's pixels.
    assert "off_element" not in flags[1]
    assert "off_element" in flags[2]
