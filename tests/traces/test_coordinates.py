"""Coordinates are a property of the trace: real traces recorded in screen pixels, imported into
projects of every convention, are drawn where the agent clicked and exported in the project's convention at the
pixel the recorded action meant."""

from __future__ import annotations

import json
import re
import zipfile

import pytest
from django.core.files.storage import default_storage

from annotation.models import Verdict
from annotation.selectors import workspace_payload
from exports import services as export_services
from tests.fixtures_export import accepted_annotation
from traces import grammar, services
from traces.models import Step, Trace

pytestmark = pytest.mark.django_db
POINT = re.compile(r"\((\d+(?:\.\d+)?),(\d+(?:\.\d+)?)\)")


def import_dart(project, realtraces, **options):
    folder = realtraces / "dart-gui" / "examples" / "osworld_trajectory"
    job = services.import_job_create(
        project=project,
        user=None,
        upload_name=str(folder),
        original_name="dart",
        server_path=True,
        enqueue=False,
        **options,
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    return Trace.objects.get(project=project)


@pytest.mark.parametrize("convention", grammar.CONVENTIONS)
def test_dart_gui_points_land_on_the_recorded_pixel_in_every_convention(
    project, realtraces, annotator, lead, engineer, convention
):
    project.coordinate_convention = convention
    project.save()
    trace = import_dart(project, realtraces)
    assert trace.coordinate_convention == grammar.SCREEN_PIXELS  # the source says so (UI-TARS on a 1920x1080 screen)
    steps = list(Step.objects.filter(trace=trace).select_related("screenshot").order_by("index"))
    # click(1916,44) on the 1920-wide screen is inside: no step is flagged off the screen.
    assert [s.off_screen_point for s in steps] == [""] * 15 and trace.import_job.off_screen_steps == 0
    recorded_px = {}
    for step in steps:
        action = grammar.Action.from_json(step.parsed_actions[0]) if step.parsed_actions else None
        if action is not None and action.point():
            recorded_px[step.index] = action.point()  # screen pixels, as the agent meant them
    assert recorded_px

    # The workspace draws the recorded action in the project's convention, at the recorded pixel.
    from annotation.models import Annotation

    annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator)
    payload = workspace_payload(annotation=annotation, lease=None)
    for row in payload["steps"]:
        if row["index"] in recorded_px and row["actions"]:
            shot = row["shot"]
            x, y = grammar.Action.from_json(row["actions"][0]).point()
            px = (x / shot["extent"][0] * shot["width"], y / shot["extent"][1] * shot["height"])
            rx, ry = recorded_px[row["index"]]
            assert abs(px[0] - rx) <= 2 and abs(px[1] - ry) <= 2, (convention, row["index"], px, (rx, ry))
    annotation.delete()

    accepted_annotation(trace, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    job = export_services.export_job_create(
        project=project,
        user=engineer,
        fmt="trl",
        enqueue=False,
        options={"include_error_free": True, "validation_fraction": 0.0},
    )
    job = export_services.export_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    with default_storage.open(job.bundle_name) as handle, zipfile.ZipFile(handle) as bundle:
        records = [
            json.loads(line) for line in bundle.read("data/sft/train-00000-of-00001.jsonl").decode().splitlines()
        ]
    width, height = steps[0].screenshot.width, steps[0].screenshot.height
    checked = 0
    for number, record in enumerate(records, start=1):
        target = record["completion"][0]["content"][0]["text"]
        found = POINT.search(target)
        if not found or number not in recorded_px:
            continue
        point = (float(found.group(1)), float(found.group(2)))
        px = grammar.to_screen_pixels(
            point, convention=convention, width=width, height=height, max_pixels=project.max_pixels
        )
        assert 0 <= px[0] <= width and 0 <= px[1] <= height, (convention, number, point)
        rx, ry = recorded_px[number]
        assert abs(px[0] - rx) <= 2 and abs(px[1] - ry) <= 2, (convention, number, px, (rx, ry))
        checked += 1
    assert checked >= 5  # every pointed step of the trace (8 of its 15)


def test_an_explicit_convention_at_import_wins(project, realtraces):
    trace = import_dart(project, realtraces, coordinates=grammar.RELATIVE_1000)
    assert trace.coordinate_convention == grammar.RELATIVE_1000


def test_unknown_convention_is_refused(project, tmp_path):
    with pytest.raises(ValueError, match="coordinates must be one of"):
        services.import_job_create(
            project=project, user=None, upload_name=str(tmp_path), server_path=True, enqueue=False, coordinates="inches"
        )
