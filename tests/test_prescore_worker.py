"""A real Celery worker (queues default,gpu) runs rule and model scoring jobs end to end.

With REDIS_URL set the broker is Redis; otherwise kombu's filesystem broker (SQLite runs)."""

from __future__ import annotations

import pytest

from prescoring.models import PrescoreJob, StepSuggestion
from tests.conftest import wait_for
from tests.factories import native_trace_folder

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring import qwen2vl, services  # noqa: E402
from prescoring.tiny import build_tiny_qwen2vl  # noqa: E402

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
    assert "traces.tasks.prescore_with_model" in log and "traces.tasks.prescore_rules" in log
