"""Checkpoint evaluation on corrections with the tiny random-weight Qwen2-VL, saved to disk and loaded
like real weights: the rows a run stores, the figures from them, the table across checkpoints, the gpu queue.

The service tests run on the database the run names (SQLite by default; DATABASE_URL for PostgreSQL)."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Annotation, Verdict
from evaluation import selectors, services
from evaluation.metrics import NO_CATEGORY, NO_ROUND
from evaluation.models import EvaluationJob, EvaluationSample
from exports.builders import ExportOptions, split_of
from studio.errors import Invalid
from studio.permissions import Role
from tests.conftest import wait_for
from tests.fixtures_export import accepted_annotation, make_trace
from traces import prompting
from traces.services import round_create
from webhooks.models import Delivery, Webhook

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl  # noqa: E402
from prescoring.services import image_inputs  # noqa: E402
from prescoring.tiny import Reply, build_tiny_qwen2vl  # noqa: E402

# A recorded reply far longer than its correction: under a near-uniform random model every token costs about
# log(vocabulary) nats, so the short side is the more likely one by hundreds of nats, whatever the weights.
LONG = (
    "Thought: The settings entry should be somewhere in the list on the left side of the window, below the "
    "account section and above the help section, so I will open the item that looks most like it and then check "
    "the title of the panel that opens to be sure it is the display panel and not the sound panel.\n"
)
SHORT = "Go."


def replies(long_at: int | None) -> list[str]:
    base = [
        "Thought: Open the start menu.\nAction: click(start_box='(10,990)')",
        "Thought: Type.\nAction: type(content='display\\n')",
        "Thought: Open it.\nAction: click(start_box='(500,300)')",
        "Thought: Scroll.\nAction: scroll(start_box='(500,500)', direction='down')",
    ]
    if long_at:
        base[long_at - 1] = LONG + "Action: click(start_box='(500,300)')"
    return base


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-eval") / "agent-r1")


@pytest.fixture(scope="module")
def other_model(tmp_path_factory):
    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-eval-2") / "agent-r2", seed=1)


@pytest.fixture
def corrections(project, annotator, lead):
    """Three accepted corrections: round 1's corrected step is much shorter than the recorded one (the correction
    must win), round 2's much longer (it must lose), and one trace in no round without a post-reflection."""
    first = round_create(project=project, name="r1", checkpoint="agent-r0", actor=lead)
    second = round_create(project=project, name="r2", checkpoint="agent-r1", actor=lead)
    made = {}
    for name, rnd, tau, category, long_at, corrected_thought, reflection in (
        ("a", first, 3, "wrong element", 3, SHORT, True),
        ("b", second, 2, "wrong text", None, LONG.removeprefix("Thought: ").strip(), True),
        ("c", None, 3, "", 3, SHORT, False),
    ):
        trace = make_trace(project, replies=replies(long_at), external_id=name, image_seed=len(made) + 1)
        trace.round = rnd
        trace.save(update_fields=["round"])
        made[name] = accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=tau,
            error_category=category,
            corrected_thought=corrected_thought,
            corrected_action="click(start_box='(420,260)')",
            reflection_thought="I opened the wrong panel; go back." if reflection else "",
            reflection_action="hotkey(key='alt left')" if reflection else "",
        )
    return made


def by_hand(rows: list[EvaluationSample]) -> dict:
    """The figures written out again from the stored rows, without evaluation.metrics."""
    pairs = [r for r in rows if r.kind == "dpo"]
    corrected = [r for r in rows if r.kind == "error_correction"]
    post = [r for r in rows if r.kind == "post_reflection"]
    wins = sum(1 for r in pairs if r.loglik_sum > r.rejected_loglik_sum)
    return {
        "samples": len(rows),
        "pairs": len(pairs),
        "preference_accuracy": wins / len(pairs) if pairs else None,
        "mean_margin": sum(r.loglik_sum - r.rejected_loglik_sum for r in pairs) / len(pairs) if pairs else None,
        "nll_corrected": -sum(r.loglik_sum for r in corrected) / sum(r.n_tokens for r in corrected)
        if corrected
        else None,
        "nll_post_reflection": -sum(r.loglik_sum for r in post) / sum(r.n_tokens for r in post) if post else None,
    }


