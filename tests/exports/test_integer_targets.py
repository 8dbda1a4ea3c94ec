"""A model learns only numbers it emits, and a recorded step is rendered one way.

* Every point of every bundle format is an integer in relative-1000, smart-resize-pixels and screen-pixels projects:
  an annotator's box centre (rounded when the check answers and when the draft is stored), a point converted from the
  trace's convention, and points stored with decimals before (rounded at export and counted in the manifest).
* Pre-scoring, the alternatives' prompts and exports render a recorded step through ``prompting.render_step`` with
  the trace's convention (a required keyword): the rendered point is on the recorded pixel in every convention.
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import pyarrow.parquet as pq
import pytest
from PIL import Image

from annotation.models import Annotation, Verdict
from annotation.services import action_check
from exports import services as export_services
from prescoring.services import step_score_request
from tests.fixtures_export import accepted_annotation
from traces import grammar, prompting
from traces.importers.base import ImageRef, ImportedStep, ImportedTrace
from traces.services import trace_import_one

pytestmark = pytest.mark.django_db

SIZE = (1366, 768)
# Any number in a coordinate spelling: "(x,y)", "(x1,y1,x2,y2)", "<point>x y</point>".
COORDINATES = re.compile(r"\((-?[\d.]+(?:,\s*-?[\d.]+){1,3})\)|<point>([^<]*)</point>")
FORMATS = ("trl", "llamafactory", "parquet", "prm", "verl")


def _png(seed: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", SIZE, ((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256)).save(out, "PNG")
    return out.getvalue()


def _trace(project, external_id: str, replies: list[str], *, recorded_in: str | None, seed: int):
    steps = [
        ImportedStep(screenshot=ImageRef(f"s{i}.png", lambda i=i: _png(seed * 10 + i)), raw_response=reply)
        for i, reply in enumerate(replies, start=1)
    ]
    imported = ImportedTrace(
        external_id=external_id,
        instruction="Open the display settings",
        source="native",
        steps=steps,
        metadata={"coordinate_convention_hint": recorded_in} if recorded_in else {},
        final_screenshot=ImageRef("final.png", lambda: _png(seed * 10 + 9)),
    )
    return trace_import_one(project=project, imported=imported).trace


def _numbers(text: str) -> list[str]:
    found = []
    for match in COORDINATES.finditer(text):
        found += re.split(r"[,\s]+", (match.group(1) or match.group(2)).strip())
    return found


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _records(folder, name: str) -> list[dict]:
    path = folder / name
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines()]
    if name.endswith(".json"):
        return json.loads(path.read_text())
    table = pq.read_table(path)
    keep = [c for c in table.column_names if c not in ("images",)]
    return table.select(keep).to_pylist()


def three_kinds_of_points(project, annotator, lead):
    """Two traces: one recorded with decimals in the project's convention and answered with decimals stored before
    the editor rounded (a point and a box); one recorded in relative-1000 (converted for the other projects) and
    answered through the editor's check with a box whose centre is a tie."""
    legacy = _trace(
        project,
        "legacy",
        [
            "Thought: Open the menu.\nAction: click(start_box='(10,700)')",
            "Thought: Type.\nAction: type(content='display\\n')",
            "Thought: Open the item.\nAction: click(start_box='(289.5,369.5)')",
            "Thought: Scroll.\nAction: scroll(start_box='(500,500)', direction='down')",
        ],
        recorded_in=None,
        seed=1,
    )
    editor = {
        "type": "click",
        "args": {"start_box": [300.5, 260.5]},
        "style": "box",
        "target_box": [290.5, 250, 310, 271.5],
    }
    accepted_annotation(
        legacy,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought="Click Display.",
        corrected_action=grammar.render_action(grammar.Action.from_json(editor), box_tokens=project.box_tokens),
        editor_state={"corrected": editor, "reflection": None},
        reflection_thought="Wrong panel; go back.",
        reflection_action="click(start_box='(20.5,30.5)')",
    )
    converted = _trace(
        project,
        "converted",
        [
            "Thought: Open the menu.\nAction: click(start_box='(513,28)')",
            "Thought: Drag.\nAction: drag(start_box='(101,203)', end_box='(333,777)')",
            "Thought: Click.\nAction: click(start_box='(700,900)')",
        ],
        recorded_in=grammar.RELATIVE_1000,
        seed=2,
    )
    # The workspace's check: a box without a point gives its centre, rounded (what the page then shows).
    box = [401, 450, 600, 551] if project.coordinate_convention != grammar.SCREEN_PIXELS else [401, 150, 600, 251]
    check = action_check(
        annotation=Annotation(trace=converted, project=project),
        slot="corrected",
        action_json={"type": "click", "args": {}, "style": "box", "target_box": box},
        tau=3,
    )
    assert check["valid"], check
    centre = [500, 500] if project.coordinate_convention != grammar.SCREEN_PIXELS else [500, 200]
    assert check["action"]["args"]["start_box"] == centre  # (500.5, 500.5) / (500.5, 200.5): ties to even
    assert f"({centre[0]},{centre[1]})" in check["canonical"]
    accepted_annotation(
        converted,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought="Click the right item.",
        corrected_action=check["canonical"],
        editor_state={"corrected": check["action"], "reflection": None},
    )
    return project


