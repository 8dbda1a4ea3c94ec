"""On-policy alternatives end to end, with a tiny Qwen2-VL whose replies parse
(prescoring.tiny's speaking checkpoint: saved to a directory and loaded like real weights) and a real `celery worker` process on the
broker the run names (SQLite + filesystem broker by default; PostgreSQL + Redis with DATABASE_URL / REDIS_URL):
an annotator asks for alternatives at τ through the API, the gpu-queue job samples them, the API serves the parsed
actions the page draws as markers, the annotator takes one (its thought and action start the correction) and marks
another wrong, submits; a lead accepts; an export job on the worker writes the on-policy DPO pair into the bundle."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from django.test import Client

from annotation.models import AlternativeMark, AlternativesJob, Annotation
from annotation.selectors import model_extent
from exports.models import ExportJob
from studio.permissions import Role
from tests.conftest import wait_for
from tests.fixtures_export import REPLIES, make_trace
from traces import prompting

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl  # noqa: E402
from prescoring.assess import parse_model_reply  # noqa: E402
from prescoring.services import image_inputs  # noqa: E402
from prescoring.tiny import Reply, build_tiny_qwen2vl  # noqa: E402

THOUGHT = "The Display item is in the middle of the list."
PREFIX = f"Thought: {THOUGHT}\nAction: "
RIGHT = "click(start_box='<|box_start|>(500,500)<|box_end|>')"
WRONG = "click(start_box='<|box_start|>(200,700)<|box_end|>')"
REPLY = Reply(thought=PREFIX, actions=(RIGHT, WRONG))
POINTS = {REPLY.text(RIGHT): [500, 500], REPLY.text(WRONG): [200, 700]}


@pytest.fixture(scope="module")
def speaking_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("speaking") / "agent-r1", reply=REPLY)


@pytest.mark.django_db
def test_the_speaking_checkpoint_writes_its_replies_through_the_product_s_loading_and_sampling(
    speaking_model, project, annotator
):
    trace = make_trace(project, replies=REPLIES, external_id="speaking")
    prompt = prompting.build_state_messages(trace, 3, project=project)
    request = qwen2vl.ScoreRequest(1, prompting.to_chat_messages(prompt), image_inputs(prompt), "")
    scorer = qwen2vl.load_scorer(speaking_model)
    seen = []
    hook = scorer.model.model.visual.register_forward_hook(lambda _m, args, _out: seen.append(args[0].shape))
    try:
        replies = scorer.sample_replies(request, k=8, temperature=1.0, top_p=0.9, max_new_tokens=12, seed=0)
    finally:
        hook.remove()
    # The screenshots of the prompt went through the vision tower (their features only reach the reply through
    # attention, which the speaking weights silence).
    assert len(request.images) >= 2 and seen and seen[0][0] > 0
    # Each reply is one of the two, three tokens long (thought piece, action, <|im_end|>), and both are drawn.
    assert {text for text, _ in replies} == set(POINTS)
    assert {n for _, n in replies} == {3}
    for text, _ in replies:
        actions = [a.to_json() for a in parse_model_reply(text)]
        assert actions == [{"type": "click", "args": {"start_box": POINTS[text]}, "style": "box"}]
    # Greedy decoding (pre-scoring's generation) follows the same chain and takes the first action.
    scored = scorer.score([qwen2vl.ScoreRequest(2, request.messages, request.images, "")], max_new_tokens=8)[0]
    assert scored.error is None and scored.generated == REPLY.text(RIGHT)


@pytest.mark.worker
def test_request_job_markers_take_wrong_submit_accept_export_on_a_real_worker(
    celery_worker, role_groups, make_user, api_client, speaking_model, settings
):
    from traces.services import project_create

    settings.PRESCORE_MODEL_DIR = str(speaking_model)
    annotator, lead, engineer = (
        make_user("ann-e2e", Role.ANNOTATOR),
        make_user("lead-e2e", Role.LEAD),
        make_user("eng-e2e", Role.ENGINEER),
    )
    project = project_create(name="On-policy", members=[annotator, lead, engineer])
    make_trace(project, replies=REPLIES, external_id="e2e")
    work, review, engineering = api_client(annotator), api_client(lead), api_client(engineer)

    # The annotator takes the trace and marks the first error at step 3, as the workspace does.
    claim = work.post(f"/api/projects/{project.pk}/next-trace/", {}, format="json")
    assert claim.status_code == 200, claim.json()
    pk = claim.json()["annotation"]["id"]
    saved = work.put(f"/api/annotations/{pk}/draft/", {"version": 1, "verdict": "error", "tau": 3}, format="json")
    assert saved.status_code == 200, saved.json()
    version = saved.json()["version"]

    # "Ask the model": a job on the gpu queue, run by the worker process.
    url = f"/api/annotations/{pk}/alternatives/"
    asked = work.post(url, {"k": 4, "seed": 0}, format="json")
    assert asked.status_code == 202, asked.json()
    assert asked.json()["job"]["status"] == "queued" and asked.json()["alternatives"] == []
    job_id = asked.json()["job"]["id"]
    job = wait_for(
        lambda: AlternativesJob.objects.filter(pk=job_id, status__in=["succeeded", "failed"]).first(),
        timeout=180,
        message="the alternatives job",
    )
    log = "".join(celery_worker.log[-80:])
    assert job.status == "succeeded", (job.message, log)
    assert "jobs.alternatives.run" in log and job.message == ("4 alternatives sampled, 4 parsed, 0 kept as text")

    # What the page draws: four parsed replies at step 3, each the checkpoint's click in the project's convention.
    shown = work.get(url).json()
    weights = qwen2vl.weights_sha256(speaking_model)
    assert shown["job"]["status"] == "succeeded" and shown["job"]["step"] == 3
    assert shown["job"]["weights_hash"] == weights and shown["convention"] == project.coordinate_convention
    rows = shown["alternatives"]
    assert [r["number"] for r in rows] == [1, 2, 3, 4] and all(r["parsed"] and r["mark"] == "" for r in rows)
    for row in rows:
        assert row["actions"] == [{"type": "click", "args": {"start_box": POINTS[row["reply"]]}, "style": "box"}]
    assert {tuple(r["actions"][0]["args"]["start_box"]) for r in rows} == {(500, 500), (200, 700)}
    right = next(r for r in rows if r["actions"][0]["args"]["start_box"] == [500, 500])
    wrong = next(r for r in rows if r["actions"][0]["args"]["start_box"] == [200, 700])

    # Take one: its thought and action are the correction's starting point; mark another wrong.
    taken = work.post(f"{url}{right['id']}/mark/", {"verdict": "taken"}, format="json")
    assert taken.status_code == 200, taken.json()
    start = taken.json()["starting_point"]
    assert start == {
        "thought": THOUGHT,
        "action": prompting.render_actions("click(start_box='(500,500)')", project=project),
    }
    marked = work.post(f"{url}{wrong['id']}/mark/", {"verdict": "wrong"}, format="json")
    assert marked.status_code == 200, marked.json()
    assert {r["id"]: r["mark"] for r in marked.json()["alternatives"]} == {
        r["id"]: {right["id"]: "taken", wrong["id"]: "wrong"}.get(r["id"], "") for r in rows
    }

    # The page fills the thought and the editor from the taken one (the served action) and saves them as a draft.
    fields = {
        "version": version,
        "error_category": project.error_categories[0],
        "corrected_thought": start["thought"],
        "reflection_thought": "I clicked the wrong item; go back.",
        "editor_state": {
            "corrected": right["actions"][0],
            "reflection": {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"},
        },
    }
    saved = work.put(f"/api/annotations/{pk}/draft/", fields, format="json")
    assert saved.status_code == 200, saved.json()
    submitted = work.post(f"/api/annotations/{pk}/submit/", {"version": saved.json()["version"]}, format="json")
    assert submitted.status_code == 200 and submitted.json()["status"] == "submitted", submitted.json()
    # The lead's review page shows the alternative marked wrong on o_τ beside the original and corrected actions,
    # and lists both marks.
    page = Client()
    page.force_login(lead)
    html = page.get(f"/reviews/{pk}/").content.decode()
    markers = json.loads(re.search(r'<script id="error-markers" type="application/json">(.*?)</script>', html, re.S)[1])
    assert [(m["kind"], m["label"]) for m in markers] == [
        ("original", "original"),
        ("corrected", "corrected"),
        ("alt-wrong", f"wrong alternative {wrong['number']}"),
    ]
    # In the one form every page gets: the point in the project's convention, with its screenshot's extent.
    shot = Annotation.objects.get(pk=pk).trace.steps.get(index=3).screenshot
    assert markers[2]["start"] == [200, 700]
    assert markers[2]["extent"] == model_extent(project, shot.width, shot.height)
    assert markers[2]["text"] == "click(start_box='(200,700)')"
    listed = re.findall(r'<li class="alternative-mark" data-verdict="(\w+)">.*?alternative (\d+) of', html, re.S)
    assert listed == [("wrong", str(wrong["number"])), ("taken", str(right["number"]))]

    accepted = review.post(f"/api/reviews/{pk}/accept/", {}, format="json")
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted", accepted.json()
    annotation = Annotation.objects.get(pk=pk)
    assert annotation.corrected_action == prompting.render_actions("click(start_box='(500,500)')", project=project)
    assert AlternativeMark.objects.filter(annotation=annotation).count() == 2

    # The export runs on the worker too; the bundle is downloaded as a client does.
    started = engineering.post(
        f"/api/projects/{project.pk}/exports/",
        {"format": "trl", "options": {"validation_fraction": 0}},
        format="json",
    )
    assert started.status_code == 202, started.json()
    export = wait_for(
        lambda: (j := ExportJob.objects.get(pk=started.json()["id"])).is_finished and j,
        timeout=120,
        message="the export job",
    )
    assert export.status == "succeeded", (export.message, "".join(celery_worker.log[-40:]))
    download = engineering.get(f"/api/exports/{export.pk}/bundle")
    assert download.status_code == 200
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
        records = [
            json.loads(line) for line in bundle.read("data/dpo/train-00000-of-00001.jsonl").decode().splitlines()
        ]
    on_policy = [r for r in records if r["kind"] == "dpo_on_policy"]
    assert len(on_policy) == 1
    pair = on_policy[0]
    assert pair["chosen"][0]["content"][0]["text"] == prompting.render_target(
        THOUGHT, "click(start_box='(500,500)')", project=project
    )
    assert pair["rejected"][0]["content"][0]["text"] == prompting.render_target(
        THOUGHT, "click(start_box='(200,700)')", project=project
    )
    recorded = next(r for r in records if r["kind"] == "dpo")  # the recorded wrong step 3 against the same correction
    assert pair["prompt"] == recorded["prompt"] and pair["images"] == recorded["images"]
    assert pair["chosen"] == recorded["chosen"]
    assert manifest["on_policy"] == {
        "kind": "dpo_on_policy",
        "pairs": 1,
        "checkpoints": [{"model_name": job.model_name, "weights_hash": weights, "pairs": 1}],
    }
    assert job.model_name == "agent-r1"
