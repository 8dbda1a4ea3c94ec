"""Process and RL signals from the same annotation: the `prm` bundle (TRL's stepwise layout with the
screenshots) and the `verl` bundle (verl's RL layout, a rule reward that reads replies with the project's one
grammar). Both load with `datasets` as they are and are byte-identical for the same inputs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.db import transaction

from annotation.models import Verdict
from exports import services, uitars_reward
from studio.demo import user_create_with_role
from studio.permissions import Role
from tests.conftest import REPO, TEST_PASSWORD
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace
from traces import prompting
from traces.models import Trace
from traces.services import project_create

pytestmark = pytest.mark.django_db

# (external id, verdict, τ, corrected action, reflection action): one correction of each kind of argument the
# reward scores (a point, two points, a text, keys, a direction), against REPLIES' recorded steps.
ANSWERS = [
    ("click", Verdict.ERROR, 3, "click(start_box='(300,260)')", "hotkey(key='alt left')"),
    ("type", Verdict.ERROR, 2, "type(content='display settings\\n')", "click(start_box='(480,120)')"),
    ("scroll", Verdict.ERROR, 4, "scroll(start_box='(500,500)', direction='up')", ""),
    ("hotkey", Verdict.ERROR, 1, "hotkey(key='ctrl esc')", "type(content='display\\n')"),
    ("drag", Verdict.ERROR, 3, "drag(start_box='(100,100)', end_box='(400,100)')", ""),
    ("clean", Verdict.NO_ERROR, None, "", ""),
]
UNPARSED = ["Thought: Open it.\nAction: Click [16]", *REPLIES[1:]]
SCREEN = (1280, 720)  # the reward's radius is in screenshot pixels: a screen of a real size


@pytest.fixture(scope="module")
def annotated_world(django_db_setup, django_db_blocker):
    """The role users (as conftest makes them) and a project with one answer of each kind on its own trace, made
    once for the module in a transaction rolled back after it; each test (``db``) runs in a savepoint of it and
    rolls back to it."""
    with django_db_blocker.unblock(), transaction.atomic():
        users = {
            "annotator": user_create_with_role(username="ann", password=TEST_PASSWORD, role=Role.ANNOTATOR),
            "lead": user_create_with_role(username="leader", password=TEST_PASSWORD, role=Role.LEAD),
            "engineer": user_create_with_role(username="eng", password=TEST_PASSWORD, role=Role.ENGINEER),
        }
        annotator, lead = users["annotator"], users["lead"]
        project = project_create(name="Annotated project", members=list(users.values()))
        for n, (name, verdict, tau, corrected, reflection) in enumerate(ANSWERS):
            trace = make_trace(project, replies=REPLIES, external_id=name, image_seed=n + 1, size=SCREEN)
            accepted_annotation(
                trace,
                annotator=annotator,
                reviewer=lead,
                verdict=verdict,
                tau=tau,
                corrected_thought=f"Do {name} instead." if corrected else "",
                corrected_action=corrected,
                reflection_thought="Recover." if reflection else "",
                reflection_action=reflection,
            )
        # A recorded step before τ that did not parse: never labelled correct, never in an RL prompt's history.
        trace = make_trace(project, replies=UNPARSED, external_id="unparsed", image_seed=9, size=SCREEN)
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=3,
            corrected_thought="Click Display.",
            corrected_action="click(start_box='(310,250)')",
        )
        yield {**users, "project": project}
        transaction.set_rollback(True)


@pytest.fixture
def annotator(annotated_world, db):
    return annotated_world["annotator"]


@pytest.fixture
def lead(annotated_world, db):
    return annotated_world["lead"]


@pytest.fixture
def engineer(annotated_world, db):
    return annotated_world["engineer"]


@pytest.fixture
def project(annotated_world, db):
    """An empty project of the world's users, as conftest's ``project`` makes it."""
    return project_create(
        name="Test project", members=[annotated_world[role] for role in ("annotator", "lead", "engineer")]
    )


@pytest.fixture
def annotated(annotated_world, db):
    return annotated_world["project"]


def export(project, fmt: str, out: Path, **options) -> dict:
    services.export_to_path(project=project, user=None, fmt=fmt, options={"validation_fraction": 0, **options}, out=out)
    folder = out.with_suffix("")
    with zipfile.ZipFile(out) as bundle:
        bundle.extractall(folder)
    return json.loads((folder / "manifest.json").read_text())


def load(kind: str, path: Path, cache: Path):
    import datasets

    return datasets.load_dataset(kind, data_files=str(path), split="train", cache_dir=str(cache))


def test_prm_labels_each_step_up_to_tau_with_its_screen(annotated, tmp_path):
    manifest = export(annotated, "prm", tmp_path / "prm.zip")
    folder = tmp_path / "prm"
    records = load(
        "json", folder / "data/prm/train-00000-of-00001.jsonl", tmp_path / "cache"
    )  # as it is, with datasets
    assert manifest["counts"]["by_kind"] == {"prm": len(ANSWERS)}
    assert manifest["counts"]["skipped_by_reason"] == {"unparsed_target": 1}
    assert manifest["labels"]["false"].startswith("the step is the first error")
    names = {t.pk: t.external_id for t in Trace.objects.filter(project=annotated)}
    answers = {name: (verdict, tau) for name, verdict, tau, *_ in ANSWERS}
    seen = set()
    for record in records:
        name = names[record["trace_id"]]
        verdict, tau = answers[name]
        seen.add(name)
        expected = [True] * len(REPLIES) if verdict == Verdict.NO_ERROR else [True] * (tau - 1) + [False]
        assert record["labels"] == expected, name
        assert len(record["completions"]) == len(record["images"]) == len(expected)
        assert all((folder / path).is_file() for path in record["images"])
        assert len(set(record["images"])) == len(record["images"])  # o_1..o_τ, each step its own screen
        # the steps as the prompt builder renders them: canonical (box tokens per project), the recorded thought
        assert (
            record["completions"][0]
            == "Thought: Open the start menu.\nAction: click(start_box='<|box_start|>(10,990)<|box_end|>')"
        )
        assert record["prompt"] == prompting.instruction_text(annotated, "Open the display settings")
        assert record["system"] == annotated.system_prompt and record["annotation_version"] == 3
    assert seen == set(answers)
    readme = (folder / "README.md").read_text()
    assert "text only" in readme and "#7133" in readme and "vision" in readme


def test_trl_has_no_prm_trainer_as_the_readme_says():
    # The README and docs/formats.md say the TRL this project pins has no trl.experimental.prm; when an upgrade
    # brings one back, this fails and the text must change.
    import trl

    assert trl.__version__ == "1.16.0"
    assert importlib.util.find_spec("trl.experimental.prm") is None


def test_verl_rows_follow_verls_layout_from_the_one_prompt_builder(annotated, tmp_path):
    manifest = export(annotated, "verl", tmp_path / "verl.zip")
    export(annotated, "trl", tmp_path / "trl.zip")
    folder = tmp_path / "verl"
    rows = load(
        "parquet", folder / "data/rl/train-00000-of-00001.parquet", tmp_path / "cache"
    )  # as it is, with datasets
    corrected = sum(1 for *_, action, _ in ANSWERS if action)
    reflected = sum(1 for *_, reflection in ANSWERS if reflection)
    assert manifest["counts"]["by_kind"] == {"error_correction": corrected, "post_reflection": reflected}
    assert manifest["counts"]["skipped_by_reason"] == {"unparsed_history": 1}  # the unparsed trace's s_τ
    assert manifest["reward"]["module"] == "uitars_reward.py" and manifest["reward"]["radius_px"] == 28
    assert {"uitars_reward.py", "uitars_actions.py", "data/rl/train-00000-of-00001.parquet"} <= set(manifest["files"])
    trl = {}
    for line in (tmp_path / "trl" / "data/sft/train-00000-of-00001.jsonl").read_text().splitlines():
        record = json.loads(line)
        trl[(record["trace_id"], record["kind"])] = record
    names = {t.pk: t.external_id for t in Trace.objects.filter(project=annotated)}
    answers = {name: (tau, corrected, reflection) for name, _, tau, corrected, reflection in ANSWERS}
    from PIL import Image

    for index, row in enumerate(rows):
        info = row["extra_info"]
        tau, corrected, reflection = answers[names[info["trace_id"]]]
        assert row["data_source"] == f"trace_studio/{info['kind']}" and row["ability"] == "gui_agent"
        assert info["index"] == index and info["split"] == "train" and info["annotation_version"] == 3
        assert info["step"] == (tau if info["kind"] == "error_correction" else tau + 1)
        truth = row["reward_model"]["ground_truth"]
        assert row["reward_model"]["style"] == "rule"
        action = corrected if info["kind"] == "error_correction" else reflection
        assert truth["action"] == prompting.render_actions(action, project=annotated)
        assert truth["coordinate_convention"] == annotated.coordinate_convention
        assert (truth["width"], truth["height"]) == SCREEN and truth["max_pixels"] == annotated.max_pixels
        # verl's messages: string content with <image> in place, one per image, in order
        assert all(isinstance(m["content"], str) for m in row["prompt"])
        assert sum(m["content"].count("<image>") for m in row["prompt"]) == len(row["images"]) > 0
        for image in row["images"]:
            assert Image.open(__import__("io").BytesIO(image["bytes"])).size == SCREEN
            assert image["max_pixels"] == annotated.max_pixels and image["min_pixels"] == 100 * 28 * 28
        # the same prompt as the TRL bundle's sample for that step: one prompt builder
        twin = trl[(info["trace_id"], info["kind"])]
        assert [m["role"] for m in row["prompt"]] == [m["role"] for m in twin["prompt"]]
        assert [m["content"] for m in row["prompt"]] == [
            "".join(c["text"] if c["type"] == "text" else "<image>" for c in m["content"]) for m in twin["prompt"]
        ]
        assert [image["path"] for image in row["images"]] == twin["images"]
        assert info["answer"] == twin["completion"][0]["content"][0]["text"]
        assert (info["recorded_reply"] is None) == (info["kind"] == "post_reflection")


def test_the_bundles_reward_scores_corrections_1_and_the_wrong_steps_below(annotated, tmp_path):
    export(annotated, "verl", tmp_path / "verl.zip")
    folder = tmp_path / "verl"
    assert (folder / "uitars_actions.py").read_bytes() == (REPO / "traces" / "grammar.py").read_bytes()
    assert (folder / "uitars_reward.py").read_bytes() == (REPO / "exports" / "uitars_reward.py").read_bytes()
    # As verl loads it: by file path, in a process that has neither Django nor the project on its path.
    script = """
