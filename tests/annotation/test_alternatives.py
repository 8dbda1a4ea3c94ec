"""On-policy alternatives with the tiny random-weight Qwen2-VL saved to disk and loaded like real weights:
k replies from one prefill, stored per (step, weights hash, settings) and re-used, unparsed replies kept as text, the
blind rule, no model → 400 naming the setting, a marked-wrong alternative → a dpo_on_policy pair in the TRL bundle.

Runs on the database the run names (SQLite by default; DATABASE_URL for PostgreSQL)."""

from __future__ import annotations

import json
import zipfile

import pytest

from annotation.alternatives import services
from annotation.models import (
    AlternativeMark,
    AlternativesJob,
    Annotation,
    AnnotationStatus,
    AuditEvent,
    StepAlternative,
    Verdict,
)
from annotation.services import annotation_transition
from exports import services as export_services
from studio.permissions import Role
from tests.conftest import wait_for
from tests.fixtures_alternatives import store_alternatives
from tests.fixtures_export import REPLIES, make_trace
from traces import prompting

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl  # noqa: E402
from prescoring.services import image_inputs  # noqa: E402
from prescoring.tiny import build_tiny_qwen2vl  # noqa: E402

CORRECTED = "click(start_box='(420,260)')"
# What a checkpoint could reply at s_τ: another click than the correction's, in the grammar.
WRONG_REPLY = "Thought: Open the sound panel.\nAction: click(start_box='(510,300)')"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-alt") / "agent-r1")


@pytest.fixture
def configured(settings, tiny_model):
    settings.PRESCORE_MODEL_DIR = str(tiny_model)
    settings.ALTERNATIVES_MAX_NEW_TOKENS = 12  # random weights rarely stop early; short replies keep it quick
    return tiny_model


@pytest.fixture
def draft(project, annotator):
    trace = make_trace(project, replies=REPLIES, external_id="alt")
    return Annotation.objects.create(trace=trace, project=project, annotator=annotator, verdict=Verdict.ERROR, tau=3)


class ForwardCount:
    """Counts the decoder's runs over the prompt (more than one position) and the one-token decoding steps."""

    def __init__(self, scorer):
        self.prefills: list[tuple] = []
        self.decodes: list[tuple] = []

        def hook(_module, _args, kwargs):
            shape = tuple(kwargs["inputs_embeds"].shape)
            (self.prefills if shape[1] > 1 else self.decodes).append(shape)

        self.handle = scorer.model.model.language_model.register_forward_pre_hook(hook, with_kwargs=True)

    def close(self):
        self.handle.remove()


def state_request(annotation: Annotation, index: int):
    prompt = prompting.build_state_messages(annotation.trace, index, project=annotation.project)
    return qwen2vl.ScoreRequest(1, prompting.to_chat_messages(prompt), image_inputs(prompt), "")


@pytest.mark.django_db
def test_k_replies_come_from_one_prefill_and_a_seed_repeats_them(configured, draft):
    scorer = qwen2vl.load_scorer(configured)
    request = state_request(draft, 3)
    count = ForwardCount(scorer)
    try:
        replies = scorer.sample_replies(request, k=4, temperature=1.0, top_p=0.9, max_new_tokens=12, seed=7)
    finally:
        count.close()
    assert len(replies) == 4
    # One prefill of the whole prompt, batch 1; every later run is one new token for each of the 4 samples.
    assert len(count.prefills) == 1 and count.prefills[0][0] == 1 and count.prefills[0][1] > 100
    assert count.decodes and all(shape[:2] == (4, 1) for shape in count.decodes)
    assert len(count.decodes) <= 11
    # Sampling, not greedy: the 4 random-weight replies differ; the same seed gives the same replies.
    assert len({text for text, _ in replies}) > 1
    again = scorer.sample_replies(request, k=4, temperature=1.0, top_p=0.9, max_new_tokens=12, seed=7)
    assert again == replies
    other = scorer.sample_replies(request, k=4, temperature=1.0, top_p=0.9, max_new_tokens=12, seed=8)
    assert other != replies