def assert_figures(stored: dict, expected: dict) -> None:
    for key, value in expected.items():
        assert stored[key] == pytest.approx(value, rel=1e-9, abs=1e-12) if value is not None else stored[key] is None, (
            key,
            stored[key],
            value,
        )


def run(project, user, model_dir, **kwargs) -> EvaluationJob:
    job = services.evaluation_job_create(project=project, user=user, model_dir=str(model_dir), enqueue=False, **kwargs)
    return services.evaluation_job_run(job_id=job.pk)


@pytest.mark.django_db
def test_a_run_stores_a_row_per_sample_and_its_figures_are_those_of_the_rows(
    corrections, project, engineer, tiny_model, other_model
):
    job = run(project, engineer, tiny_model, checkpoint="agent-r1", split="all")
    job.refresh_from_db()
    assert job.status == "succeeded", (job.message, job.errors)
    assert job.weights_hash == qwen2vl.weights_sha256(tiny_model) and job.model_name
    assert job.selection["split"] == "all" and job.selection["round"] is None
    rows = list(EvaluationSample.objects.filter(job=job))
    # a: correction, post-reflection, pair; b: the same; c: correction and pair (no post-reflection).
    assert sorted((r.annotation_id, r.kind) for r in rows) == sorted(
        [(corrections[n].pk, k) for n in "ab" for k in ("dpo", "error_correction", "post_reflection")]
        + [(corrections["c"].pk, k) for k in ("dpo", "error_correction")]
    )
    assert job.samples_total == job.samples_scored == 8 and job.samples_failed == 0
    for row in rows:
        annotation = Annotation.objects.get(pk=row.annotation_id)
        assert row.annotation_version == annotation.version
        assert row.category == annotation.error_category
        assert row.round_id == annotation.trace.round_id
        assert row.n_tokens > 0 and row.loglik_sum < 0
        assert (row.rejected_loglik_sum is not None) == (row.kind == "dpo")
    # A pair's corrected side is the correction's own target at the same s_τ: one score.
    for name in "abc":
        mine = {r.kind: r for r in rows if r.annotation_id == corrections[name].pk}
        assert mine["dpo"].loglik_sum == mine["error_correction"].loglik_sum

    metrics = job.metrics
    assert metrics == selectors.evaluation_metrics(job)
    assert_figures(metrics["overall"], by_hand(rows))
    assert set(metrics["by_category"]) == {"wrong element", "wrong text", NO_CATEGORY}
    for category, figures in metrics["by_category"].items():
        assert_figures(figures, by_hand([r for r in rows if (r.category or NO_CATEGORY) == category]))
    assert set(metrics["by_round"]) == {"r1", "r2", NO_ROUND}
    for name, figures in metrics["by_round"].items():
        assert_figures(figures, by_hand([r for r in rows if (r.round_name or NO_ROUND) == name]))
    # Two of three pairs have the short correction: 2/3 whatever the random weights.
    assert metrics["overall"]["preference_accuracy"] == pytest.approx(2 / 3)

    # A second checkpoint adds a job and rows; the first job's rows and figures stay as they were.
    before = sorted(EvaluationSample.objects.filter(job=job).values_list("id", "loglik_sum"))
    second = run(project, engineer, other_model, checkpoint="agent-r2", split="all")
    assert second.status == "succeeded", second.message
    assert second.weights_hash == qwen2vl.weights_sha256(other_model) != job.weights_hash
    assert EvaluationSample.objects.filter(job=second).count() == 8
    assert sorted(EvaluationSample.objects.filter(job=job).values_list("id", "loglik_sum")) == before
    first_corrected = job.metrics["overall"]["nll_corrected"]
    assert second.metrics["overall"]["nll_corrected"] != first_corrected

    # Both appear in the page's table and its CSV, newest first.
    client = Client()
    client.force_login(engineer)
    page = client.get(f"/projects/{project.pk}/evaluations/")
    assert page.status_code == 200
    html = page.content.decode()
    assert html.index(f'data-evaluation="{second.pk}"') < html.index(f'data-evaluation="{job.pk}"')
    assert job.weights_hash[:12] in html and second.weights_hash[:12] in html
    assert "0.667" in html  # the preference accuracy, as the table writes it
    table = list(csv.DictReader(io.StringIO(client.get(f"/projects/{project.pk}/evaluations.csv").content.decode())))
    overall = {int(r["evaluation"]): r for r in table if r["group"] == "all"}
    assert set(overall) == {job.pk, second.pk}
    assert float(overall[job.pk]["nll_corrected"]) == pytest.approx(first_corrected)
    assert overall[second.pk]["checkpoint"] == "agent-r2"
    assert {r["value"] for r in table if r["group"] == "round" and int(r["evaluation"]) == job.pk} == {
        "r1",
        "r2",
        NO_ROUND,
    }


