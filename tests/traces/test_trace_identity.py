"""A trace is known by its content: its instruction and each step's screenshot and action, in
order, whatever its folder or zip is called. The same run again through the CLI, a hand-made zip or the upload page
is one trace; two different runs in folders of the same name are two, through an import (a distinct id, said so) and
through a push (409 naming what differs, never 200 with the other trace). And one line of an import never costs the
others: a huge integer fails its trace only, a repeated external_id with other content is
reported and counted, and an archive whose every entry is refused says which and why."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.test import Client

from annotation.models import Annotation
from tests.conftest import wait_for
from tests.factories import native_trace_folder
from tests.serving.test_cli import run_cli
from traces import identity, services
from traces.importers import archive_folder_name
from traces.models import ImportJob, Step, Trace
from traces.selectors import ALREADY_PRESENT, STORED_UNDER_DISTINCT_ID
from traces.services import import_job_create, import_job_run

DART = Path("dart-gui") / "examples" / "osworld_trajectory"
MOBILE_RUNS = (Path("mobile-agent-v1") / "results" / "Gmail" / "1", Path("mobile-agent-v1") / "results" / "Gmail" / "3")


def zip_folder(folder: Path, archive: Path, *, top: str | None) -> Path:
    """``folder``'s files in a zip, under the top folder ``top`` (None: at the archive's top), as a person zips it."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                relative = path.relative_to(folder).as_posix()
                zf.write(path, f"{top}/{relative}" if top else relative)
    return archive


def upload_through_api(client, project, archive: Path, name: str | None = None) -> ImportJob:
    with archive.open("rb") as handle:
        upload = io.BytesIO(handle.read())
    upload.name = name or archive.name
    response = client.post(f"/api/projects/{project.pk}/imports/", {"file": upload}, format="multipart")
    assert response.status_code == 202, response.content
    return import_job_run(job_id=response.json()["id"])


def notes_of(job: ImportJob, kind: str) -> list[dict]:
    return [entry for entry in job.errors if entry.get("kind") == kind]


# --- the same run, whatever it is called ------------------------------------------------------------------------


@pytest.mark.worker
def test_the_same_dart_gui_run_through_the_cli_twice_a_hand_made_zip_and_the_upload_page_is_one_trace(
    live_server, celery_worker, project, lead, realtraces, tmp_path
):
    from studio.security import api_token_issue

    token = api_token_issue(user=lead)
    folder = realtraces / DART
    outputs = []
    for source in (folder, folder, zip_folder(folder, tmp_path / "my run.zip", top="rotate-figure")):
        done = run_cli(live_server, token, "import", str(source), "--project", project.name, "--wait")
        outputs.append(done.stdout + done.stderr)  # the notes go to stderr

    page = Client()
    page.force_login(lead)
    flat = zip_folder(folder, tmp_path / "dart.zip", top=None)
    with flat.open("rb") as handle:
        answer = page.post(f"/projects/{project.pk}/import/", {"file": handle})
    assert answer.status_code == 302, answer.content
    job = wait_for(
        lambda: (
            ImportJob.objects.filter(project=project, status__in=["succeeded", "failed"]).count() == 4
            and ImportJob.objects.order_by("-pk").first()
        ),
        timeout=120,
        message="the page's import to end",
    )

    assert Trace.objects.filter(project=project).count() == 1
    trace = Trace.objects.get(project=project)
    assert trace.step_count == 15 and Step.objects.filter(trace__project=project).count() == 15
    # The first import named the trace after the folder, not after a temporary place.
    assert trace.external_id.startswith("osworld_trajectory-"), trace.external_id
    assert "succeeded: 1 trace, 15 steps" in outputs[0], outputs[0]
    for output in outputs[1:]:
        assert "succeeded: 0 traces, 0 steps, 0 screenshots stored, 1 trace already present" in output, output
    assert "already present as trace" in outputs[2]  # the hand-made zip's folder name made another external_id
    assert job.status == "succeeded" and (job.traces_imported, job.traces_skipped) == (0, 1)
    [note] = notes_of(job, ALREADY_PRESENT)
    assert note["trace"] == trace.pk and note["error"] == (
        f"dart/final_messages.json: already present as trace {trace.external_id!r} (the same instruction, "
        "screenshots and actions); nothing stored"
    )


