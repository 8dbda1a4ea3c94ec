"""An import job's summary and page as a lead reads them: counts in words ("1 trace", not "1 traces"), what was lost
said first ("5 of 6 traces failed") while the job, which ran to its end, stays succeeded, and problems (traces that
failed, files refused) apart from notes on kept traces (awaiting an instruction, points off the screen)."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from tests.traces.test_import_hostile import run, trace_files, write_zip
from traces.selectors import INSTRUCTION_MISSING
from traces.services import import_job_create, import_job_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def five_of_six(project, tmp_path):
    """Six trace folders, five with a broken trace.json, and one file of the archive refused (a '..' path)."""
    files = {}
    for n in range(6):
        files.update(trace_files(f"t{n}"))
        if n:
            files[f"t{n}/trace.json"] = b"{ not json"
    archive = write_zip(
        tmp_path / "five-of-six.zip", files, extra=lambda zf: zf.writestr("batch/../escaped.txt", b"outside")
    )
    return run(project, archive)


def test_a_job_that_lost_five_of_six_traces_says_so_first_and_stays_succeeded(five_of_six):
    job = five_of_six
    assert job.status == "succeeded"  # it ran to its end; what it lost is said, not hidden in the status
    assert job.message == (
        "5 of 6 traces failed; 1 file refused. 1 trace, 2 steps, 2 screenshots stored, 0 traces already present, "
        "5 failed, 0 unparsed actions, 0 off-screen steps"
    )


def test_the_api_splits_problems_from_notes_and_keeps_errors_whole(five_of_six, lead, api_client):
    body = api_client(lead).get(f"/api/imports/{five_of_six.pk}/").json()
    assert body["attention"] == "5 of 6 traces failed; 1 file refused"
    assert [e["file"] for e in body["problems"]] == [
        "batch/../escaped.txt",
        *(f"t{n}/trace.json" for n in range(1, 6)),
    ]
    assert body["notes"] == []
    assert body["errors"] == body["problems"]  # read by older clients: still every entry


def test_the_job_page_shows_what_was_lost_and_the_problems_under_their_heading(five_of_six, lead, client):
    client.force_login(lead)
    page = client.get(f"/imports/{five_of_six.pk}/").content.decode()
    attention = re.search(r'<p class="notice bad" id="job-attention"[^>]*>([^<]*)</p>', page)
    assert (
        attention
        and "hidden" not in attention.group(0)
        and attention.group(1) == "5 of 6 traces failed; 1 file refused"
    )
    problems = re.search(r'<ul id="job-problems"[^>]*>(.*?)</ul>', page, re.S).group(1)
    assert problems.count("<li>") == 6 and "invalid JSON" in problems
    assert re.search(r'<section class="job-entries" data-job="notes-box" hidden>', page)


def test_a_trace_awaiting_its_instruction_is_a_note_not_an_error(project, realtraces, lead, client, api_client):
    run_folder = realtraces / "mobile-agent-v1" / "results" / "Gmail" / "2"
    job = import_job_run(
        job_id=import_job_create(
            project=project, user=lead, upload_name=str(run_folder), server_path=True, enqueue=False, fmt="mobile-agent"
        ).pk
    )
    assert job.status == "succeeded"
    assert job.message.startswith("1 trace, ") and job.message.endswith(", 1 awaiting an instruction")
    assert "error" not in job.message
    body = api_client(lead).get(f"/api/imports/{job.pk}/").json()
    assert body["attention"] == "" and body["problems"] == []
    assert [note["kind"] for note in body["notes"]] == [INSTRUCTION_MISSING]
    client.force_login(lead)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    notes = re.search(r'<ul id="job-notes" class="notes"[^>]*>(.*?)</ul>', page, re.S).group(1)
    assert "no instruction found" in notes and f'href="/traces/{body["notes"][0]["trace"]}/"' in notes
    assert re.search(r'<ul id="job-problems" class="errors"[^>]*></ul>', page)  # nothing shown in red
    assert re.search(r'id="job-attention"[^>]* hidden', page)


def test_the_import_command_prints_the_one_summary(project, tmp_path):
    archive = write_zip(tmp_path / "one.zip", trace_files("solo", steps=1))
    out = StringIO()
    call_command("import_traces", str(archive), "--project", project.name, stdout=out)
    assert (
        out.getvalue()
        .strip()
        .endswith(
            "succeeded: 1 trace, 1 step, 1 screenshot stored, 0 traces already present, 0 failed, 0 unparsed actions, "
            "0 off-screen steps"
        )
    )


def test_the_job_page_and_its_live_updates_say_progress_in_the_same_words(project, tmp_path, lead, client, api_client):
    # The page rendered "N traces read" and job_status.js replaced it with "N / M" (or "0 done") at its first poll:
    # one job, two wordings, and "1 traces read" for one trace. Both now read the server's words.
    job = run(project, write_zip(tmp_path / "one.zip", trace_files("solo", steps=1)))
    body = api_client(lead).get(f"/api/imports/{job.pk}/").json()
    assert body["progress_text"] == "1 of 1 trace read"
    client.force_login(lead)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    assert '<p id="job-progress" data-job="progress">1 of 1 trace read</p>' in page
    job.progress_total = job.progress_done = 0
    job.save(update_fields=["progress_total", "progress_done"])
    assert api_client(lead).get(f"/api/imports/{job.pk}/").json()["progress_text"] == "0 traces read"
