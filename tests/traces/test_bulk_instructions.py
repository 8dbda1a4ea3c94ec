"""Bulk instructions: a lead fills many traces' missing instructions from one CSV or JSONL file, on
the project's page, through the API and the command line; the report says what was set, refused and left."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation import services as annotation_services
from studio.errors import Invalid
from tests.conftest import TEST_PASSWORD
from tests.fixtures_annotation import make_traces
from traces.instructions import instructions_read
from traces.models import Trace
from traces.services import trace_instructions_fill


@pytest.fixture
def blank_traces(project, tmp_path):
    """Three traces imported without their instruction (held out of the queue) and one with it."""
    blank = make_traces(project, tmp_path / "blank", count=3, steps=2, instruction="")
    told = make_traces(project, tmp_path / "told", count=1, steps=2, instruction="Open the settings")
    return blank + told


def _csv(rows: list[tuple[str, str]], header: str = "external_id,instruction") -> bytes:
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    for row in rows:
        writer.writerow(row)
    return (header + "\r\n" + out.getvalue()).encode()


def test_the_reader_takes_csv_with_quoted_commas_and_lines_and_jsonl():
    rows = instructions_read(_csv([("a", "Open Wi-Fi, then turn it off"), ("b", "Two\nlines")]), name="i.csv")
    assert [(r.line, r.external_id, r.instruction) for r in rows] == [
        (2, "a", "Open Wi-Fi, then turn it off"),
        (4, "b", "Two\nlines"),  # a quoted line break: the row ends on line 4
    ]
    jsonl = b'{"external_id": "a", "instruction": "Open it"}\n\nnot json\n{"external_id": 7, "instruction": 3}\n'
    rows = instructions_read(jsonl, name="i.jsonl")
    assert [(r.line, r.external_id, r.instruction, r.problem) for r in rows] == [
        (1, "a", "Open it", ""),
        (3, "", "", 'not a JSON object with "external_id" and "instruction"'),
        (4, "7", "", '"instruction" is not text'),
    ]
    with pytest.raises(Invalid, match="first line is its header: external_id,instruction"):
        instructions_read(b"id,text\na,b\n", name="i.csv")
    with pytest.raises(Invalid, match="not UTF-8"):
        instructions_read("external_id,instruction\na,é\n".encode("latin-1"), name="i.csv")
    with pytest.raises(Invalid, match="no rows"):
        instructions_read(b"external_id,instruction\n", name="i.csv")


def test_a_file_fills_the_missing_instructions_and_reports_the_rest(project, blank_traces, lead, annotator):
    a, b, c, told = blank_traces
    rows = instructions_read(
        _csv(
            [
                (a.external_id, "Turn on dark mode"),
                (b.external_id, "   "),
                ("no-such-trace", "Anything"),
                (told.external_id, "Another task"),
                (a.external_id, "Again"),
            ]
        ),
        name="i.csv",
    )
    report = trace_instructions_fill(project=project, actor=lead, rows=rows)
    assert report.set == [a.external_id]
    assert [(r["line"], r["reason"]) for r in report.refused] == [
        (3, "The instruction cannot be blank: write the task the agent was given."),
        (4, "unknown id: no trace of this project has it"),
        (6, "the trace is named again (first on line 2)"),
    ]
    assert report.left == [{"line": 5, "external_id": told.external_id, "reason": "has an instruction"}]
    assert report.still_awaiting == 2
    assert report.summary == ("1 instruction set, 3 refused, 1 left as they were; 2 traces still await an instruction")
    a.refresh_from_db()
    assert a.instruction == "Turn on dark mode"
    assert a.metadata["instruction_edits"][0]["by"] == "leader"  # trace_instruction_set's record
    # The filled trace enters the queue; the others stay out.
    claim = annotation_services.lease_next_trace(user=annotator, project=project)
    assert claim is not None and claim[0].trace_id in {a.pk, told.pk}

    replaced = trace_instructions_fill(
        project=project, actor=lead, rows=instructions_read(_csv([(told.external_id, "Another task")])), replace=True
    )
    assert replaced.set == [told.external_id]
    told.refresh_from_db()
    assert told.instruction == "Another task"


def test_the_api_takes_a_file_or_rows_and_only_from_leads(project, blank_traces, lead, engineer, annotator, api_client):
    a, b, c, _ = blank_traces
    url = f"/api/projects/{project.pk}/instructions/"
    upload = SimpleUploadedFile("i.jsonl", json.dumps({"external_id": a.external_id, "instruction": "Do A"}).encode())
    answer = api_client(lead).post(url, {"file": upload}, format="multipart")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["set"] == [a.external_id] and answer.json()["still_awaiting"] == 2
    rows = {
        "instructions": [
            {"external_id": b.external_id, "instruction": "Do B"},
            {"external_id": "x", "instruction": "y"},
        ]
    }
    answer = api_client(lead).post(url, rows, format="json")
    assert answer.json()["set"] == [b.external_id]
    assert answer.json()["refused"] == [
        {"line": 2, "external_id": "x", "reason": "unknown id: no trace of this project has it"}
    ]
    bad = api_client(lead).post(url, {"file": SimpleUploadedFile("i.csv", b"id,text\n")}, format="multipart")
    assert bad.status_code == 400 and "external_id,instruction" in bad.json()["detail"]
    assert api_client(lead).post(url, {}, format="json").status_code == 400
    for user in (engineer, annotator):
        refused = api_client(user).post(url, rows, format="json")
        assert refused.status_code == 403
    assert Trace.objects.get(pk=c.pk).instruction == ""


def test_the_project_page_uploads_a_file_and_shows_the_report(project, blank_traces, lead, annotator):
    a, b, c, told = blank_traces
    client = Client()
    client.login(username="leader", password=TEST_PASSWORD)
    listing = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert f"/projects/{project.pk}/instructions/" in listing
    page = client.get(f"/projects/{project.pk}/instructions/").content.decode()
    assert "3 traces await an instruction" in page
    upload = SimpleUploadedFile("i.csv", _csv([(a.external_id, "Do A"), (c.external_id, ""), ("zzz", "Q")]))
    done = client.post(f"/projects/{project.pk}/instructions/", {"file": upload})
    body = done.content.decode()
    assert done.status_code == 200
    assert "1 instruction set, 2 refused, 0 left as they were; 2 traces still await an instruction" in body
    assert "unknown id: no trace of this project has it" in body
    bad = client.post(f"/projects/{project.pk}/instructions/", {"file": SimpleUploadedFile("i.csv", b"\xff\xfe")})
    assert bad.status_code == 400 and "not UTF-8" in bad.content.decode()

    client.login(username="ann", password=TEST_PASSWORD)
    assert client.get(f"/projects/{project.pk}/instructions/").status_code == 403
    assert f"/projects/{project.pk}/instructions/" not in client.get(f"/projects/{project.pk}/traces/").content.decode()
