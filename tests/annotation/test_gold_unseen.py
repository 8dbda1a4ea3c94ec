"""An annotator's every view of a gold trace is the view of an ordinary trace with the same history: the trace list's
counts, the trace page's history, the traces API, the workspace's data, the annotation API and the queue's count of
their answers. Other annotators' gold answers are no work of the trace (a gold trace handed to everyone would stand out
by its count), and the annotator's own gold answer counts as their answer on any trace does."""

from __future__ import annotations

import json
import re

import pytest

from annotation import services
from annotation.models import AnnotationKind
from annotation.quality import services as quality
from studio.permissions import Role
from tests.fixtures_quality import error_fields, gold_traces, hand_in, reference_of, traces_of
from traces.services import membership_add, project_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(project, annotator, lead, make_user):
    """Two traces with one history: an accepted answer of ``expert``, then ``annotator``'s submitted answer. One of
    them is gold (``expert``'s answer its reference) and three other annotators answered it as gold too."""
    expert = make_user("expert", Role.ANNOTATOR)
    membership_add(project=project, user=expert)
    gold_trace, ordinary = traces_of(project, 2)
    gold_traces(project, [gold_trace], expert=expert, lead=lead)
    reference_of(ordinary, annotator=expert, lead=lead)
    # The ordinary trace is shared (two annotators each), so the annotator is handed it after the expert's answer.
    project_save(
        actor=lead, project=project, fields={"double_annotation_share": 1.0, "double_annotation_annotators": 2}
    )
    project.refresh_from_db()
    quality.quality_settings_save(project=project, user=lead, fields={"gold_every": 1})
    for n in range(3):
        other = make_user(f"other{n}", Role.ANNOTATOR)
        membership_add(project=project, user=other)
        answer, _ = services.lease_next_trace(user=other, project=project)
        assert answer.trace_id == gold_trace.pk and answer.kind == AnnotationKind.GOLD
        hand_in(answer, other, **error_fields(3))
    own_gold, _ = services.lease_next_trace(user=annotator, project=project)
    assert own_gold.trace_id == gold_trace.pk and own_gold.kind == AnnotationKind.GOLD
    hand_in(own_gold, annotator, **error_fields(3))
    own, _ = services.lease_next_trace(user=annotator, project=project)
    assert own.trace_id == ordinary.pk and own.kind == AnnotationKind.PRODUCTION
    hand_in(own, annotator, **error_fields(3))
    return {"gold": gold_trace, "ordinary": ordinary, "gold_answer": own_gold, "answer": own}


def _status_cell(page: str, trace_id: int) -> str:
    cell = re.search(rf'<td data-annotation-status="{trace_id}">(.*?)</td>', page, re.S)
    assert cell, f"no annotations cell for trace {trace_id}"
    return cell.group(1)


def _keys(value):
    """The shape of a JSON value: its keys, all the way down (lists by their first item)."""
    if isinstance(value, dict):
        return {key: _keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_keys(value[0])] if value else []
    return type(value).__name__ if value is not None else None


def test_an_annotators_views_of_a_gold_trace_and_an_ordinary_one_are_alike(
    project, annotator, lead, world, client, api_client
):
    gold, ordinary = world["gold"], world["ordinary"]
    client.force_login(annotator)

    listing = client.get(f"/projects/{project.pk}/traces/").content.decode()
    gold_cell, ordinary_cell = _status_cell(listing, gold.pk), _status_cell(listing, ordinary.pk)
    assert gold_cell == ordinary_cell
    assert re.findall(r'class="pill (\w+)">(\d+)', gold_cell) == [("submitted", "1"), ("accepted", "1")]
    assert "gold" not in listing.lower()

    def history(trace):
        page = client.get(f"/traces/{trace.pk}/").content.decode()
        assert "gold" not in page.lower()
        return re.findall(r'<tr class="audit-\w+" data-kind="(\w+)" data-from="(\w*)" data-to="(\w*)">', page)

    assert history(gold) == history(ordinary) != []

    api = api_client(annotator)
    listed = {row["id"]: row for row in api.get(f"/api/projects/{project.pk}/traces/").json()["results"]}
    assert _keys(listed[gold.pk]) == _keys(listed[ordinary.pk])
    assert _keys(api.get(f"/api/traces/{gold.pk}/").json()) == _keys(api.get(f"/api/traces/{ordinary.pk}/").json())
    gold_api = api.get(f"/api/annotations/{world['gold_answer'].pk}/").json()
    ordinary_api = api.get(f"/api/annotations/{world['answer'].pk}/").json()
    assert _keys(gold_api) == _keys(ordinary_api) and gold_api["status"] == ordinary_api["status"] == "submitted"

    def workspace(annotation):
        page = client.get(f"/annotations/{annotation.pk}/").content.decode()
        data = re.search(r'<script id="ws-data" type="application/json">(.*?)</script>', page, re.S)
        return _keys(json.loads(data.group(1)))

    assert workspace(world["gold_answer"]) == workspace(world["answer"])

    # The queue counts what the annotator handed in, the gold answer as any other.
    queue = client.get("/queue/").content.decode()
    assert "2 submitted by you" in queue

    # A lead sees the trace's work apart from the gold answers scored on it, and which trace is gold.
    client.force_login(lead)
    lead_listing = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert re.findall(r'class="pill (\w+)">(\d+)', _status_cell(lead_listing, gold.pk))[:1] == [("accepted", "1")]
    assert f'data-gold-trace="{gold.pk}"' in lead_listing
    assert '<span class="muted small" data-gold-answers="4">4 answers scored</span>' in lead_listing
