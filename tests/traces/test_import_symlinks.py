"""Import roots and trace folders reached through symbolic links import through every entry point; a link inside a
trace that points outside it is still refused; an unexpected error in one trace is reported on it and the batch
goes on."""

from __future__ import annotations

import json
import zipfile

import pytest
from django.core.management import call_command

from tests.factories import native_trace_folder
from traces import services
from traces.importers import native
from traces.importers.archive import safe_extract
from traces.models import Trace

pytestmark = pytest.mark.django_db


def run_server_path(project, path, fmt=""):
    job = services.import_job_create(
        project=project,
        user=None,
        upload_name=str(path),
        original_name=path.name,
        fmt=fmt,
        server_path=True,
        enqueue=False,
    )
    return services.import_job_run(job_id=job.pk)


def test_root_reached_through_a_link_imports(project, tmp_path):
    data = tmp_path / "volume" / "batch"
    for n in range(3):
        native_trace_folder(data / f"t{n}", external_id=f"link-{n}", steps=2)
    link = tmp_path / "mounted"
    link.symlink_to(tmp_path / "volume")
    job = run_server_path(project, link / "batch")
    assert job.status == "succeeded", (job.message, job.errors)
    assert job.traces_imported == 3 and job.traces_failed == 0 and not job.errors


def test_trace_folder_that_is_a_link_imports(project, tmp_path):
    real = native_trace_folder(tmp_path / "elsewhere" / "one", external_id="linked-folder", steps=2)
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "one").symlink_to(real)
    job = run_server_path(project, batch)
    assert job.status == "succeeded" and job.traces_imported == 1, (job.message, job.errors)


def test_realtraces_through_a_link_with_the_command(project, realtraces, tmp_path, capsys):
    link = tmp_path / "realtraces-link"
    link.symlink_to(realtraces)
    call_command("import_traces", str(link / "dart-gui" / "examples" / "osworld_trajectory"), project=project.name)
    assert Trace.objects.filter(project=project).count() == 1


def test_link_inside_a_trace_pointing_outside_is_refused(project, tmp_path):
    folder = native_trace_folder(tmp_path / "batch" / "evil", external_id="evil", steps=2)
    secret = tmp_path / "secret.png"
    secret.write_bytes((folder / "step_001.png").read_bytes())
    (folder / "step_001.png").unlink()
    (folder / "step_001.png").symlink_to(secret)
    native_trace_folder(tmp_path / "batch" / "good", external_id="good", steps=2)
    job = run_server_path(project, tmp_path / "batch")
    assert job.traces_imported == 1 and job.traces_failed == 1
    assert "points outside the trace folder" in json.dumps(job.errors)


def test_unexpected_error_in_one_trace_is_reported_and_the_batch_goes_on(project, tmp_path, monkeypatch):
    for n in range(3):
        native_trace_folder(tmp_path / "batch" / f"t{n}", external_id=f"u-{n}", steps=2)
    real = native.trace_from_document

    def flaky(document, folder, *, where):
        if document["external_id"] == "u-1":
            raise KeyError("a layout nobody foresaw")
        return real(document, folder, where=where)

    monkeypatch.setattr(native, "trace_from_document", flaky)
    job = run_server_path(project, tmp_path / "batch")
    assert job.status == "succeeded"
    assert job.traces_imported == 2 and job.traces_failed == 1
    [error] = job.errors
    assert error["file"] == "t1/trace.json" and "KeyError" in error["error"] and "nobody foresaw" in error["error"]


def _realpaths_counted(monkeypatch) -> list[str]:
    """Every ``os.path.realpath`` (what ``Path.resolve`` calls) made from here on."""
    import os.path

    calls: list[str] = []
    real = os.path.realpath

    def counted(path, *args, **kwargs):
        calls.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counted)
    return calls


def test_reading_under_a_resolved_root_resolves_each_screenshot_once(tmp_path, monkeypatch):
    root = (tmp_path / "batch").resolve()
    native_trace_folder(root / "t", external_id="resolves", steps=4, final=False)
    calls = _realpaths_counted(monkeypatch)
    [trace] = list(native.NativeImporter().read(root))
    # Each named screenshot resolved to be checked against its trace folder; the folder and the messages' names
    # need none where the names as given already say where they lie.
    assert len(calls) == 4, calls
    assert [step.screenshot.name for step in trace.steps] == [f"t/step_00{n}.png" for n in range(1, 5)]


def test_names_under_a_linked_root_are_the_resolved_ones(tmp_path):
    real = (tmp_path / "volume").resolve()
    native_trace_folder(real / "batch" / "t", external_id="linked-names", steps=2, final=False)
    (tmp_path / "mounted").symlink_to(real)
    [trace] = list(native.NativeImporter().read(tmp_path / "mounted" / "batch"))
    assert [step.screenshot.name for step in trace.steps] == ["t/step_001.png", "t/step_002.png"]


def test_unpacking_resolves_each_folder_once(tmp_path, monkeypatch):
    upload = tmp_path / "upload.zip"
    with zipfile.ZipFile(upload, "w") as zf:
        for folder in ("a", "a/images", "b"):
            for n in range(5):
                zf.writestr(f"{folder}/f{n}.json", "{}")
    calls = _realpaths_counted(monkeypatch)
    report = safe_extract(upload, tmp_path / "out")
    assert report.extracted == 15 and not report.refused
    assert len(calls) == 4, calls  # the destination and the three folders
    assert sorted(path.relative_to(tmp_path / "out").as_posix() for path in report.members) == sorted(
        f"{folder}/f{n}.json" for folder in ("a", "a/images", "b") for n in range(5)
    )


def test_unpacking_follows_no_link_already_in_its_destination_out_of_it(tmp_path):
    """The destination is a fresh folder where imports unpack; were a link there already, under a folder's name or
    a file's, what the archive holds under that name would be refused, never written where the link points."""
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "linked").symlink_to(outside)
    (dest / "note.json").symlink_to(outside / "note.json")
    upload = tmp_path / "upload.zip"
    with zipfile.ZipFile(upload, "w") as zf:
        zf.writestr("linked/f.json", "{}")
        zf.writestr("note.json", "{}")
        zf.writestr("kept/f.json", "{}")
    report = safe_extract(upload, dest)
    assert sorted(entry["file"] for entry in report.refused) == ["linked/f.json", "note.json"]
    assert all("points outside the archive" in entry["error"] for entry in report.refused)
    assert list(outside.iterdir()) == [] and (dest / "kept" / "f.json").read_text() == "{}"