@pytest.mark.django_db
def test_two_mobile_agent_runs_in_folders_of_the_same_name_are_two_traces_through_the_import_api(
    project, lead, realtraces, tmp_path, api_client
):
    client = api_client(lead)
    archives = []
    for number, run in enumerate(MOBILE_RUNS):
        archives.append(zip_folder(realtraces / run, tmp_path / f"{number}.zip", top="run"))
    first = upload_through_api(client, project, archives[0], "run.zip")
    second = upload_through_api(client, project, archives[1], "run.zip")

    assert (first.traces_imported, second.traces_imported) == (1, 1)
    stored = {trace.import_job_id: trace for trace in Trace.objects.filter(project=project)}
    assert len(stored) == 2
    assert stored[first.pk].external_id == "mobile-agent/run"
    other = stored[second.pk]
    assert other.external_id == f"mobile-agent/run~{other.content_hash[:12]}"
    assert other.step_count == 9 and stored[first.pk].step_count == 5
    [note] = notes_of(second, STORED_UNDER_DISTINCT_ID)
    assert note["trace"] == other.pk
    assert note["error"] == (
        f"run: stored as {other.external_id!r}, because trace 'mobile-agent/run' is stored already with other "
        "content (step 1's screenshot differs; step 2's screenshot differs; step 3's screenshot differs; and 6 "
        "more differences)"
    )
    assert second.message.endswith(", 1 stored under a distinct id (its own was taken by other content)")
    body = client.get(f"/api/imports/{second.pk}/").json()
    assert body["attention"] == "" and [n["kind"] for n in body["notes"]] == [
        STORED_UNDER_DISTINCT_ID,
        "awaiting-instruction",
    ]

    # Each again, under any name: already present, nothing stored.
    again = upload_through_api(client, project, zip_folder(realtraces / MOBILE_RUNS[1], tmp_path / "x.zip", top="x"))
    assert (again.traces_imported, again.traces_skipped, again.traces_failed) == (0, 1, 0)
    assert [note["trace"] for note in notes_of(again, ALREADY_PRESENT)] == [other.pk]
    assert Trace.objects.filter(project=project).count() == 2


def push(client, project, archive: Path, name: str):
    with archive.open("rb") as handle:
        upload = io.BytesIO(handle.read())
    upload.name = name
    return client.post(f"/api/projects/{project.pk}/traces/", {"file": upload}, format="multipart")


@pytest.mark.django_db
def test_a_push_of_another_run_under_a_taken_name_is_a_409_naming_the_difference(
    project, lead, realtraces, tmp_path, api_client
):
    client = api_client(lead)
    first, second = (
        zip_folder(realtraces / run, tmp_path / f"{n}.zip", top="run") for n, run in enumerate(MOBILE_RUNS)
    )
    made = push(client, project, first, "run.zip")
    assert made.status_code == 201, made.content
    refused = push(client, project, second, "run.zip")
    assert refused.status_code == 409, refused.content
    assert made.json()["external_id"] == "mobile-agent/run" and made.json()["already_present"] is False
    assert refused.json()["detail"].startswith(
        "trace 'mobile-agent/run' is stored already with other content (step 1's screenshot differs; "
    )
    assert refused.json()["trace"] == made.json()["id"]
    assert Trace.objects.filter(project=project).count() == 1 and Step.objects.count() == 5

    # The first again (a retried push), and under another folder name: the stored trace, nothing stored.
    for archive, name in (
        (first, "run.zip"),
        (zip_folder(realtraces / MOBILE_RUNS[0], tmp_path / "y.zip", top="y"), "y.zip"),
    ):
        again = push(client, project, archive, name)
        assert again.status_code == 200, again.content
        assert again.json()["id"] == made.json()["id"] and again.json()["already_present"] is True
    assert Trace.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_a_push_whose_id_differs_in_one_step_names_that_step(project, lead, api_client, tmp_path):
    client = api_client(lead)
    folder = native_trace_folder(tmp_path / "ep", external_id="ep-1", steps=4, size=(320, 200))
    document = json.loads((folder / "trace.json").read_text())

    def parts(doc):
        shots = []
        for step in doc["steps"]:
            upload = io.BytesIO((folder / step["screenshot"]).read_bytes())
            upload.name = step["screenshot"]
            shots.append(upload)
        final = io.BytesIO((folder / doc["final_screenshot"]).read_bytes())
        final.name = doc["final_screenshot"]
        return {"trace": json.dumps(doc), "screenshots": [*shots, final]}

    assert client.post(f"/api/projects/{project.pk}/traces/", parts(document), format="multipart").status_code == 201
    changed = json.loads(json.dumps(document))
    changed["steps"][2]["action"] = "wait()"
    answer = client.post(f"/api/projects/{project.pk}/traces/", parts(changed), format="multipart")
    assert answer.status_code == 409
    assert answer.json()["detail"] == (
        "trace 'ep-1' is stored already with other content (step 3's action differs): an external_id names one "
        "trace, so this one needs another"
    )