@pytest.mark.django_db
def test_preference_accuracy_is_one_or_zero_where_the_case_decides_it(corrections, project, lead, tiny_model):
    won = run(project, lead, tiny_model, checkpoint="agent-r1", round_ref="r1")
    lost = run(project, lead, tiny_model, checkpoint="agent-r1", round_ref="r2")
    assert won.selection["split"] == "all" and won.selection["round_name"] == "r1"
    assert won.metrics["overall"]["pairs"] == lost.metrics["overall"]["pairs"] == 1
    assert won.metrics["overall"]["preference_accuracy"] == 1.0 and won.metrics["overall"]["mean_margin"] > 0
    assert lost.metrics["overall"]["preference_accuracy"] == 0.0 and lost.metrics["overall"]["mean_margin"] < 0
    assert list(won.metrics["by_round"]) == ["r1"] and list(lost.metrics["by_round"]) == ["r2"]

    # The stored log-likelihoods are the scorer's own on s_τ built directly, corrected and recorded step.
    scorer = qwen2vl.load_scorer(tiny_model)
    for job, name in ((won, "a"), (lost, "b")):
        annotation = corrections[name]
        trace = annotation.trace
        steps = list(trace.steps.select_related("screenshot").order_by("index"))
        state = prompting.build_state_messages(trace, annotation.tau, project=project, steps=steps)
        chosen = prompting.render_target(annotation.corrected_thought, annotation.corrected_action, project=project)
        rejected = prompting.render_step(
            steps[annotation.tau - 1], project=project, convention=trace.coordinate_convention
        )
        messages, images = prompting.to_chat_messages(state), image_inputs(state)
        direct = scorer.score(
            [qwen2vl.ScoreRequest(k, messages, images, t) for k, t in enumerate((chosen, rejected))], generate=False
        )
        pair = EvaluationSample.objects.get(job=job, kind="dpo")
        assert pair.loglik_sum == pytest.approx(direct[0].loglik_sum, rel=1e-5)
        assert pair.rejected_loglik_sum == pytest.approx(direct[1].loglik_sum, rel=1e-5)
        assert (pair.n_tokens, pair.rejected_n_tokens) == (direct[0].n_tokens, direct[1].n_tokens)
        assert (direct[0].loglik_sum > direct[1].loglik_sum) == (name == "a")