@pytest.mark.parametrize("convention", grammar.CONVENTIONS)
def test_every_point_of_every_format_is_an_integer(project, annotator, lead, tmp_path, convention):
    project.coordinate_convention = convention
    project.save()
    three_kinds_of_points(project, annotator, lead)
    for fmt in FORMATS:
        out = tmp_path / f"{fmt}.zip"
        export_services.export_to_path(
            project=project,
            user=None,
            fmt=fmt,
            options={"include_valid_prefix": True, "validation_fraction": 0.0},
            out=out,
        )
        folder = tmp_path / fmt
        with zipfile.ZipFile(out) as archive:
            archive.extractall(folder)
        manifest = json.loads((folder / "manifest.json").read_text())
        data = [name for name in manifest["files"] if name.startswith("data/") and "/images/" not in name]
        assert data, fmt
        numbers, boxes = [], []
        for name in data:
            for record in _records(folder, name):
                for text in _strings({k: v for k, v in record.items() if k != "target_box"}):
                    numbers += _numbers(text)
                boxes += [record["target_box"]] if record.get("target_box") else []
                truth = (record.get("reward_model") or {}).get("ground_truth") or {}
                boxes += [truth["box"]] if truth.get("box") else []
        assert numbers, fmt
        decimals = [n for n in numbers if not re.fullmatch(r"-?\d+", n)]
        assert not decimals, (fmt, convention, decimals[:10])
        assert (bool(boxes) or fmt == "prm") and all(float(v).is_integer() for box in boxes for v in box), (fmt, boxes)
        if fmt in ("trl", "llamafactory"):
            # The legacy answer's point and box, its post-reflection point and its recorded step 3.
            assert manifest["counts"]["rounded_points"] == 4, (fmt, manifest["counts"])


def test_a_recorded_step_is_rendered_only_with_its_traces_convention(project):
    trace = _trace(project, "t", ["Action: click(start_box='(10,20)')"], recorded_in=None, seed=3)
    step = trace.steps.get()
    with pytest.raises(TypeError, match="convention"):
        prompting.render_step(step, project=project)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="convention"):
        prompting.step_actions(step, project=project)  # type: ignore[call-arg]


RECORDED_PX = [(700, 21.5), (250.25, 600.75), (1365, 767)]  # pixels a recorded point means, per step


def _recorded_text(px, *, convention: str) -> str:
    x, y = px
    if convention != grammar.SCREEN_PIXELS:
        x, y = grammar.from_screen_pixels(px, convention=convention, width=SIZE[0], height=SIZE[1])
    return f"click(start_box='({x},{y})')"


@pytest.mark.parametrize("recorded_in", grammar.CONVENTIONS)
@pytest.mark.parametrize("convention", grammar.CONVENTIONS)
def test_pre_scoring_alternatives_and_exports_render_the_recorded_point(project, convention, recorded_in):
    project.coordinate_convention = convention
    project.save()
    replies = [
        f"Thought: Step {n}.\nAction: {_recorded_text(px, convention=recorded_in)}"
        for n, px in enumerate(RECORDED_PX, 1)
    ]
    trace = _trace(project, "t", replies, recorded_in=recorded_in, seed=4)
    assert trace.coordinate_convention == recorded_in
    steps = list(trace.steps.select_related("screenshot").order_by("index"))

    def pixel(text: str) -> tuple[float, float]:
        action = grammar.parse_response(text).actions[0]
        assert all(isinstance(v, int) for v in action.point()), text
        return grammar.to_screen_pixels(action.point(), convention=convention, width=SIZE[0], height=SIZE[1])

    def recorded(step) -> tuple[float, float]:
        point = grammar.Action.from_json(step.parsed_actions[0]).point()
        return grammar.to_screen_pixels(point, convention=recorded_in, width=SIZE[0], height=SIZE[1])

    # Half a unit of the coarser of the two conventions, in pixels (relative-1000 on 1366 px: 0.68 px).
    tolerance = 1.4
    for step in steps:
        # Pre-scoring scores this reply; the exports write the same text (the one renderer).
        request = step_score_request(trace, step, project=project, steps=steps)
        px, want = pixel(request.target), recorded(step)
        assert abs(px[0] - want[0]) <= tolerance and abs(px[1] - want[1]) <= tolerance, (step.index, px, want)
    # The alternatives' prompt at the last step (and pre-scoring's): the history turns carry the same points.
    state = prompting.build_state_messages(trace, len(steps) + 1, project=project, steps=steps)
    history = [m.text for m in state.messages if m.role == "assistant"]
    assert len(history) == len(steps)
    for step, text in zip(steps, history):
        px, want = pixel(text), recorded(step)
        assert abs(px[0] - want[0]) <= tolerance and abs(px[1] - want[1]) <= tolerance, (step.index, px, want)