# --- one line never costs the others -----------------------------------------------------------


def native_line(external_id: str, instruction: str, **extra) -> bytes:
    document = {
        "format": "trace-studio/v1",
        "external_id": external_id,
        "instruction": instruction,
        "steps": [{"thought": "open it", "action": "click(start_box='(10,20)')"}],
        **extra,
    }
    return json.dumps(document).encode()


def jsonl_with_a_huge_integer_and_a_repeated_id() -> bytes:
    huge = (
        b'{"format": "trace-studio/v1", "external_id": "huge", "instruction": "x", "metadata": {"n": '
        + (b"7" * 5000)
        + b'}, "steps": [{"action": "wait()"}]}'
    )
    return b"\n".join(
        [
            native_line("a", "Open the mail"),
            huge,
            native_line("b", "Archive the mail"),
            native_line("a", "Delete the mail"),  # the same external_id, other content
            native_line("a", "Open the mail"),  # line 1 again
        ]
    )


@pytest.mark.django_db
def test_a_huge_integer_fails_only_its_line_and_a_repeated_id_is_stored_apart_and_counted(
    project, lead, api_client, tmp_path
):
    path = tmp_path / "batch.jsonl"
    path.write_bytes(jsonl_with_a_huge_integer_and_a_repeated_id())
    client = api_client(lead)
    job = upload_through_api(client, project, path)

    assert job.status == "succeeded", job.message
    assert (job.traces_imported, job.traces_skipped, job.traces_failed) == (3, 1, 1)
    other = Trace.objects.get(project=project, instruction="Delete the mail")
    assert other.external_id == f"a~{other.content_hash[:12]}"
    assert sorted(Trace.objects.filter(project=project).values_list("external_id", flat=True)) == sorted(
        ["a", "b", other.external_id]
    )
    body = client.get(f"/api/imports/{job.pk}/").json()
    assert body["attention"] == "1 of 5 traces failed"
    assert [problem["error"] for problem in body["problems"]] == [
        "batch.jsonl line 2: holds an integer of more than 4300 digits, which is not read"
    ]
    assert [note["error"] for note in body["notes"]] == [
        f"batch.jsonl line 4: stored as {other.external_id!r}, because trace 'a' is stored already with other "
        "content (the instruction differs)"
    ]
    assert job.message.startswith("1 of 5 traces failed. 3 traces, 3 steps, 0 screenshots stored, 1 trace already")

    page = Client()
    page.force_login(lead)
    shown = page.get(f"/imports/{job.pk}/").content.decode()
    assert "holds an integer of more than 4300 digits" in shown and "stored as" in shown


