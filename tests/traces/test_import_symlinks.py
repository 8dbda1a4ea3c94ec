"""Import roots and trace folders reached through symbolic links import through every entry point; a link inside a
trace that points outside it is still refused; an unexpected error in one trace is reported on it and the batch
goes on."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from tests.factories import native_trace_folder
from traces import services
from traces.importers import native
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