@pytest.mark.django_db
def test_a_run_taken_over_keeps_its_rows_and_scores_the_rest(corrections, project, lead, tiny_model):
    job = run(project, lead, tiny_model, round_ref="r1")
    kept = dict(EvaluationSample.objects.filter(job=job).values_list("kind", "id"))
    assert sorted(kept) == ["dpo", "error_correction", "post_reflection"]
    # Its worker died after storing two rows: the watchdog sends the next attempt.
    EvaluationSample.objects.filter(pk=kept.pop("post_reflection")).delete()
    EvaluationJob.objects.filter(pk=job.pk).update(status="running", heartbeat_at=None, metrics={})
    again = services.evaluation_job_run(job_id=job.pk, attempt=job.attempts + 1)
    assert again.status == "succeeded" and again.attempts == job.attempts + 1
    rows = dict(EvaluationSample.objects.filter(job=job).values_list("kind", "id"))
    assert sorted(rows) == ["dpo", "error_correction", "post_reflection"]
    assert {k: rows[k] for k in kept} == kept  # the stored rows stay; only the missing one is scored again
    again.refresh_from_db()
    assert again.samples_scored == 3 and again.metrics == selectors.evaluation_metrics(again) and not again.errors


@pytest.mark.django_db
def test_a_sample_that_cannot_be_scored_is_named_and_the_rest_are_scored(
    corrections, project, annotator, lead, tiny_model
):
    third = round_create(project=project, name="r3", checkpoint="agent-r2", actor=lead)
    trace = make_trace(project, replies=replies(3), external_id="d", image_seed=9)
    trace.round = third
    trace.save(update_fields=["round"])
    broken = accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought=SHORT,
        corrected_action="click(start_box='(420,260)')",
    )
    shot = trace.steps.get(index=3).screenshot  # o_τ, in s_τ: the correction and the pair cannot be scored
    shot.image.storage.delete(shot.image.name)

    job = run(project, lead, tiny_model, split="all")
    assert job.status == "succeeded", job.message
    assert (job.samples_total, job.samples_scored, job.samples_failed) == (10, 8, 2)
    assert sorted((e["annotation"], e["kind"]) for e in job.errors) == [
        (broken.pk, "dpo"),
        (broken.pk, "error_correction"),
    ]
    assert not EvaluationSample.objects.filter(job=job, annotation_id=broken.pk).exists()
    assert "8 samples scored, 2 failed" in job.message

    only_broken = run(project, lead, tiny_model, round_ref="r3")
    assert only_broken.status == "failed" and "none of the 2 samples could be scored" in only_broken.message


@pytest.mark.django_db
def test_the_validation_split_is_the_bundles(corrections, project, lead, tiny_model):
    traces = {a.trace_id for a in corrections.values()}
    seed = next(
        s
        for s in range(500)
        if 0
        < sum(split_of(t, ExportOptions(validation_fraction=0.5, split_seed=s)) == "validation" for t in traces)
        < 3
    )
    options = ExportOptions(validation_fraction=0.5, split_seed=seed)
    job = run(project, lead, tiny_model, validation_fraction=0.5, split_seed=seed)
    assert job.status == "succeeded", job.message
    assert job.selection["split"] == "validation"
    rows = EvaluationSample.objects.filter(job=job)
    expected = {a.pk for a in corrections.values() if split_of(a.trace_id, options) == "validation"}
    assert {r.annotation_id for r in rows} == expected and {r.split for r in rows} == {"validation"}

    # The same split, named by the export that holds it (the bundle a checkpoint was trained on).
    from exports.services import export_job_create

    export = export_job_create(
        project=project, user=lead, fmt="trl", options={"validation_fraction": 0.5, "split_seed": seed}, enqueue=False
    )
    by_export = services.evaluation_job_create(
        project=project, user=lead, model_dir=str(tiny_model), export_id=export.pk, enqueue=False
    )
    assert {k: by_export.selection[k] for k in ("split", "validation_fraction", "split_seed", "export")} == {
        "split": "validation",
        "validation_fraction": 0.5,
        "split_seed": seed,
        "export": export.pk,
    }
    with pytest.raises(Invalid, match="export"):
        services.evaluation_job_create(
            project=project, user=lead, model_dir=str(tiny_model), export_id=export.pk, split_seed=1, enqueue=False
        )
    with pytest.raises(Invalid, match=f"no export {export.pk + 100}"):
        services.evaluation_job_create(
            project=project, user=lead, model_dir=str(tiny_model), export_id=export.pk + 100, enqueue=False
        )