def hostile_zip(path: Path) -> Path:
    """An archive whose every entry is refused: a bomb, an absolute path, '..', a symbolic link."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("run/padding.png", b"\0" * (20 * 1024 * 1024))
        zf.writestr("/tmp/trace-identity-absolute.json", b"{}")
        zf.writestr("run/../escaped/trace.json", b"{}")
        link = zipfile.ZipInfo("run/trace.json")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    return path


REFUSED = [
    ("run/padding.png", "run/padding.png compresses "),
    ("/tmp/trace-identity-absolute.json", "/tmp/trace-identity-absolute.json has an absolute path"),
    ("run/../escaped/trace.json", "run/../escaped/trace.json has '..' in its path"),
    ("run/trace.json", "run/trace.json is a symbolic link; links are not imported"),
]


@pytest.mark.django_db
def test_an_archive_whose_every_entry_is_refused_names_each_with_its_reason(project, lead, api_client, tmp_path):
    client = api_client(lead)
    job = upload_through_api(client, project, hostile_zip(tmp_path / "h.zip"), "hostile.zip")
    assert job.status == "failed"
    assert [entry["file"] for entry in job.errors] == [name for name, _ in REFUSED]
    for entry, (_, start) in zip(job.errors, REFUSED):
        assert entry["error"].startswith(start), entry
    assert job.message.startswith(
        "every file of hostile.zip was refused (4): run/padding.png compresses "
    ) and job.message.endswith(
        "hostile.zip: no known trace layout found (looked for: "
        "uitars-messages, osworld, screenagent, mobile-agent, native); see docs/formats.md"
    )
    body = client.get(f"/api/imports/{job.pk}/").json()
    assert body["attention"] == "4 files refused" and len(body["problems"]) == 4
    page = Client()
    page.force_login(lead)
    shown = page.get(f"/imports/{job.pk}/").content.decode()
    assert (
        "has an absolute path" in shown and "is a symbolic link" in shown and "has &#x27;..&#x27; in its path" in shown
    )
    assert not Path("/tmp/trace-identity-absolute.json").exists()


@pytest.mark.django_db
def test_a_message_names_the_upload_never_a_temporary_folder(project, lead, api_client, tmp_path):
    archive = tmp_path / "x.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("notes.txt", b"no traces here")
    job = upload_through_api(api_client(lead), project, archive, "notes only.zip")
    assert job.status == "failed"
    assert job.message.startswith("notes only.zip: no known trace layout found"), job.message
    assert "trace-import-" not in job.message


def test_an_archive_is_read_as_a_folder_named_after_it():
    assert archive_folder_name("run.zip") == "run"
    assert archive_folder_name("my run.tar.zip") == "my run.tar"
    assert archive_folder_name("") == archive_folder_name("..") == "upload"
    assert archive_folder_name("é" * 80 + ".zip") == "upload"  # longer than a file system's name in bytes


@pytest.mark.worker
def test_the_cli_reports_a_failed_line_and_refused_entries_without_a_traceback(
    live_server, celery_worker, project, lead, tmp_path
):
    from studio.security import api_token_issue

    token = api_token_issue(user=lead)
    lines = tmp_path / "batch.jsonl"
    lines.write_bytes(jsonl_with_a_huge_integer_and_a_repeated_id())
    done = run_cli(live_server, token, "import", str(lines), "--project", project.name, "--wait")
    assert "Traceback" not in done.stdout + done.stderr
    assert "succeeded: 1 of 5 traces failed. 3 traces" in done.stdout, done.stdout
    assert "batch.jsonl line 2: holds an integer of more than 4300 digits" in done.stderr
    assert "batch.jsonl line 4: stored as 'a~" in done.stderr

    refused = run_cli(
        live_server,
        token,
        "import",
        str(hostile_zip(tmp_path / "hostile.zip")),
        "--project",
        project.name,
        "--wait",
        check=False,
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stdout + refused.stderr
    for _, start in REFUSED:
        assert start in refused.stderr, refused.stderr


# --- pushes step by step, the stored field, duplicates --------------------------------------------------------------


@pytest.mark.django_db
def test_a_step_push_takes_source_and_metadata_and_its_end_names_the_same_content(
    project, lead, annotator, api_client, tmp_path
):
    client = api_client(lead)
    folder = native_trace_folder(tmp_path / "ep", external_id="ep-1", steps=2, size=(320, 200))
    document = json.loads((folder / "trace.json").read_text())
    files = [(folder / step["screenshot"]).read_bytes() for step in document["steps"]]
    whole = services.trace_push(
        project=project,
        round=None,
        archive=None,
        document=(folder / "trace.json").read_bytes(),
        screenshots=[_named(data, step["screenshot"]) for data, step in zip(files, document["steps"])]
        + [_named((folder / document["final_screenshot"]).read_bytes(), document["final_screenshot"])],
    )
    base = f"/api/projects/{project.pk}/traces/ep-again/"
    bad = client.post(
        f"{base}steps/",
        {"index": 1, "step": json.dumps(document["steps"][0]), "metadata": "[1, 2]"},
        format="multipart",
    )
    assert bad.status_code == 400 and bad.json()["detail"] == "metadata: a JSON object, not list"
    for index, (step, data) in enumerate(zip(document["steps"], files), start=1):
        extra = (
            {"instruction": document["instruction"], "source": "my-agent", "metadata": '{"seed": 3}'}
            if index == 1
            else {}
        )
        answer = client.post(
            f"{base}steps/",
            {"index": index, "step": json.dumps(step), "screenshot": _named(data, "s.png"), **extra},
            format="multipart",
        )
        assert answer.status_code == 201, answer.content
    pushed = Trace.objects.get(project=project, external_id="ep-again")
    assert (pushed.source, pushed.metadata, pushed.content_hash) == ("my-agent", {"seed": 3}, "")
    ended = client.post(f"{base}end/", {}, format="multipart")
    assert ended.status_code == 200 and ended.json()["same_content_as"] == ["ep-1"]
    pushed.refresh_from_db()
    assert pushed.content_hash == whole.trace.content_hash

    Annotation.objects.create(trace=whole.trace, project=project, annotator=annotator)
    out = StringIO()
    call_command("trace_duplicates", "--project", project.name, stdout=out)
    text = out.getvalue()
    assert text.startswith(f"{project.name}: 1 content held by more than one trace (2 traces)")
    assert f"trace {whole.trace.pk} 'ep-1' (test, " in text and f"trace {pushed.pk} 'ep-again' (my-agent, " in text
    assert "annotation " in text and f"by {annotator.username}: draft" in text
    listed = StringIO()
    call_command("trace_duplicates", "--project", str(project.pk), "--json", stdout=listed)
    [group] = json.loads(listed.getvalue())["duplicates"]
    assert [t["external_id"] for t in group["traces"]] == ["ep-1", "ep-again"]
    assert [len(t["annotations"]) for t in group["traces"]] == [1, 0]


def _named(data: bytes, name: str):
    upload = io.BytesIO(data)
    upload.name = name
    return upload


@pytest.mark.django_db
def test_the_migration_hashes_each_stored_trace_as_it_was_received(project, lead, tmp_path):
    import importlib

    folder = native_trace_folder(tmp_path / "ep", external_id="ep-1", steps=3, size=(320, 200))
    job = import_job_run(
        job_id=import_job_create(
            project=project, user=None, upload_name=str(folder), server_path=True, enqueue=False
        ).pk
    )
    assert job.traces_imported == 1
    trace = Trace.objects.get(project=project)
    received = trace.content_hash
    steps = list(trace.steps.order_by("index").values_list("screenshot__sha256", "action_text"))
    assert received == identity.trace_content_hash(trace.instruction, steps)
    services.trace_instruction_set(trace_id=trace.pk, actor=lead, instruction="Another task, written by a lead")
    Trace.objects.filter(pk=trace.pk).update(content_hash="")

    migration = importlib.import_module("traces.migrations.0017_trace_content_hash")
    migration.fill(django_apps, None)
    trace.refresh_from_db()
    assert trace.content_hash == received  # the instruction it came with, not the lead's


@pytest.mark.django_db(transaction=True)
def test_two_writers_of_one_content_under_two_names_store_it_once(project, role_groups):
    """The content lookup and the insert are one step per content: a writer of the same content under another name
    waits for the first one's transaction and then finds its trace (PostgreSQL: an advisory lock on the project and
    hash; SQLite: its writers are serialised)."""
    import threading

    from django.db import connection, transaction

    from tests.fixtures_export import png
    from traces.importers.base import ImageRef, ImportedStep, ImportedTrace

    shots = [png(200 + n) for n in range(2)]
    services.screenshots_store(images=[(data, f"s{n}.png") for n, data in enumerate(shots)])  # as a retry finds them

    def imported(external_id: str) -> ImportedTrace:
        steps = [
            ImportedStep(screenshot=ImageRef(f"s{n}.png", lambda data=data: data), raw_response="Action: wait()")
            for n, data in enumerate(shots)
        ]
        return ImportedTrace(external_id=external_id, instruction="Wait twice", source="native", steps=steps)

    held, release, results = threading.Event(), threading.Event(), {}

    def first():
        try:
            with transaction.atomic():
                results["a"] = services.trace_import_one(project=project, imported=imported("a"))
                held.set()
                release.wait(10)
        finally:
            connection.close()

    def second():
        try:
            results["b"] = services.trace_import_one(project=project, imported=imported("b"))
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert held.wait(10)
    two = threading.Thread(target=second)
    two.start()
    two.join(1.0)
    waited = two.is_alive()  # the second writer waits while the first one's transaction holds the content
    release.set()
    one.join(10)
    two.join(10)
    assert waited
    assert results["a"].created and not results["b"].created and results["b"].trace.pk == results["a"].trace.pk
    assert list(Trace.objects.filter(project=project).values_list("external_id", flat=True)) == ["a"]
