"""Clustering is a job of the CPU worker: the API queues it, a real worker (default queue) runs it."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import plant_corrections

pytestmark = pytest.mark.worker


def test_the_worker_clusters_the_accepted_corrections(celery_worker, project, annotator, lead, api_client, tmp_path):
    from insights.models import ClusterRun

    traces = make_traces(project, tmp_path, count=4, steps=3)
    plant_corrections(project, traces, annotator=annotator, lead=lead, planted={traces[0].pk, traces[1].pk})
    queued = api_client(lead).post(f"/api/projects/{project.pk}/clusters/")
    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    run = wait_for(
        lambda: ClusterRun.objects.filter(pk=queued.json()["id"], status="succeeded").first(),
        timeout=90,
        message="the clustering run to succeed",
    )
    assert run.corrections == 4
    shown = api_client(lead).get(f"/api/projects/{project.pk}/clusters/").json()
    assert shown["id"] == run.pk and any(c["kind"] == "text" and c["size"] == 2 for c in shown["clusters"])
