"""The weekly round's loop end to end, through the API and a real worker: round 1's traces pushed as a runner pushes them,
annotated and accepted, exported; a checkpoint trained on it registered and evaluated (tiny random-weight Qwen2-VL,
the gpu queue); round 2 pushed, annotated, exported; the round dashboard shows both rounds, the diff of the two
bundles lists exactly round 2's annotations, and the leads' receiver got every event, signed."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Annotation, Verdict
from tests.conftest import wait_for
from tests.factories import native_trace_folder
from tests.fixtures_export import accepted_annotation
from tests.fixtures_webhooks import Receiver
from traces.models import Round, Trace
from webhooks import signing
from webhooks.services import webhook_create

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring.tiny import build_tiny_qwen2vl  # noqa: E402

pytestmark = pytest.mark.worker
EVENTS = ["bundle.ready", "evaluation.done", "round.annotated"]


def _push(api, project, folder: Path, round_name: str):
    document = json.loads((folder / "trace.json").read_text())
    shots = []
    for name in [s["screenshot"] for s in document["steps"]] + [document["final_screenshot"]]:
        upload = io.BytesIO((folder / name).read_bytes())
        upload.name = name
        shots.append(upload)
    answer = api.post(
        f"/api/projects/{project.pk}/traces/",
        {"round": round_name, "trace": json.dumps(document), "screenshots": shots},
        format="multipart",
    )
    assert answer.status_code == 201, answer.content
    return Trace.objects.get(pk=answer.json()["id"])


def _accept(trace, *, annotator, lead, n: int) -> Annotation:
    return accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        error_category=trace.project.error_categories[n % len(trace.project.error_categories)],
        corrected_thought=f"Open the display settings instead ({n}).",
        corrected_action=f"click(start_box='<|box_start|>({200 + n * 10},{300 + n * 5})<|box_end|>')",
        reflection_thought="That opened the wrong panel; go back.",
        reflection_action="hotkey(key='alt left')",
    )


def _finished(api, path: str, timeout: float = 240) -> dict:
    job = wait_for(
        lambda: (body := api.get(path).json())["status"] in ("succeeded", "failed", "cancelled") and body,
        timeout=timeout,
        message=path,
    )
    assert job["status"] == "succeeded", job
    return job


def test_two_rounds_from_runner_push_to_checkpoint_evaluation(
    transactional_db, project, annotator, lead, engineer, api_client, loopback_hooks, tmp_path, celery_worker
):
    receiver = Receiver()
    _, secret = webhook_create(project=project, url=receiver.url, events=EVENTS, user=lead)
    lead_api, engineer_api = api_client(lead), api_client(engineer)
    try:
        # Round 1: the round, then two episodes pushed while the agent runs.
        made = lead_api.post(f"/api/projects/{project.pk}/rounds/", {"name": "week 47", "checkpoint": "agent-r0"})
        assert made.status_code == 201, made.content
        first = [
            _push(
                lead_api,
                project,
                native_trace_folder(tmp_path / "r1" / f"ep{n}", external_id=f"r1-ep{n}", steps=3, size=(448, 252)),
                "week 47",
            )
            for n in range(2)
        ]
        round1 = [_accept(trace, annotator=annotator, lead=lead, n=n) for n, trace in enumerate(first)]
        assert Round.objects.get(name="week 47").annotated_at is not None

        created = engineer_api.post(
            f"/api/projects/{project.pk}/exports/",
            {"format": "trl", "options": {"validation_fraction": 0}},
            format="json",
        )
        bundle1 = _finished(engineer_api, f"/api/exports/{created.json()['id']}/")

        # The checkpoint trained on bundle 1, evaluated on round 1's corrections on the gpu queue.
        model = build_tiny_qwen2vl(tmp_path / "models" / "agent-r1")
        started = engineer_api.post(
            f"/api/projects/{project.pk}/evaluations/",
            {"model_dir": str(model), "checkpoint": "agent-r1", "round": "week 47"},
            format="json",
        )
        assert started.status_code == 202, started.content
        evaluation = _finished(engineer_api, f"/api/evaluations/{started.json()['id']}/", timeout=300)
        overall = evaluation["metrics"]["overall"]
        # Each correction gives an error_correction sample, a post_reflection sample and a DPO pair.
        assert overall["samples"] == 6 and overall["pairs"] == 2
        assert 0.0 <= overall["preference_accuracy"] <= 1.0 and overall["nll_corrected"] > 0
        assert list(evaluation["metrics"]["by_round"]) == ["week 47"]

        # Round 2, run by that checkpoint.
        made = lead_api.post(
            f"/api/projects/{project.pk}/rounds/",
            {"name": "week 48", "checkpoint": "agent-r1", "weights_hash": evaluation["weights_hash"]},
        )
        assert made.status_code == 201, made.content
        second = _push(
            lead_api,
            project,
            native_trace_folder(tmp_path / "r2" / "ep0", external_id="r2-ep0", steps=3, size=(448, 252)),
            "week 48",
        )
        round2 = _accept(second, annotator=annotator, lead=lead, n=5)
        created = engineer_api.post(
            f"/api/projects/{project.pk}/exports/",
            {"format": "trl", "options": {"validation_fraction": 0}},
            format="json",
        )
        bundle2 = _finished(engineer_api, f"/api/exports/{created.json()['id']}/")

        # The round dashboard shows both rounds side by side, oldest run first.
        board = lead_api.get(f"/api/projects/{project.pk}/rounds/dashboard/").json()
        rows = {r["name"]: r for r in board["rounds"]}
        assert [r["name"] for r in board["rounds"]] == ["week 47", "week 48"]
        assert rows["week 47"]["traces"] == 2 and rows["week 48"]["traces"] == 1
        assert rows["week 48"]["checkpoint"] == "agent-r1"

        # bundle_diff: exactly round 2's annotation is new; round 1's are unchanged.
        out = io.StringIO()
        call_command("bundle_diff", str(bundle1["id"]), str(bundle2["id"]), "--json", stdout=out)
        diff = json.loads(out.getvalue())
        assert diff["added"] == [{"annotation_id": round2.pk, "version": round2.version}]
        assert diff["changed"] == [] and diff["removed"] == [] and diff["unchanged"] == len(round1)

        # Every event reached the receiver, signed with the secret shown once.
        wanted = {"bundle.ready": 2, "evaluation.done": 1, "round.annotated": 2}

        def got() -> dict:
            seen: dict = {}
            for request in receiver.requests:
                event = request["headers"][signing.EVENT_HEADER]
                seen[event] = seen.get(event, 0) + 1
            return seen

        wait_for(lambda: got() == wanted, timeout=60, message=f"deliveries {wanted}")
        for request in receiver.requests:
            assert signing.verify(
                secret, request["headers"][signing.SIGNATURE_HEADER], request["body"], now=int(time.time())
            )
        announced = [
            json.loads(r["body"])["round"]["name"]
            for r in receiver.requests
            if r["headers"][signing.EVENT_HEADER] == "round.annotated"
        ]
        assert sorted(announced) == ["week 47", "week 48"]
    finally:
        receiver.close()