@pytest.mark.django_db
def test_an_export_that_trained_every_sample_has_no_validation_split_to_evaluate(
    corrections, project, lead, tiny_model
):
    """An export whose plan found fewer than two traces giving samples trains every sample (``train_only``): its
    validation split is empty, so evaluating it on that split would score what the checkpoint trained on."""
    from exports.models import ExportJob
    from exports.services import export_job_create

    export = export_job_create(
        project=project, user=lead, fmt="trl", options={"validation_fraction": 0.5}, enqueue=False
    )
    ExportJob.objects.filter(pk=export.pk).update(options={**export.options, "train_only": True})  # as its plan sets
    with pytest.raises(Invalid, match=f"export {export.pk} trained every sample"):
        services.evaluation_job_create(
            project=project, user=lead, model_dir=str(tiny_model), export_id=export.pk, enqueue=False
        )
    whole = services.evaluation_job_create(
        project=project, user=lead, model_dir=str(tiny_model), export_id=export.pk, split="all", enqueue=False
    )
    assert whole.selection["train_only"] is True
    assert {sample.split for sample in services.selected_samples(whole).samples} == {"train"}


@pytest.mark.django_db
def test_bad_input_is_refused_naming_it(corrections, project, engineer, annotator, api_client, tiny_model, tmp_path):
    url = f"/api/projects/{project.pk}/evaluations/"
    missing = tmp_path / "no-such-checkpoint"
    answer = api_client(engineer).post(url, {"model_dir": str(missing)}, format="json")
    assert answer.status_code == 400 and str(missing) in answer.json()["detail"] and answer.json()["kind"] == "invalid"
    answer = api_client(engineer).post(url, {"model_dir": str(tiny_model), "round": "r9"}, format="json")
    assert answer.status_code == 400 and "r9" in answer.json()["detail"]
    answer = api_client(engineer).post(url, {"model_dir": str(tiny_model), "validation_fraction": 0}, format="json")
    assert answer.status_code == 400 and "validation_fraction" in answer.json()["detail"]
    answer = api_client(engineer).post(url, {"model_dir": str(tiny_model), "settings": {"max_bach": 4}}, format="json")
    assert answer.status_code == 400 and "max_bach" in answer.json()["detail"]
    assert not EvaluationJob.objects.exists()
    assert api_client(annotator).post(url, {"model_dir": str(tiny_model)}, format="json").status_code == 403

    started = api_client(engineer).post(url, {"model_dir": str(tiny_model), "checkpoint": "agent-r1"}, format="json")
    assert started.status_code == 202, started.json()
    body = started.json()
    assert body["checkpoint"] == "agent-r1" and body["selection"]["split"] == "validation"
    assert [j["id"] for j in api_client(engineer).get(url).json()] == [body["id"]]
    assert api_client(engineer).get(f"/api/evaluations/{body['id']}/").json()["status"] == "queued"


