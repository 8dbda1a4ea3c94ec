"""Rounds (issue 17): a project's rounds name the checkpoint that produced their traces; imports and runners put
traces in a round."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from studio.errors import Conflict, Invalid
from tests.fixtures_annotation import make_traces
from traces import selectors, services
from traces.models import Round, Trace


@pytest.mark.django_db
def test_round_create_checks_its_fields_and_refuses_a_taken_name(project, lead):
    made = services.round_create(
        project=project, name=" round 1 ", checkpoint="ui-tars-7b-r0", weights_hash="AB12", actor=lead
    )
    assert (made.name, made.checkpoint, made.weights_hash, made.created_by) == (
        "round 1",
        "ui-tars-7b-r0",
        "ab12",
        lead,
    )
    assert made.ran_at is not None
    with pytest.raises(Conflict) as taken:
        services.round_create(project=project, name="round 1", checkpoint="other")
    assert taken.value.extra["round"] == made.pk and "round 1" in taken.value.detail
    for bad, field in (
        ({"name": "", "checkpoint": "c"}, "name"),
        ({"name": "r", "checkpoint": "  "}, "checkpoint"),
        ({"name": "r", "checkpoint": "c", "weights_hash": "not-hex"}, "weights_hash"),
        ({"name": "x" * 121, "checkpoint": "c"}, "name"),
    ):
        with pytest.raises(Invalid) as refused:
            services.round_create(project=project, **bad)
        assert refused.value.extra["field"] == field
    assert Round.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_round_resolve_by_name_then_id_and_an_unknown_round_is_named(project):
    first = services.round_create(project=project, name="r1", checkpoint="c1")
    numeric = services.round_create(project=project, name=str(first.pk + 100), checkpoint="c2")
    assert selectors.round_resolve(project, "r1") == first
    assert selectors.round_resolve(project, str(first.pk)) == first
    assert selectors.round_resolve(project, str(first.pk + 100)) == numeric  # a name wins over an id
    assert selectors.round_resolve(project, "") is None and selectors.round_resolve(project, None) is None
    with pytest.raises(Invalid, match=r"has no round 'r9' \(its rounds: .*r1"):
        selectors.round_resolve(project, "r9")


@pytest.mark.django_db
def test_rounds_api_lists_for_members_and_creates_for_leads(project, annotator, lead, engineer, api_client, tmp_path):
    traces = make_traces(project, tmp_path, count=2, steps=1)
    assert all(t.round_id is None for t in Trace.objects.filter(project=project))  # older traces: in no round
    url = f"/api/projects/{project.pk}/rounds/"
    later = api_client(lead).post(
        url, {"name": "week 2", "checkpoint": "m2", "ran_at": "2026-11-20T10:00:00Z"}, format="json"
    )
    assert later.status_code == 201, later.content
    earlier = api_client(lead).post(
        url,
        {"name": "week 1", "checkpoint": "m1", "ran_at": "2026-11-13T10:00:00Z", "weights_hash": "ff"},
        format="json",
    )
    assert earlier.status_code == 201 and earlier.json()["weights_hash"] == "ff"
    Trace.objects.filter(pk=traces[0].pk).update(round_id=earlier.json()["id"])

    listed = api_client(annotator).get(url)
    assert listed.status_code == 200
    assert [(r["name"], r["trace_count"]) for r in listed.json()] == [("week 1", 1), ("week 2", 0)]
    detail = api_client(engineer).get(f"/api/rounds/{earlier.json()['id']}/")
    assert detail.status_code == 200 and detail.json()["checkpoint"] == "m1"
    assert api_client(annotator).get(f"/api/traces/{traces[0].pk}/").json()["round"] == earlier.json()["id"]

    refused = api_client(annotator).post(url, {"name": "week 3", "checkpoint": "m3"}, format="json")
    assert refused.status_code == 403 and refused.json()["detail"] == "You cannot create rounds."
    again = api_client(lead).post(url, {"name": "week 1", "checkpoint": "m9"}, format="json")
    assert again.status_code == 409 and again.json()["round"] == earlier.json()["id"]
    blank = api_client(lead).post(url, {"name": "week 4", "checkpoint": ""}, format="json")
    assert blank.status_code == 400
    assert Round.objects.get(pk=earlier.json()["id"]).ran_at == datetime(2026, 11, 13, 10, tzinfo=UTC)