@pytest.mark.django_db
def test_replies_are_stored_per_step_weights_and_settings_and_reused(configured, draft, annotator, api_client):
    client = api_client(annotator)
    url = f"/api/annotations/{draft.pk}/alternatives/"
    answer = client.post(url, {}, format="json")
    assert answer.status_code == 202, answer.json()
    first = AlternativesJob.objects.get(pk=answer.json()["job"]["id"])
    assert first.step.index == 3 and first.settings["k"] == 4 and first.queue_name() == "gpu"
    # Asked again while queued: the same job.
    assert client.post(url, {}, format="json").json()["job"]["id"] == first.pk

    scorer = qwen2vl.load_scorer(configured)
    count = ForwardCount(scorer)
    try:
        services.alternatives_job_run(job_id=first.pk)
        first.refresh_from_db()
        assert first.status == "succeeded" and not first.reused, first.message
        assert len(count.prefills) == 1
        stored = list(StepAlternative.objects.filter(step=first.step).order_by("number"))
        assert [a.number for a in stored] == [1, 2, 3, 4]
        assert {a.weights_hash for a in stored} == {scorer.weights_hash}

        second = AlternativesJob.objects.get(pk=client.post(url, {}, format="json").json()["job"]["id"])
        assert second.pk != first.pk
        services.alternatives_job_run(job_id=second.pk)
        second.refresh_from_db()
        assert second.status == "succeeded" and second.reused, second.message
        assert len(count.prefills) == 1  # nothing sampled the second time
        assert StepAlternative.objects.filter(step=first.step).count() == 4

        # Another seed is another key: sampled and stored beside the first four.
        third = AlternativesJob.objects.get(pk=client.post(url, {"seed": 3}, format="json").json()["job"]["id"])
        services.alternatives_job_run(job_id=third.pk)
        third.refresh_from_db()
        assert not third.reused and len(count.prefills) == 2
        assert StepAlternative.objects.filter(step=first.step).count() == 8
    finally:
        count.close()

    # The random-weight replies do not parse: listed as text, no actions to draw, and they cannot be marked.
    body = client.get(url).json()
    assert body["model"]["configured"] and body["job"]["id"] == third.pk and body["convention"]
    assert len(body["alternatives"]) == 4
    for row in body["alternatives"]:
        assert row["parsed"] is False and "actions" not in row and isinstance(row["text"], str)
    refused = client.post(f"{url}{body['alternatives'][0]['id']}/mark/", {"verdict": "wrong"}, format="json")
    assert refused.status_code == 409 and "did not parse" in refused.json()["detail"]


@pytest.mark.django_db
def test_no_model_answers_400_naming_the_setting(settings, draft, annotator, api_client):
    settings.PRESCORE_MODEL_DIR = ""
    client = api_client(annotator)
    url = f"/api/annotations/{draft.pk}/alternatives/"
    answer = client.post(url, {}, format="json")
    assert answer.status_code == 400 and "STUDIO_PRESCORE_MODEL_DIR" in answer.json()["detail"]
    shown = client.get(url).json()
    assert shown["model"]["configured"] is False and "STUDIO_PRESCORE_MODEL_DIR" in shown["model"]["problem"]
    assert not AlternativesJob.objects.exists()


@pytest.mark.django_db
def test_a_blind_project_refuses_annotators_and_others_annotations_are_not_theirs(
    configured, draft, project, annotator, lead, make_user, api_client
):
    url = f"/api/annotations/{draft.pk}/alternatives/"
    other = make_user("ann2", Role.ANNOTATOR)
    project.memberships.create(user=other)
    assert api_client(other).get(url).status_code == 404
    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    for method in ("get", "post"):
        refused = getattr(api_client(annotator), method)(url, {}, format="json")
        assert refused.status_code == 403, refused.content
        assert refused.json()["detail"] == "You cannot see model pre-scoring in this project."
    # Leads see pre-scoring in a blind project, and reach their annotators' annotations.
    assert api_client(lead).post(url, {}, format="json").status_code == 202