import importlib.util, json, sys
import pyarrow.parquet as pq
spec = importlib.util.spec_from_file_location("custom_reward", "uitars_reward.py")
reward = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reward)
scores = []
for row in pq.read_table("data/rl/train-00000-of-00001.parquet").to_pylist():
    info, truth = row["extra_info"], row["reward_model"]["ground_truth"]
    scores.append({
        "kind": info["kind"],
        "answer": reward.compute_score(row["data_source"], info["answer"], truth, extra_info=info),
        "recorded": None if info["recorded_reply"] is None
        else reward.compute_score(row["data_source"], info["recorded_reply"], truth, extra_info=info),
    })
leaked = sorted(name for name in sys.modules if name.split(".")[0] in ("django", "traces", "exports", "studio"))
print(json.dumps({"scores": scores, "leaked": leaked, "grammar": reward.grammar.__name__}))
"""
    result = subprocess.run(
        [sys.executable, "-I", "-c", script], cwd=folder, capture_output=True, text=True, check=True, timeout=120
    )
    out = json.loads(result.stdout)
    assert out["leaked"] == [] and out["grammar"] == "uitars_actions"
    assert json.loads((folder / "manifest.json").read_text())["reward"]["recorded_step_scores_1"] == []
    scores = out["scores"]
    assert len(scores) == 8 and all(s["answer"] == 1.0 for s in scores)  # every accepted correction
    wrong = [s["recorded"] for s in scores if s["kind"] == "error_correction"]
    assert len(wrong) == 5 and all(score < 1.0 for score in wrong), wrong  # every original wrong step


def test_reward_partial_credit_radius_and_parse_failure():
    truth = {
        "action": "click(start_box='<|box_start|>(500,500)<|box_end|>')",
        "thought": "",
        "coordinate_convention": "relative-1000",
        "width": 1920,
        "height": 1080,
        "max_pixels": 12845056,
        "radius_px": 28,
    }
    score = uitars_reward.score_reply
    assert score("Action: click(start_box='(500,500)')", truth) == 1.0
    # (510, 500) is 19.2 px to the right on 1920 px: inside 28 px; (515, 500) is 28.8 px: outside
    assert score("Thought: there.\nAction: click(start_box='(510,500)')", truth) == 1.0
    assert score("Action: click(start_box='(515,500)')", truth) == 0.5
    assert score("Action: click(start_box='(515,500)')", truth, radius_px=30) == 1.0
    assert score("Action: left_double(start_box='(500,500)')", truth) == 0.0
    assert score("Action: click(start_box='(500,500)')\n\nwait()", truth) == 0.5  # an extra action costs
    assert score("I would click the button.", truth) == 0.0  # does not parse
    typed = dict(truth, action="type(content='abc\\n')")
    assert score("Action: type(content='abc\\n')", typed) == 1.0
    assert score("Action: type(content='abc')", typed) == 0.5  # no Enter: not the same text
    keys = dict(truth, action="hotkey(key='ctrl c')")
    assert score("Action: hotkey(key='CTRL C')", keys) == 1.0 and score("Action: hotkey(key='c ctrl')", keys) == 0.5
    # smart-resize-pixels: points are mapped onto the screenshot by the grammar before measuring
    resized = dict(truth, coordinate_convention="smart-resize-pixels", action="click(start_box='(966,546)')")
    assert score("Action: click(start_box='(966,546)')", resized) == 1.0
    assert score("Action: click(start_box='(1000,546)')", resized) == 0.5


@pytest.mark.parametrize("fmt", ["prm", "verl"])
def test_same_inputs_give_the_same_bytes(annotated, tmp_path, fmt):
    export(annotated, fmt, tmp_path / "a.zip", validation_fraction=0.5, split_seed=7)
    export(annotated, fmt, tmp_path / "b.zip", validation_fraction=0.5, split_seed=7)
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


@pytest.mark.parametrize("fmt", ["prm", "verl"])
def test_an_incremental_bundle_holds_only_the_new_answers(annotated, annotator, lead, tmp_path, fmt):
    first = services.export_to_path(
        project=annotated, user=None, fmt=fmt, options={"validation_fraction": 0}, out=tmp_path / "first.zip"
    )
    trace = make_trace(annotated, replies=REPLIES, external_id="later", image_seed=20, size=SCREEN)
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        corrected_thought="Type the full name.",
        corrected_action="type(content='display settings')",
    )
    manifest = export(annotated, fmt, tmp_path / "since.zip", since_export=first.pk)
    assert [s["annotation_id"] for s in manifest["sources"]] == [trace.annotations.get().pk]
    assert manifest["counts"]["by_kind"] == ({"prm": 1} if fmt == "prm" else {"error_correction": 1})


@pytest.mark.parametrize("fmt", ["prm", "verl"])
def test_the_api_and_the_page_offer_both_formats(annotated, engineer, api_client, client, fmt):
    created = api_client(engineer).post(f"/api/projects/{annotated.pk}/exports/", {"format": fmt}, format="json")
    assert created.status_code == 202, created.content
    services.export_job_run(job_id=created.json()["id"])
    status = api_client(engineer).get(f"/api/exports/{created.json()['id']}/").json()
    assert status["status"] == "succeeded" and status["counts"]["by_kind"]
    client.force_login(engineer)
    page = client.get("/exports/").content.decode()
    assert f'<option value="{fmt}">' in page


def test_a_wrong_step_the_reward_cannot_tell_from_its_correction_is_listed(project, annotator, lead, tmp_path):
    trace = make_trace(project, replies=REPLIES, external_id="near", size=SCREEN)
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought="The same button, a little to the right.",
        corrected_action="click(start_box='(505,300)')",  # 6.4 px from the recorded (500,300) on 1280 px
    )
    manifest = export(project, "verl", tmp_path / "near.zip")
    assert manifest["reward"]["recorded_step_scores_1"] == [{"trace_id": trace.pk, "step": 3}]
    assert "`reward.recorded_step_scores_1`: 1 in this bundle" in (tmp_path / "near" / "README.md").read_text()


REAL_SOURCES = {
    "dart-gui": ("dart-gui/examples/osworld_trajectory", ""),
    "screenagent": ("screenagent/data", ""),
    "mobile-agent": ("mobile-agent-v1/results", "mobile-agent"),
}


@pytest.mark.heavy
@pytest.mark.parametrize("convention", ["relative-1000", "smart-resize-pixels"])
@pytest.mark.parametrize("source", sorted(REAL_SOURCES))
def test_real_traces_corrections_score_1_and_their_recorded_steps_less(
    project, realtraces, annotator, lead, source, convention, tmp_path
):
    """Real traces (recorded in their own convention) in a project of another: each trace's first step with a point is
    marked wrong and corrected 100 px to the side. The bundle's reward, as verl loads it, gives every correction 1 and
    every recorded step less; the prm bundle labels steps 1..τ and loads with datasets."""
    from traces import grammar
    from traces import services as trace_services
    from traces.models import Step

    project.coordinate_convention = convention
    project.save()
    folder, fmt = REAL_SOURCES[source]
    job = trace_services.import_job_create(
        project=project, user=None, upload_name=str(realtraces / folder), server_path=True, enqueue=False, fmt=fmt
    )
    assert trace_services.import_job_run(job_id=job.pk).status == "succeeded"
    taus = {}
    for trace in Trace.objects.filter(project=project):
        if not trace.instruction.strip():
            trace.instruction = "Finish the task."
            trace.save(update_fields=["instruction"])
        steps = list(Step.objects.filter(trace=trace).select_related("screenshot").order_by("index"))
        for step in steps:
            actions = [grammar.Action.from_json(a) for a in step.parsed_actions]
            if step.parse_error or step.off_screen_point or step.screenshot is None or len(actions) != 1:
                break  # a step before τ must be one a PRM may label correct
            point = actions[0].point()
            if point is None:
                continue
            shot = step.screenshot
            size = {"width": shot.width, "height": shot.height, "max_pixels": project.max_pixels}
            x, y = grammar.to_screen_pixels(point, convention=trace.coordinate_convention, **size)
            moved = (x + 100 if x + 100 < shot.width else x - 100, y)
            corrected = grammar.Action(
                actions[0].type,
                tuple(
                    (
                        name,
                        grammar.from_screen_pixels(moved, convention=convention, **size) if name == "start_box" else v,
                    )
                    for name, v in actions[0].args
                ),
            )
            accepted_annotation(
                trace,
                annotator=annotator,
                reviewer=lead,
                verdict=Verdict.ERROR,
                tau=step.index,
                corrected_thought="The element beside it.",
                corrected_action=grammar.render_action(corrected),
            )
            taus[trace.pk] = step.index
            break
    assert taus, "no real trace has a step with a point to correct"

    export(project, "verl", tmp_path / "verl.zip")
    script = """