@pytest.mark.django_db
def test_the_page_says_what_to_configure_and_offers_the_configured_checkpoints(
    project, engineer, lead, tiny_model, settings
):
    dashboard = Client()
    dashboard.force_login(lead)
    link = f'href="/projects/{project.pk}/evaluations/"'
    assert link in dashboard.get(f"/projects/{project.pk}/dashboard/").content.decode()
    client = Client()
    client.force_login(engineer)
    settings.EVALUATION_CHECKPOINTS_DIR = ""
    page = client.get(f"/projects/{project.pk}/evaluations/").content.decode()
    assert 'id="evaluation-not-configured"' in page and "STUDIO_EVALUATION_CHECKPOINTS_DIR" in page
    settings.EVALUATION_CHECKPOINTS_DIR = str(tiny_model.parent)
    page = client.get(f"/projects/{project.pk}/evaluations/").content.decode()
    assert 'id="evaluation-not-configured"' not in page and f'<option value="{tiny_model.name}">' in page
    # A bare name is looked up in the folder; a wrong one is named back on the page.
    answer = client.post(f"/projects/{project.pk}/evaluations/", {"model_dir": "agent-r7", "split": "all"})
    assert answer.status_code == 400 and "agent-r7" in answer.content.decode()
    answer = client.post(f"/projects/{project.pk}/evaluations/", {"model_dir": tiny_model.name, "split": "all"})
    assert answer.status_code == 302
    assert EvaluationJob.objects.get().model_dir == str(tiny_model)


@pytest.mark.django_db
def test_the_command_evaluates_a_round(corrections, project, tiny_model):
    out = io.StringIO()
    call_command(
        "evaluate_checkpoint",
        "--project",
        project.name,
        "--checkpoint",
        "agent-r1",
        "--model-dir",
        str(tiny_model),
        "--round",
        "r1",
        stdout=out,
    )
    job = EvaluationJob.objects.get()
    assert job.status == "succeeded" and job.checkpoint == "agent-r1"
    assert "preference accuracy 1.000 over 1 pairs" in out.getvalue()
    assert EvaluationSample.objects.filter(job=job).count() == 3


def test_evaluation_goes_to_the_gpu_queue():
    assert EvaluationJob().queue_name() == "gpu"


@pytest.mark.worker
def test_a_worker_on_the_gpu_queue_runs_it_from_the_cli(
    live_server, celery_worker, role_groups, make_user, tmp_path_factory
):
    from studio.security import api_token_issue
    from tests.serving.test_cli import run_cli
    from traces.services import project_create

    annotator, lead = make_user("ann-w", Role.ANNOTATOR), make_user("lead-w", Role.LEAD)
    project = project_create(name="Evaluated", members=[annotator, lead])
    trace = make_trace(project, replies=replies(3), external_id="w")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought=SHORT,
        corrected_action="click(start_box='(420,260)')",
    )
    model = build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny-eval-worker") / "agent-w")
    # Its end is announced to the project's webhooks (a closed port: the delivery is logged, then retried).
    hook = Webhook.objects.create(
        project=project, url="https://127.0.0.1:9/hook", events=["evaluation.done"], secret="s"
    )
    token = api_token_issue(user=lead)
    args = ("evaluate", "--project", project.name, "--checkpoint", "agent-w", "--split", "all")
    refused = run_cli(live_server, token, *args, "--model-dir", str(model.parent / "gone"), check=False)
    assert refused.returncode == 1 and "HTTP 400" in refused.stderr and str(model.parent / "gone") in refused.stderr
    ran = run_cli(live_server, token, *args, "--model-dir", str(model), "--wait")
    assert "preference accuracy: 1.000" in ran.stdout and "pairs: 1" in ran.stdout, ran.stdout
    done = EvaluationJob.objects.get(project=project)
    log = "".join(celery_worker.log[-80:])
    assert done.status == "succeeded", (done.message, log)
    assert "jobs.evaluation.run" in log
    assert done.metrics["overall"]["preference_accuracy"] == 1.0
    assert EvaluationSample.objects.filter(job=done).count() == 2
    listed = run_cli(live_server, token, "evaluations", "--project", str(project.pk))
    assert f"{done.pk}\tagent-w\t{done.weights_hash[:12]}\tsucceeded\t2\t1.000\t1\t" in listed.stdout, listed.stdout
    delivery = wait_for(lambda: Delivery.objects.filter(webhook=hook).first(), timeout=30, message="delivery")
    assert delivery.event == "evaluation.done"
    assert delivery.payload["evaluation"]["weights_hash"] == done.weights_hash
    assert delivery.payload["evaluation"]["overall"]["preference_accuracy"] == 1.0