@pytest.mark.django_db
def test_a_wrong_alternative_becomes_an_on_policy_pair_in_the_trl_bundle(
    configured, project, annotator, lead, api_client, tmp_path
):
    trace = make_trace(project, replies=REPLIES, external_id="pair")
    # Marked while the annotator edits it (draft), accepted after.
    annotation = Annotation.objects.create(
        trace=trace,
        project=project,
        annotator=annotator,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought="Click Display.",
        corrected_action=CORRECTED,
    )
    # The replies as a checkpoint wrote them at s_τ (tests/annotation/test_alternatives_e2e.py samples them from a checkpoint).
    texts = [WRONG_REPLY, "Thought: Click Display.\nAction: click(start_box='(420,260)')", "no action here"]
    rows = store_alternatives(annotation, 3, texts, model_dir=str(configured))
    client = api_client(annotator)
    url = f"/api/annotations/{annotation.pk}/alternatives/"
    shown = client.get(url).json()["alternatives"]
    assert [r["parsed"] for r in shown] == [True, True, False]
    assert shown[0]["actions"][0]["type"] == "click" and "text" in shown[2] and "actions" not in shown[2]
    taken = client.post(f"{url}{rows[1].pk}/mark/", {"verdict": "taken"}, format="json").json()
    assert taken["starting_point"] == {
        "thought": "Click Display.",
        "action": prompting.render_actions("click(start_box='(420,260)')", project=project),
    }
    assert client.post(f"{url}{rows[0].pk}/mark/", {"verdict": "wrong"}, format="json").status_code == 200
    assert AlternativeMark.objects.filter(annotation=annotation).count() == 2
    # Taking another takes the first back.
    client.post(f"{url}{rows[0].pk}/mark/", {"verdict": "taken"}, format="json")
    assert list(AlternativeMark.objects.filter(annotation=annotation).values_list("verdict", flat=True)) == ["taken"]
    client.post(f"{url}{rows[0].pk}/mark/", {"verdict": "wrong"}, format="json")
    client.post(f"{url}{rows[1].pk}/mark/", {"verdict": "wrong"}, format="json")
    annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
    # The lead's review, page and API alike, lists what was marked: both wrong, at τ, with their checkpoint.
    review = api_client(lead).get(f"/api/reviews/{annotation.pk}/").json()
    marked = review["alternatives_marked"]
    assert [(m["id"], m["verdict"], m["step"]) for m in marked] == [(rows[0].pk, "wrong", 3), (rows[1].pk, "wrong", 3)]
    assert marked[0]["thought"] == "Open the sound panel." and marked[0]["weights_hash"] == "ab" * 32
    assert [(e["kind"], e["to_status"]) for e in review["history"] if e["kind"] == "transition"] == [
        ("transition", "submitted")
    ]
    wrong_markers = [m for m in review["error_markers"] if m["kind"] == "alt-wrong"]
    assert [m["label"] for m in wrong_markers] == ["wrong alternative 1", "wrong alternative 2"]
    annotation_transition(annotation=annotation, to=AnnotationStatus.ACCEPTED, actor=lead)

    out = tmp_path / "bundle.zip"
    export_services.export_to_path(project=project, user=None, fmt="trl", options={"validation_fraction": 0}, out=out)
    with zipfile.ZipFile(out) as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
        records = [
            json.loads(line) for line in bundle.read("data/dpo/train-00000-of-00001.jsonl").decode().splitlines()
        ]
    on_policy = [r for r in records if r["kind"] == "dpo_on_policy"]
    assert len(on_policy) == 1  # the second wrong alternative is the correction itself: no pair
    pair = on_policy[0]
    assert pair["chosen"][0]["content"][0]["text"] == prompting.render_target(
        "Click Display.", CORRECTED, project=project
    )
    assert pair["rejected"][0]["content"][0]["text"] == prompting.render_target(
        "Open the sound panel.", "click(start_box='(510,300)')", project=project
    )
    recorded = next(r for r in records if r["kind"] == "dpo")
    assert pair["prompt"] == recorded["prompt"] and pair["images"] == recorded["images"]
    assert manifest["on_policy"] == {
        "kind": "dpo_on_policy",
        "pairs": 1,
        "checkpoints": [{"model_name": "agent-r1", "weights_hash": "ab" * 32, "pairs": 1}],
    }
    assert manifest["counts"]["by_kind"]["dpo_on_policy"] == 1
    assert any(s["kind"] == "dpo_on_policy" and "equals" in s["reason"] for s in manifest["skipped"])


