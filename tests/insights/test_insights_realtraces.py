"""Insights on real data: on the real traces (../shared/realtraces) plus generated corrections, a planted failure mode
("typed before clicking the field") is found through search, as a cluster, and as a slice whose trend across two
rounds shows it shrinking; the slice's bundle holds exactly those annotations.

Scaled to the 40 real traces of two sources (33 Mobile-Agent runs, 7 ScreenAgent sessions): the mode is planted in
6 of round 1's 20 traces and 2 of round 2's 20 (30 of 200 is the same share at five times the size)."""

from __future__ import annotations

import pytest

from tests.fixtures_annotation import import_folder
from tests.fixtures_insights import PLANTED_NOTE, plant_corrections


@pytest.mark.heavy
@pytest.mark.django_db
def test_a_planted_failure_mode_is_found_by_search_cluster_and_slice(
    project, annotator, lead, engineer, realtraces, api_client, tmp_path
):
    from exports import services as export_services
    from insights import services
    from traces.models import Trace
    from traces.services import round_create

    import_folder(project, realtraces / "mobile-agent-v1" / "results", fmt="mobile-agent")
    import_folder(project, realtraces / "screenagent" / "data" / "ScreenAgent" / "train", fmt="screenagent")
    traces = list(Trace.objects.filter(project=project).order_by("external_id"))
    assert len(traces) == 40
    r1 = round_create(project=project, name="week 1", checkpoint="agent-v1", actor=lead)
    r2 = round_create(project=project, name="week 2", checkpoint="agent-v2", actor=lead)
    first, second = traces[::2], traces[1::2]  # both sources in both rounds
    Trace.objects.filter(pk__in=[t.pk for t in first]).update(round=r1)
    Trace.objects.filter(pk__in=[t.pk for t in second]).update(round=r2)
    planted = {t.pk for t in first[:6]} | {t.pk for t in second[:2]}
    annotations = plant_corrections(project, traces, annotator=annotator, lead=lead, planted=planted)
    planted_ids = sorted(annotations[pk].pk for pk in planted)

    # Search: the phrase finds exactly the planted corrections, and the round facet counts them per round.
    client = api_client(lead)
    found = client.get(f"/api/projects/{project.pk}/search/", {"q": f'"{PLANTED_NOTE}"'}).json()
    assert found["count"] == 8
    assert sorted(c["annotation_id"] for c in found["results"]) == planted_ids
    assert {v["label"]: v["count"] for v in found["facets"]["round"]} == {"week 1": 6, "week 2": 2}
    assert {v["label"] for v in found["facets"]["app"]} <= {t.metadata.get("app") for t in traces} | {""}

    # A cluster: the text of the corrections groups the planted ones, named by their distinctive terms.
    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    run = services.cluster_run_compute(run_id=run.pk)
    assert run.corrections == 40
    cluster = next(c for c in run.clusters.filter(kind="text") if c.annotation_ids == planted_ids)
    assert {"typed", "clicking", "field", "focused"} & set(cluster.terms)
    assert cluster.sizes_by_round == {"week 1": 6, "week 2": 2}

    # The one-click slice: its trend shrinks from round 1 to round 2.
    made = client.post(f"/api/clusters/{cluster.pk}/slice/")
    assert made.status_code == 201
    slice_id = made.json()["id"]
    trend = client.get(f"/api/slices/{slice_id}/").json()["trend"]
    assert [(p["name"], p["count"]) for p in trend] == [("week 1", 6), ("week 2", 2)]
    assert trend[0]["count"] > trend[1]["count"]

    # Its bundle holds exactly those annotations.
    job = export_services.export_to_path(
        project=project, user=engineer, fmt="trl", options={"slice": slice_id}, out=tmp_path / "slice.zip"
    )
    assert sorted(pk for pk, _ in job.sources) == planted_ids