@pytest.mark.worker
def test_a_worker_s_figures_follow_what_each_checkpoint_writes(
    celery_worker, role_groups, make_user, api_client, tmp_path_factory
):
    """Two checkpoints that speak the grammar (prescoring.tiny): one writes the correction, the other the recorded
    wrong step; the figures must side with each, whatever the targets' lengths."""
    from traces.services import project_create

    annotator, lead, engineer = (
        make_user("ann-speak", Role.ANNOTATOR),
        make_user("lead-speak", Role.LEAD),
        make_user("eng-speak", Role.ENGINEER),
    )
    project = project_create(name="Speaking", members=[annotator, lead, engineer])
    recorded_thought, recorded_action = "Open it.", "click(start_box='(500,300)')"
    corrected_thought, corrected_action = "The display item is the second one.", "click(start_box='(420,260)')"
    trace = make_trace(project, replies=replies(None), external_id="speaking")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        error_category="wrong element",
        corrected_thought=corrected_thought,
        corrected_action=corrected_action,
    )
    folder = tmp_path_factory.mktemp("speaking-eval")
    models = {}
    for name, thought, action in (
        ("agent-right", corrected_thought, corrected_action),
        ("agent-wrong", recorded_thought, recorded_action),
    ):
        reply = Reply(
            thought=f"Thought: {thought}\nAction: ", actions=(prompting.render_actions(action, project=project),)
        )
        # The checkpoint writes the target exactly as the samples render it.
        assert reply.text() == prompting.render_target(thought, action, project=project)
        models[name] = build_tiny_qwen2vl(folder / name, reply=reply)

    client = api_client(engineer)
    started = {}
    for name, model in models.items():
        answer = client.post(
            f"/api/projects/{project.pk}/evaluations/", {"model_dir": str(model), "split": "all"}, format="json"
        )
        assert answer.status_code == 202, answer.json()
        started[name] = answer.json()["id"]
    done = {
        name: wait_for(
            lambda pk=pk: (j := EvaluationJob.objects.get(pk=pk)).is_finished and j, timeout=240, message=name
        )
        for name, pk in started.items()
    }
    log = "".join(celery_worker.log[-80:])
    for name, job in done.items():
        assert job.status == "succeeded", (name, job.message, log)
        shown = client.get(f"/api/evaluations/{job.pk}/").json()
        assert shown["checkpoint"] == name and shown["weights_hash"] == qwen2vl.weights_sha256(models[name])
        assert (shown["samples_total"], shown["samples_scored"], shown["samples_failed"]) == (2, 2, 0)
    right = client.get(f"/api/evaluations/{done['agent-right'].pk}/").json()["metrics"]["overall"]
    wrong = client.get(f"/api/evaluations/{done['agent-wrong'].pk}/").json()["metrics"]["overall"]
    assert (right["pairs"], right["corrected"]) == (1, 1)
    # The checkpoint that writes the correction is sure of it (3 tokens: thought, action, <|im_end|>) and gives the
    # recorded step's first token alone about the chain's margin (40 nats) less.
    assert right["preference_accuracy"] == 1.0 and right["mean_margin"] > 30
    assert right["corrected_tokens"] == 3 and right["nll_corrected"] < 1e-4
    # The one that writes the recorded step prefers it by as much, and finds the correction unlikely.
    assert wrong["preference_accuracy"] == 0.0 and wrong["mean_margin"] < -30
    assert wrong["nll_corrected"] > 1
    rows = client.get(f"/api/evaluations/{done['agent-wrong'].pk}/samples/").json()
    rows = rows.get("results", rows)
    pair = next(r for r in rows if r["kind"] == "dpo")
    assert pair["rejected_n_tokens"] == 3 and pair["rejected_loglik_sum"] > -1e-4
