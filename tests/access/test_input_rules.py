"""The input rules at every entry: NUL characters, lone surrogates and NaN are
refused with a 400 naming the field, the same on SQLite and PostgreSQL; an imported trace holding one is reported
on that trace and the batch goes on; no answer shows SQL."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotation.models import Annotation
from studio.inputs import input_problem
from tests.conftest import TEST_PASSWORD
from tests.factories import native_trace_folder
from tests.fixtures_annotation import make_traces
from traces import services as trace_services
from traces.models import Trace

pytestmark = pytest.mark.django_db


def test_the_rule():
    assert input_problem("fine ✓ 日本語") is None
    assert "NUL" in input_problem("a\x00b", name="q")
    assert "lone surrogate" in input_problem({"note": "\ud800"}, name="")
    assert input_problem({"a": [1, {"b": float("nan")}]}).startswith("a[1].b")
    assert input_problem({"x\x00": 1}) is not None


def test_form_and_query_fields(project, lead, annotator):
    anonymous = Client()
    login = anonymous.post("/login/", {"username": "vic\x00tim", "password": "x"})
    assert login.status_code == 400 and b"username" in login.content and b"NUL" in login.content
    client = Client()
    assert client.login(username=lead.username, password=TEST_PASSWORD)
    page = client.get(f"/projects/{project.pk}/traces/", {"q": "a\x00b"})
    assert page.status_code == 400 and b"q: contains a NUL" in page.content
    api = client.get(f"/api/projects/{project.pk}/traces/", {"q": "a\x00b"})
    assert api.status_code == 400 and api.json()["detail"] == "Refused: q: contains a NUL character (\\u0000)."
    # (A lone surrogate cannot arrive in a query string: its UTF-8 bytes are invalid and Django decodes them to
    # U+FFFD. It can in JSON, as an escape: see test_json_bodies.)


def test_json_bodies(project, annotator, api_client, tmp_path):
    make_traces(project, tmp_path, count=1, steps=2)
    claim = api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/").json()
    pk = claim["annotation"]["id"]
    raw = '{"version": 1, "editor_state": {"corrected": {"type": "type", "args": {"content": "\\ud800"}}}}'
    draft = api_client(annotator).generic("PUT", f"/api/annotations/{pk}/draft/", raw, content_type="application/json")
    assert draft.status_code == 400 and "editor_state.corrected.args.content" in json.dumps(draft.json())
    nan = api_client(annotator).generic(
        "POST",
        f"/api/annotations/{pk}/check-action/",
        '{"slot": "corrected", "tau": 1, "action": {"type": "wait", "args": {"t": NaN}}}',
        content_type="application/json",
    )
    assert nan.status_code == 400
    assert Annotation.objects.get(pk=pk).version == claim["annotation"]["version"]  # nothing stored


def test_lead_note_with_a_nul(project, lead):
    client = Client()
    client.force_login(lead)
    response = client.post("/reviews/1/decide/", {"decision": "accept", "comment": "ok\x00"})
    assert response.status_code == 400 and b"comment" in response.content


def test_imported_traces_holding_refused_values_are_reported_one_by_one(project, tmp_path):
    batch = tmp_path / "batch"
    native_trace_folder(batch / "good", external_id="good", steps=2)
    for name, patch in (
        ("nul", {"instruction": "Open\x00 it"}),
        ("surrogate", {"metadata": {"note": "\ud800"}}),
        ("nan", {"metadata": {"score": float("nan")}}),
    ):
        folder = native_trace_folder(batch / name, external_id=name, steps=2)
        document = json.loads((folder / "trace.json").read_text())
        document.update(patch)
        # json.dumps writes NaN and lone surrogates as a careless producer would (allow_nan, ensure_ascii)
        (folder / "trace.json").write_text(json.dumps(document))
    job = trace_services.import_job_create(
        project=project, user=None, upload_name=str(batch), original_name="batch", server_path=True, enqueue=False
    )
    job = trace_services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    assert job.traces_imported == 1 and job.traces_failed == 3
    text = json.dumps(job.errors)
    assert "instruction: contains a NUL" in text and "metadata.note: contains a lone surrogate" in text
    assert "metadata.score: is nan" in text and "SELECT" not in text and "INSERT" not in text
    assert list(Trace.objects.values_list("external_id", flat=True)) == ["good"]
