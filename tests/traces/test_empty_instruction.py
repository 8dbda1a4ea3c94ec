"""Traces without an instruction: the import says so on the job, the annotation queue keeps them
out until a lead writes the instruction on the trace page, and no page shows an empty task."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from annotation.selectors import queue_for_user
from annotation.services import lease_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace
from traces.selectors import INSTRUCTION_MISSING, traces_awaiting_instruction
from traces.services import import_job_create, import_job_run


@pytest.fixture
def blank_trace(project, tmp_path):
    import_folder(project, write_native_trace(tmp_path / "blank", steps=2, instruction="  ", external_id="blank"))
    return Trace.objects.get(project=project, external_id="blank")


@pytest.mark.django_db
def test_a_mobile_agent_run_without_instruction_is_reported_on_its_job(project, realtraces, lead, client):
    run = realtraces / "mobile-agent-v1" / "results" / "Gmail" / "2"
    job = import_job_run(
        job_id=import_job_create(
            project=project, user=lead, upload_name=str(run), server_path=True, enqueue=False, fmt="mobile-agent"
        ).pk
    )
    assert job.status == "succeeded" and job.traces_imported == 1
    (entry,) = [e for e in job.errors if e.get("kind") == INSTRUCTION_MISSING]
    trace = Trace.objects.get(pk=entry["trace"])
    assert trace.instruction == ""
    assert "no instruction found" in entry["error"] and "instruction.txt" in entry["error"]  # the importer's hint
    assert "kept out of the annotation queue" in entry["error"]
    assert "1 awaiting an instruction" in job.message
    client.force_login(lead)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    assert "no instruction found" in page and "1 awaiting an instruction" in page


@pytest.mark.django_db
def test_the_queue_skips_a_trace_until_a_lead_writes_its_instruction(project, blank_trace, annotator, lead, client):
    assert lease_next_trace(user=annotator, project=project) is None
    (row,) = queue_for_user(annotator)
    assert row["open_count"] == 0 and row["awaiting_instruction"] == 0  # annotators cannot write it
    (row,) = queue_for_user(lead)
    assert row["awaiting_instruction"] == 1
    client.force_login(lead)
    listed = client.get(f"/projects/{project.pk}/traces/?state=awaiting-instruction").content.decode()
    assert "awaiting instruction" in listed and f"/traces/{blank_trace.pk}/" in listed

    page = client.get(f"/traces/{blank_trace.pk}/").content.decode()
    assert 'id="instruction-missing"' in page and 'id="instruction-form"' in page
    response = client.post(f"/traces/{blank_trace.pk}/instruction/", {"instruction": "Archive the newest email "})
    assert response.status_code == 302 and response["Location"] == f"/traces/{blank_trace.pk}/"
    blank_trace.refresh_from_db()
    assert blank_trace.instruction == "Archive the newest email"
    assert blank_trace.metadata["instruction_edits"][0]["before"] == "  "
    assert blank_trace.metadata["instruction_edits"][0]["by"] == lead.username
    assert not traces_awaiting_instruction(Trace.objects.filter(project=project)).exists()

    annotation, _ = lease_next_trace(user=annotator, project=project)
    assert annotation.trace_id == blank_trace.pk


@pytest.mark.django_db
def test_the_instruction_form_is_for_leads_and_refuses_blank(project, blank_trace, annotator, lead, client):
    client.force_login(annotator)
    page = client.get(f"/traces/{blank_trace.pk}/").content.decode()
    assert "a lead writes it" in page and 'id="instruction-form"' not in page
    assert client.post(f"/traces/{blank_trace.pk}/instruction/", {"instruction": "x"}).status_code == 403
    client.force_login(lead)
    for blank in ("", "   \n "):
        response = client.post(f"/traces/{blank_trace.pk}/instruction/", {"instruction": blank})
        assert response.status_code == 400
        assert "Write the instruction" in response.content.decode()
    assert client.post(f"/traces/{blank_trace.pk}/instruction/", {"instruction": "a\x00b"}).status_code == 400
    blank_trace.refresh_from_db()
    assert blank_trace.instruction == "  "


@pytest.mark.django_db
def test_a_draft_on_a_trace_without_instruction_shows_so_and_cannot_be_submitted(
    project, tmp_path, annotator, api_client, client
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=2, external_id="later-blank"))
    annotation, _ = lease_next_trace(user=annotator, project=project)
    Trace.objects.filter(pk=annotation.trace_id).update(instruction="")  # a draft from before the rule
    client.force_login(annotator)
    page = client.get(f"/annotations/{annotation.pk}/").content.decode()
    assert "No instruction was recorded for this" in page
    api = api_client(annotator)
    saved = api.put(f"/api/annotations/{annotation.pk}/draft/", {"version": 1, "verdict": "no_error"}, format="json")
    assert saved.status_code == 200
    response = api.post(
        f"/api/annotations/{annotation.pk}/submit/", {"version": saved.json()["version"]}, format="json"
    )
    assert response.status_code == 400 and "no instruction yet" in str(response.json())
    assert Annotation.objects.get(pk=annotation.pk).status == "draft"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_lead_writes_the_missing_instruction_in_the_browser(
    browser, live_server, project, blank_trace, lead, artifacts_dir
):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/traces/{blank_trace.pk}/")
    assert "No instruction was recorded" in page.inner_text("#instruction-missing")
    page.screenshot(path=str(artifacts_dir / "trace-instruction-missing.png"))
    page.fill("#instruction-form textarea", "Archive the newest email")
    page.click("#instruction-form button[type=submit]")
    page.wait_for_selector("#instruction-text")
    assert page.inner_text("#instruction-text") == "Archive the newest email"
    assert "open to annotators" in page.inner_text("p.notice")
    page.screenshot(path=str(artifacts_dir / "trace-instruction-saved.png"))
    context.close()


def _note_quoting(*warnings) -> str:
    from traces.importers import ImportedTrace
    from traces.services import instruction_missing_report

    imported = ImportedTrace(
        external_id="run-7",
        instruction="",
        source="mobile-agent",
        steps=[],
        source_path="Gmail/7",
        warnings=[*warnings],
    )
    return instruction_missing_report(imported, Trace(external_id="run-7"))["error"]


def test_the_note_quotes_the_importers_instruction_warning_by_its_code_whatever_its_words():
    """The note picks the importer's warning by its code: reworded (here with no word "instruction" at all), it is
    still quoted; a warning about something else that mentions an instruction is not."""
    from traces.importers import ImportWarning, WarningCode

    note = _note_quoting(
        ImportWarning(WarningCode.SCREENSHOT_MISSING, "step 2: no screenshot of the instruction screen"),
        ImportWarning(WarningCode.INSTRUCTION_MISSING, "the task's words are not in these files; add task.txt"),
        "step 3: a plain warning naming the instruction, with no code",
    )
    assert note.startswith("Gmail/7: no instruction found in the source (the task's words are not in these files; "), (
        note
    )
    assert "task.txt)" in note and "screenshot" not in note and "plain warning" not in note, note
    assert note.endswith("until a lead writes its instruction on the trace page"), note


def test_the_note_quotes_nothing_when_the_importer_said_nothing_about_the_instruction():
    from traces.importers import ImportWarning, WarningCode

    note = _note_quoting(
        ImportWarning(WarningCode.SCREENSHOT_MISSING, "step 1: the instruction's screenshot is missing")
    )
    assert note == (
        "Gmail/7: no instruction found in the source; the trace is kept out of the annotation queue until a lead "
        "writes its instruction on the trace page"
    )
