"""A 5,000-step trace in the workspace: the page carries the strip's marks and a window of steps, not every step's
data (it was 3.4 MB), and the step window API serves the rest to the annotation's annotator only, refusing bad
ranges with a 400 that says why. Its trace page lists its steps a page at a time (it was 3.3 MB)."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from annotation import services
from annotation.selectors import STEPS_MAX_SPAN, STEPS_WINDOW, workspace_steps
from studio.permissions import Role
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace
from traces.services import membership_add, project_create

STEPS = 5000
PAGE_BYTES_BAR = 300 * 1024


@pytest.fixture
def long_annotation(project, annotator, tmp_path):
    import_folder(project, write_native_trace(tmp_path / "long", steps=STEPS, size=(320, 200), shared_screen=True))
    trace = Trace.objects.get(project=project)
    assert trace.step_count == STEPS
    annotation, _lease = services.lease_next_trace(user=annotator, project=project)
    return annotation


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _payload(page) -> dict:
    text = page.content.decode()
    found = re.search(r'<script id="ws-data" type="application/json">(.*?)</script>', text, re.S)
    assert found, "the page carries no ws-data"
    return json.loads(found.group(1))


def test_the_workspace_page_of_a_5000_step_trace_stays_small(long_annotation, annotator, project):
    client = _client(annotator)
    page = client.get(f"/annotations/{long_annotation.pk}/")
    assert page.status_code == 200
    assert len(page.content) < PAGE_BYTES_BAR, len(page.content)
    data = _payload(page)
    assert data["trace"]["step_count"] == STEPS
    carried = [step["index"] for step in data["steps"]]
    assert carried == list(range(1, len(carried) + 1)) and STEPS_WINDOW <= len(carried) <= 2 * STEPS_WINDOW
    assert data["strip"] == {"without_shot": [], "off_screen": [], "gaps": {}}
    assert data["steps_url"] == f"/api/annotations/{long_annotation.pk}/steps/"

    # With τ marked at step 4,000 the page opens there, so it carries that step's neighbourhood instead.
    annotation = services.annotation_save_draft(
        annotation_id=long_annotation.pk,
        user=annotator,
        base_version=long_annotation.version,
        fields={"verdict": "error", "tau": 4000, "error_category": project.error_categories[0]},
    )
    page = client.get(f"/annotations/{annotation.pk}/")
    assert len(page.content) < PAGE_BYTES_BAR, len(page.content)
    carried = [step["index"] for step in _payload(page)["steps"]]
    assert carried[0] <= 4000 - STEPS_WINDOW // 2 and carried[-1] >= 4000 + STEPS_WINDOW // 2
    assert carried == list(range(carried[0], carried[-1] + 1))


def test_the_trace_page_of_a_5000_step_trace_lists_its_steps_a_page_at_a_time(long_annotation, lead):
    client = _client(lead)
    url = f"/traces/{long_annotation.trace_id}/"
    page = client.get(url)
    assert page.status_code == 200 and len(page.content) < PAGE_BYTES_BAR, len(page.content)
    text = page.content.decode()
    assert 'id="step-1"' in text and 'id="step-100"' in text and 'id="step-101"' not in text
    assert "Steps 1–100 of 5000" in text and 'href="?page=2"' in text
    # ?step=N opens the page holding step N.
    text = client.get(url, {"step": 4000}).content.decode()
    assert 'id="step-4000"' in text and 'id="step-3901"' in text and 'id="step-1"' not in text
    assert "Steps 3901–4000 of 5000" in text


BAD_RANGES = [
    ({"first": 0, "last": 10}, "1 ≤ first ≤ last ≤ 5000"),
    ({"first": 4990, "last": 5001}, "1 ≤ first ≤ last ≤ 5000"),
    ({"first": 30, "last": 20}, "1 ≤ first ≤ last ≤ 5000"),
    ({"first": 1, "last": STEPS_MAX_SPAN + 1}, f"at most {STEPS_MAX_SPAN} steps"),
    ({"first": "abc", "last": 3}, "whole numbers"),
    ({"first": "9" * 5000, "last": 3}, "whole numbers"),
    ({"first": 5}, "whole numbers"),
]


def test_the_step_window_api_serves_steps_to_the_annotator_only_and_refuses_bad_ranges(
    long_annotation, annotator, make_user
):
    client = _client(annotator)
    url = f"/api/annotations/{long_annotation.pk}/steps/"
    answer = client.get(url, {"first": 3990, "last": 4010})
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["first"], body["last"], body["step_count"]) == (3990, 4010, STEPS)
    assert [step["index"] for step in body["steps"]] == list(range(3990, 4011))
    assert body["steps"] == json.loads(json.dumps(workspace_steps(long_annotation.trace, 3990, 4010)))
    step = body["steps"][10]
    assert step["thought"] == "I will click item 4000."
    assert step["shot"]["url"] and step["shot"]["width"] == 320
    assert step["actions"][0]["type"] == "click"
    assert step["reflection_screen"] == 4001 and step["server_no_reflection_reason"] == ""
    # The last step's post-reflection screen is the final one (o_{n+1}), read past the window's end.
    last = client.get(url, {"first": STEPS, "last": STEPS}).json()["steps"]
    assert last[0]["reflection_screen"] == STEPS + 1
    # No range: the first window.
    first = client.get(url).json()
    assert (first["first"], first["last"], len(first["steps"])) == (1, STEPS_WINDOW, STEPS_WINDOW)

    for query, words in BAD_RANGES:  # each a 400 saying what is wrong (studio.errors.Invalid)
        answer = client.get(url, query)
        assert answer.status_code == 400, (query, answer.status_code)
        assert answer.json()["kind"] == "invalid" and words in answer.json()["detail"], (query, answer.json())

    url = f"{url}?first=1&last=5"
    stranger = make_user("elsewhere", Role.ANNOTATOR)
    project_create(name="Another project", members=[stranger])
    colleague = make_user("colleague", Role.ANNOTATOR)
    membership_add(project=long_annotation.trace.project, user=colleague)
    # annotation.work reaches one's own annotations only (studio.permissions.RULES): another project's annotator and
    # another annotator of the same project are told there is no such annotation.
    assert _client(stranger).get(url).status_code == 404
    assert _client(colleague).get(url).status_code == 404
    assert Client().get(url).status_code in (401, 403)
