"""A real Celery worker (queues default,gpu) runs rule and model scoring jobs end to end; with the tiny checkpoint
that speaks the grammar (prescoring.tiny), the model's greedy action comes back parsed and compared with the recorded
one, on either greedy decoding path.

With REDIS_URL set the broker is Redis; otherwise kombu's filesystem broker (SQLite runs)."""

from __future__ import annotations

import pytest

from prescoring.models import PrescoreJob, StepSuggestion
from studio.permissions import Role
from tests.conftest import wait_for
from tests.factories import native_trace_folder
from traces import grammar

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl, services  # noqa: E402
from prescoring.tiny import Reply, build_tiny_qwen2vl  # noqa: E402

pytestmark = pytest.mark.worker


@pytest.fixture(scope="module")
def worker_tiny_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-worker") / "model")


def finished(job_id):
    job = PrescoreJob.objects.get(pk=job_id)
    return job if job.is_finished else None


def test_worker_runs_rule_and_model_jobs(celery_worker, project, lead, tmp_path, worker_tiny_model):
    from traces import services as trace_services

    native_trace_folder(tmp_path / "src" / "w1", external_id="w1", steps=3, size=(448, 252))
    job = trace_services.import_job_create(
        project=project, user=None, upload_name=str(tmp_path / "src"), server_path=True, fmt="native", enqueue=False
    )
    assert trace_services.import_job_run(job_id=job.pk).status == "succeeded"

    rules_job = services.prescore_job_create(project=project, user=lead, scorer="rules")
    model_job = services.prescore_job_create(
        project=project, user=lead, scorer="qwen2vl", model_path=str(worker_tiny_model), settings={"max_new_tokens": 8}
    )
    rules_done = wait_for(lambda: finished(rules_job.pk), timeout=120, message="rules job")
    model_done = wait_for(lambda: finished(model_job.pk), timeout=300, message="model job")
    log = "".join(celery_worker.log[-60:])
    assert rules_done.status == "succeeded", (rules_done.message, log)
    assert model_done.status == "succeeded", (model_done.message, log)
    assert model_done.steps_scored == 3 and model_done.progress_done == 3
    assert model_done.weights_hash == qwen2vl.weights_sha256(worker_tiny_model)
    assert StepSuggestion.objects.filter(job=model_done, loglik_sum__isnull=False).count() == 3
    assert StepSuggestion.objects.filter(job=rules_done).count() == 3
    assert "jobs.prescore.run" in log and "jobs.prescore.shard" in log


SPOKEN = Reply()  # its greedy reply: Thought: … Action: click(start_box='<|box_start|>(500,500)<|box_end|>')


@pytest.fixture(scope="module")
def speaking_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("speaking-worker") / "agent-r1", reply=SPOKEN)


@pytest.fixture(params=[False, True], ids=["dynamic-decode", "static-decode"])
def decoding_worker(request, transactional_db, monkeypatch):
    """The process's worker, started with greedy decoding on the path the deployment's setting names."""
    monkeypatch.setenv("STUDIO_PRESCORE_STATIC_DECODE", "1" if request.param else "0")
    return request.getfixturevalue("celery_worker")


def test_the_model_s_greedy_action_comes_back_parsed_from_a_job_on_a_worker(
    request, decoding_worker, role_groups, make_user, api_client, tmp_path, speaking_model
):
    from traces import services as trace_services
    from traces.models import Trace
    from traces.services import project_create

    lead = make_user("lead-greedy", Role.LEAD)
    project = project_create(name="Greedy", members=[lead])
    recorded = ["click(start_box='<|box_start|>(500,500)<|box_end|>')", "click(start_box='(100,200)')"]
    native_trace_folder(tmp_path / "src" / "g1", external_id="g1", steps=2, size=(448, 252), actions=recorded)
    job = trace_services.import_job_create(
        project=project, user=None, upload_name=str(tmp_path / "src"), server_path=True, fmt="native", enqueue=False
    )
    assert trace_services.import_job_run(job_id=job.pk).status == "succeeded"
    trace = Trace.objects.get(project=project)

    client = api_client(lead)
    started = client.post(
        f"/api/projects/{project.pk}/prescore/",
        {"scorer": "qwen2vl", "model_path": str(speaking_model), "settings": {"max_new_tokens": 16}},
        format="json",
    )
    assert started.status_code == 202, started.json()
    done = wait_for(lambda: finished(started.json()["id"]), timeout=240, message="the model job")
    log = "".join(decoding_worker.log[-60:])
    assert done.status == "succeeded", (done.message, log)
    assert "jobs.prescore.shard" in log
    decoding = "static" if request.node.callspec.params["decoding_worker"] else "dynamic"
    assert f"loaded {speaking_model.resolve()} on cpu (float32, {decoding} greedy decoding)" in log, log

    shown = client.get(f"/api/traces/{trace.pk}/suggestions/").json()
    steps = shown["scorers"]["qwen2vl"]["steps"]
    assert [s["index"] for s in steps] == [1, 2]
    click = [{"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}]
    for step in steps:
        assert step["model_action"] == SPOKEN.text()
        assert step["model_action_parsed"] == click
        # The recorded replies are ones the model does not write: each costs at least the chain's margin.
        assert step["loglik_sum"] < -20
    # Step 1 recorded the model's own click; step 2 one a distance away (over the screen's diagonal).
    width, height = 448, 252
    x, y = grammar.to_screen_pixels((100, 200), convention=project.coordinate_convention, width=width, height=height)
    expected = round(((width / 2 - x) ** 2 + (height / 2 - y) ** 2) ** 0.5 / (width**2 + height**2) ** 0.5, 6)
    assert (steps[0]["agrees"], steps[0]["click_distance"]) == (True, 0.0)
    assert steps[1]["agrees"] is False and steps[1]["click_distance"] == pytest.approx(expected, abs=1e-6)
    # The model's disagreement at step 2 makes it the more suspicious one.
    assert steps[1]["suspicion"] > steps[0]["suspicion"]