@pytest.mark.worker
def test_a_worker_on_the_gpu_queue_samples_them(
    celery_worker, role_groups, make_user, api_client, tiny_model, settings
):
    from traces.services import project_create

    settings.PRESCORE_MODEL_DIR = str(tiny_model)
    annotator = make_user("ann-alt", Role.ANNOTATOR)
    project = project_create(name="Alternatives", members=[annotator])
    trace = make_trace(project, replies=REPLIES, external_id="w")
    annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator, tau=2)
    url = f"/api/annotations/{annotation.pk}/alternatives/"
    client = api_client(annotator)
    answer = client.post(url, {"k": 3}, format="json")
    assert answer.status_code == 202, answer.json()
    job_id = answer.json()["job"]["id"]
    job = wait_for(
        lambda: AlternativesJob.objects.filter(pk=job_id, status__in=["succeeded", "failed"]).first(),
        timeout=120,
        message="the alternatives job",
    )
    log = "".join(celery_worker.log[-80:])
    assert job.status == "succeeded", (job.message, log)
    assert "jobs.alternatives.run" in log
    body = client.get(url).json()
    assert body["job"]["status"] == "succeeded" and body["job"]["step"] == 2 and len(body["alternatives"]) == 3
    assert body["job"]["weights_hash"] == qwen2vl.weights_sha256(tiny_model)


@pytest.mark.django_db
def test_marks_are_audited_edits_that_keep_the_version_and_stop_once_submitted(
    configured, draft, annotator, lead, api_client
):
    rows = store_alternatives(draft, 3, [WRONG_REPLY], model_dir=str(configured))
    client = api_client(annotator)
    url = f"/api/annotations/{draft.pk}/alternatives/{rows[0].pk}/mark/"
    version = draft.version
    assert client.post(url, {"verdict": "wrong"}, format="json").status_code == 200
    assert client.post(url, {"verdict": "wrong"}, format="json").status_code == 200  # the same mark again
    assert client.post(url, {"verdict": "taken"}, format="json").status_code == 200
    # No draft field changed: the version stands, and a save based on it goes through.
    draft.refresh_from_db()
    assert draft.version == version
    saved = client.put(
        f"/api/annotations/{draft.pk}/draft/",
        {"version": version, "corrected_thought": "Click Display."},
        format="json",
    )
    assert saved.status_code == 200 and saved.json()["version"] == version + 1
    # Each change is an audited edit (the repeated mark changed nothing: no event).
    edits = list(AuditEvent.objects.filter(annotation=draft, kind="edit").order_by("pk"))
    marks = [e.changes["alternative_marks"] for e in edits if "alternative_marks" in e.changes]
    key = str(rows[0].pk)
    assert marks == [[{}, {key: "wrong"}], [{key: "wrong"}, {key: "taken"}]]
    assert all(e.actor_id == annotator.pk for e in edits)

    # Submitted: what the lead reviews (and exports read) no longer moves, for the annotator or the lead.
    annotation_transition(annotation=draft, to=AnnotationStatus.SUBMITTED, actor=annotator)
    for user in (annotator, lead):
        refused = api_client(user).post(url, {"verdict": "wrong"}, format="json")
        assert refused.status_code == 409, refused.content
        assert refused.json()["detail"] == "This annotation is submitted: its alternatives can no longer be marked."
    assert list(AlternativeMark.objects.filter(annotation=draft).values_list("verdict", flat=True)) == ["taken"]
