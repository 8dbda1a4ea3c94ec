"""Import edges: an undecodable PNG with valid checksums is refused on its trace; a long
non-ASCII upload name imports and messages name the upload, never a server path; a wrong explicit format that finds
nothing fails and names the formats that match."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.factories import native_trace_folder
from traces import services
from traces.images import ImageProblem, inspect_image
from traces.models import Trace

pytestmark = pytest.mark.django_db


def png_with_bad_pixels(width=64, height=48) -> bytes:
    """A PNG whose chunks all carry correct CRCs but whose IDAT holds a corrupt deflate stream."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = b"\x78\x9c" + bytes(range(256)) * 3  # a zlib header, then bytes that do not inflate
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def test_undecodable_png_is_refused_on_its_trace(project, tmp_path):
    with pytest.raises(ImageProblem, match="not a readable image"):
        inspect_image(png_with_bad_pixels(), "bad.png")
    good = native_trace_folder(tmp_path / "batch" / "good", external_id="good", steps=2)
    bad = native_trace_folder(tmp_path / "batch" / "bad", external_id="bad", steps=2)
    (bad / "step_002.png").write_bytes(png_with_bad_pixels())
    job = services.import_job_create(
        project=project, user=None, upload_name=str(good.parent), original_name="batch", server_path=True, enqueue=False
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded" and job.traces_imported == 1 and job.traces_failed == 1
    assert "step_002.png" in str(job.errors) and "not a readable image" in str(job.errors)


def _zip_of(folder) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder.parent))
    return buffer.getvalue()


def test_a_long_non_ascii_upload_name_imports(project, lead, tmp_path):
    native_trace_folder(tmp_path / "src" / "t1", external_id="long-name", steps=2)
    name = "トレース・データ・" * 20 + ".zip"  # 180 characters, 540 bytes in UTF-8: no file system takes it
    stored = services.import_upload_store(
        uploaded_file=SimpleUploadedFile("upload.zip", _zip_of(tmp_path / "src" / "t1"))
    )
    job = services.import_job_create(project=project, user=lead, upload_name=stored, original_name=name, enqueue=False)
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    assert Trace.objects.filter(external_id="long-name").exists()


def test_a_broken_upload_is_named_by_its_name_not_a_server_path(project, lead):
    stored = services.import_upload_store(uploaded_file=SimpleUploadedFile("x.zip", b"PK\x03\x04 not really a zip"))
    job = services.import_job_create(
        project=project, user=lead, upload_name=stored, original_name="runs-2026.zip", enqueue=False
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "failed"
    assert "/tmp" not in job.message and "trace-upload-" not in job.message, job.message


def test_a_wrong_explicit_format_fails_and_names_the_matching_ones(project, realtraces):
    folder = realtraces / "dart-gui" / "examples" / "osworld_trajectory"
    job = services.import_job_create(
        project=project,
        user=None,
        upload_name=str(folder),
        original_name="dart",
        server_path=True,
        fmt="screenagent",
        enqueue=False,
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "failed"
    assert "the screenagent format found no traces in dart" in job.message and "uitars-messages" in job.message


@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n"], ids=["empty", "blank lines"])
def test_an_archive_holding_only_an_empty_jsonl_finds_no_traces(project, lead, content):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("runs/traces.jsonl", content)
    stored = services.import_upload_store(uploaded_file=SimpleUploadedFile("runs.zip", archive.getvalue()))
    job = services.import_job_create(
        project=project, user=lead, upload_name=stored, original_name="runs.zip", fmt="native", enqueue=False
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "failed"
    assert "the native format found no traces in runs.zip" in job.message
    assert not Trace.objects.filter(project=project).exists()