import importlib.util, json
import pyarrow.parquet as pq
spec = importlib.util.spec_from_file_location("custom_reward", "uitars_reward.py")
reward = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reward)
out = []
for row in pq.read_table("data/rl/train-00000-of-00001.parquet").to_pylist():
    info, truth = row["extra_info"], row["reward_model"]["ground_truth"]
    out.append([info["trace_id"], reward.compute_score(row["data_source"], info["answer"], truth),
                reward.compute_score(row["data_source"], info["recorded_reply"], truth)])
print(json.dumps(out))
"""
    run = subprocess.run(
        [sys.executable, "-I", "-c", script], cwd=tmp_path / "verl", capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    scores = json.loads(run.stdout)
    assert sorted(trace_id for trace_id, *_ in scores) == sorted(taus)
    assert all(answer == 1.0 and recorded < 1.0 for _, answer, recorded in scores), scores

    export(project, "prm", tmp_path / "prm.zip")
    records = load("json", tmp_path / "prm" / "data/prm/train-00000-of-00001.jsonl", tmp_path / "cache")
    assert {r["trace_id"]: len(r["labels"]) for r in records} == taus
    assert all(r["labels"][-1] is False and all(r["labels"][:-1]) for r in records)


def test_a_drawn_element_box_is_the_ground_truth_of_the_target_point(project, annotator, lead, tmp_path):
    from traces import grammar

    trace = make_trace(project, replies=REPLIES, external_id="boxed", size=SCREEN)
    action = grammar.parse_action("click(start_box='(300,260)')")
    box = [280, 240, 330, 280]
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought="Click Display.",
        corrected_action=grammar.render_action(action, box_tokens=project.box_tokens),
        editor_state={"corrected": {**action.to_json(), grammar.TARGET_BOX: box}},
    )
    manifest = export(project, "verl", tmp_path / "boxed.zip")
    assert manifest["reward"]["rows_with_box"] == 1
    (row,) = load("parquet", tmp_path / "boxed" / "data/rl/train-00000-of-00001.parquet", tmp_path / "cache")
    truth = row["reward_model"]["ground_truth"]
    assert truth["box"] == box
    # (325, 275): inside the box, 32 px from the point (more than the radius); (300, 285): 18 px away, below the box
    assert uitars_reward.score_reply("Action: click(start_box='(325,275)')", truth) == 1.0
    assert uitars_reward.score_reply("Action: click(start_box='(300,285)')", truth) == 0.5
    assert uitars_reward.score_reply("Action: click(start_box='(300,285)')", dict(truth, box=None)) == 1.0
    assert uitars_reward.score_reply(row["extra_info"]["answer"], truth) == 1.0
