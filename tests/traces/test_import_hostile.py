"""Hostile and broken inputs: each is refused with a message naming the file (and line), and the valid
rest of the batch is still imported. A broken trace leaves no Trace or Step rows behind."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from traces.models import ImportJob, Step, Trace
from traces.services import import_job_create, import_job_run

# --- building native traces ------------------------------------------------------------------


def image_bytes(label: str, fmt: str = "PNG") -> bytes:
    image = Image.new("RGB", (200, 120), (250, 250, 250))
    ImageDraw.Draw(image).rectangle((10, 10, 190, 40), outline=(0, 0, 0))
    ImageDraw.Draw(image).text((15, 15), label, fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def trace_files(external_id: str, *, steps: int = 2, action: str = "click(start_box='(10,20)')") -> dict[str, bytes]:
    """A native trace folder as {relative path: bytes}."""
    files = {f"{external_id}/s{n}.png": image_bytes(f"{external_id} {n}") for n in range(1, steps + 1)}
    document = {
        "format": "trace-studio/v1",
        "external_id": external_id,
        "instruction": f"Do {external_id}",
        "steps": [{"screenshot": f"s{n}.png", "thought": f"step {n}", "action": action} for n in range(1, steps + 1)],
    }
    files[f"{external_id}/trace.json"] = json.dumps(document).encode()
    return files


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def write_zip(path: Path, files: dict[str, bytes], *, extra=None) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(f"batch/{name}", data)
        if extra:
            extra(zf)
    return path


def run(project, path: Path) -> ImportJob:
    job = import_job_create(
        project=project, user=None, upload_name=str(path), original_name=path.name, server_path=True, enqueue=False
    )
    return import_job_run(job_id=job.pk)


def error_for(job: ImportJob, fragment: str) -> str:
    matches = [e["error"] for e in job.errors if fragment in e["error"]]
    assert matches, f"no error mentioning {fragment!r} in {job.errors}"
    return matches[0]


def assert_only_imported(project, *external_ids: str) -> None:
    assert sorted(Trace.objects.filter(project=project).values_list("external_id", flat=True)) == sorted(external_ids)
    assert Step.objects.filter(trace__project=project).count() == sum(
        Trace.objects.get(project=project, external_id=e).step_count for e in external_ids
    )


# --- archives --------------------------------------------------------------------------------


def test_path_escapes_absolute_paths_and_symlinks_are_refused(project, tmp_path):
    def hostile(zf: zipfile.ZipFile):
        zf.writestr("batch/../escaped.txt", b"outside")
        zf.writestr("/tmp/absolute-evil.txt", b"absolute")
        link = zipfile.ZipInfo("batch/bad/link.png")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")

    archive = write_zip(tmp_path / "batch.zip", trace_files("good"), extra=hostile)
    job = run(project, archive)
    assert job.status == "succeeded", job.message
    assert error_for(job, "escaped.txt") == "batch/../escaped.txt has '..' in its path"
    assert error_for(job, "absolute-evil") == "/tmp/absolute-evil.txt has an absolute path"
    assert error_for(job, "link.png") == "batch/bad/link.png is a symbolic link; links are not imported"
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/absolute-evil.txt").exists()
    assert_only_imported(project, "good")


def test_high_ratio_entry_is_refused_as_a_bomb(project, tmp_path):
    def bomb(zf: zipfile.ZipFile):
        zf.writestr("batch/padding.bin", b"\0" * (20 * 1024 * 1024))

    archive = write_zip(tmp_path / "bomb.zip", trace_files("good"), extra=bomb)
    job = run(project, archive)
    assert job.status == "succeeded", job.message
    message = error_for(job, "padding.bin")
    assert message.startswith("batch/padding.bin compresses ") and message.endswith(
        ":1, over the 200:1 limit (decompression bomb)"
    )
    assert_only_imported(project, "good")


def test_archive_unpacking_past_the_limit_is_stopped(project, tmp_path, settings):
    files = {**trace_files("one"), **trace_files("two")}
    archive = write_zip(tmp_path / "big.zip", files)
    settings.IMPORT_MAX_UNPACKED_BYTES = sum(len(d) for d in files.values()) // 2
    job = run(project, archive)
    assert job.status == "failed"
    assert job.message.startswith(
        f"big.zip: unpacks to more than {settings.IMPORT_MAX_UNPACKED_BYTES} bytes (decompression bomb); stopped at batch/"
    )
    assert not Trace.objects.filter(project=project).exists()


def declare_size(archive: Path, name: str, size: int) -> None:
    """Rewrite the unpacked size ``name`` declares, in its local header and in the central directory, to ``size``."""
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo(name)
    data = bytearray(archive.read_bytes())
    data[info.header_offset + 22 : info.header_offset + 26] = size.to_bytes(4, "little")
    encoded, central = name.encode(), data.index(b"PK\x01\x02")
    while data[central + 46 : central + 46 + len(encoded)] != encoded:  # each entry's name starts at 46
        central = data.index(b"PK\x01\x02", central + 4)
    data[central + 24 : central + 28] = size.to_bytes(4, "little")
    archive.write_bytes(bytes(data))


def test_a_header_that_lies_about_its_size_does_not_smuggle_a_bomb(project, tmp_path):
    archive = write_zip(
        tmp_path / "liar.zip",
        trace_files("good"),
        extra=lambda zf: zf.writestr("batch/payload.bin", b"A" * (4 * 1024 * 1024)),
    )
    declare_size(archive, "batch/payload.bin", 100)  # a harmless 100 bytes
    job = run(project, archive)
    assert job.status == "succeeded", job.message
    assert error_for(job, "payload.bin").startswith("batch/payload.bin is damaged: Bad CRC-32")
    assert_only_imported(project, "good")


# --- images ----------------------------------------------------------------------------------


def test_truncated_and_fake_images_fail_only_their_trace(project, tmp_path):
    files = {**trace_files("good"), **trace_files("bad-png"), **trace_files("bad-jpeg"), **trace_files("fake-png")}
    png = files["bad-png/s2.png"]
    files["bad-png/s2.png"] = png[: len(png) // 2]
    jpeg = image_bytes("jpeg", "JPEG")
    files["bad-jpeg/s1.png"] = jpeg[: len(jpeg) - 200]
    files["fake-png/s1.png"] = b"this is a text file, not a screenshot\n"
    job = run(project, write_tree(tmp_path / "batch", files))
    assert job.status == "succeeded", job.message
    assert job.traces_failed == 3
    assert error_for(job, "bad-png").startswith("bad-png step 2: bad-png/s2.png: not a readable image")
    assert error_for(job, "bad-jpeg") == "bad-jpeg step 1: bad-jpeg/s1.png: truncated JPEG (no end-of-image marker)"
    # Pillow's own words name the buffer it read ("<_io.BytesIO object at 0x…>"), which says nothing to the uploader.
    assert error_for(job, "fake-png") == (
        "fake-png step 1: fake-png/s1.png: not a readable image (its bytes are no PNG, JPEG or WEBP image)"
    )
    assert not any("BytesIO" in entry["error"] for entry in job.errors)
    assert_only_imported(project, "good")


def test_missing_screenshot_file_fails_only_its_trace(project, tmp_path):
    files = {**trace_files("good"), **trace_files("missing", steps=3)}
    del files["missing/s2.png"]
    job = run(project, write_tree(tmp_path / "batch", files))
    assert error_for(job, "missing") == "missing/trace.json step 2: file 's2.png' does not exist"
    assert_only_imported(project, "good")


# --- JSON ------------------------------------------------------------------------------------


def test_invalid_json_names_file_line_and_column(project, tmp_path):
    files = {**trace_files("good"), **trace_files("broken")}
    files["broken/trace.json"] = b'{\n  "external_id": "broken",\n  "instruction": oops\n}'
    job = run(project, write_tree(tmp_path / "batch", files))
    assert error_for(job, "broken") == "broken/trace.json: invalid JSON at line 3 column 18: Expecting value"
    assert_only_imported(project, "good")


def test_invalid_json_line_in_jsonl_names_the_line(project, tmp_path):
    root = write_tree(tmp_path / "batch", trace_files("shots"))
    good = {
        "external_id": "jsonl-good",
        "instruction": "x",
        "steps": [{"screenshot": "shots/s1.png", "action": "wait()"}],
    }
    (root / "traces.jsonl").write_text(json.dumps(good) + "\n" + '{"external_id": "x",}\n', encoding="utf-8")
    job = run(project, root / "traces.jsonl")
    assert job.status == "succeeded", job.message
    assert error_for(job, "traces.jsonl") == (
        "traces.jsonl line 2: invalid JSON at line 1 column 21: Expecting property name enclosed in double quotes"
    )
    assert_only_imported(project, "jsonl-good")


def test_invalid_utf8_names_the_byte(project, tmp_path):
    files = {**trace_files("good"), **trace_files("latin1")}
    files["latin1/trace.json"] = files["latin1/trace.json"].replace(b"Do latin1", b"Do caf\xe9")
    offset = files["latin1/trace.json"].index(b"\xe9")
    job = run(project, write_tree(tmp_path / "batch", files))
    assert error_for(job, "latin1") == f"latin1/trace.json: not valid UTF-8 (byte {offset})"
    assert_only_imported(project, "good")


def test_deeply_nested_json_is_refused(project, tmp_path):
    files = {**trace_files("good"), **trace_files("deep")}
    files["deep/trace.json"] = b"[" * 200_000 + b"]" * 200_000
    job = run(project, write_tree(tmp_path / "batch", files))
    assert error_for(job, "deep") == "deep/trace.json: JSON nested too deeply"
    assert_only_imported(project, "good")


def test_wrong_field_types_name_the_step(project, tmp_path):
    files = {**trace_files("good"), **trace_files("typed")}
    document = json.loads(files["typed/trace.json"])
    document["steps"][1]["action"] = ["click"]
    files["typed/trace.json"] = json.dumps(document).encode()
    job = run(project, write_tree(tmp_path / "batch", files))
    assert error_for(job, "typed") == "typed/trace.json step 2: field 'action' must be str, found list"
    assert_only_imported(project, "good")


# --- actions ---------------------------------------------------------------------------------


def test_unparseable_action_is_kept_raw_and_flagged(project, tmp_path):
    files = {**trace_files("good"), **trace_files("typo", action="clik(start_box='(1,2)'")}
    job = run(project, write_tree(tmp_path / "batch", files))
    assert job.status == "succeeded" and job.traces_imported == 2 and job.unparsed_actions == 2
    step = Step.objects.get(trace__external_id="typo", index=1)
    assert step.action_text == "clik(start_box='(1,2)'" and step.parsed_actions == []
    assert step.parse_error
    assert "Action: clik(start_box='(1,2)'" in step.raw_response
    assert_only_imported(project, "good", "typo")


# --- upload size -----------------------------------------------------------------------------


def test_upload_over_the_size_limit_is_refused(project, lead, api_client, settings, tmp_path):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    archive = write_zip(tmp_path / "large.zip", trace_files("good"))
    with archive.open("rb") as handle:
        response = api_client(lead).post(f"/api/projects/{project.pk}/imports/", {"file": handle}, format="multipart")
    assert response.status_code == 413
    assert response.json()["detail"] == f"upload of {archive.stat().st_size} bytes is over the 1000-byte limit"
    assert not ImportJob.objects.exists()


def test_an_upload_that_is_no_archive_is_named_as_the_user_named_it(project, lead):
    # The stored upload is imports/upload*.zip: the message named it ("upload.zip: not a zip archive"), a file the
    # user never had, instead of the file they chose.
    from django.test import Client

    client = Client()
    client.force_login(lead)
    upload = io.BytesIO(b"this is not a zip")
    upload.name = "garbage.zip"
    response = client.post(f"/api/projects/{project.pk}/imports/", {"file": upload})
    assert response.status_code == 202, response.content
    job = import_job_run(job_id=response.json()["id"])
    assert job.status == "failed"
    assert job.message == "garbage.zip: not a zip archive (or it is truncated)"


# --- what the plan leaves to the shards ---------------------------------------------------------
# An import's plan does not unpack screenshots: it copies their compressed bytes from the upload into its shards'
# parts, and each shard unpacks and checks its own (traces.services.import_plan_make).


def member_data_offset(archive: Path, name: str) -> tuple[int, int]:
    """Where ``name``'s compressed bytes start in ``archive``, and how many there are."""
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo(name)
    data = archive.read_bytes()
    name_length, extra_length = (
        int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little"),
        (int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")),
    )
    return info.header_offset + 30 + name_length + extra_length, info.compress_size


def damage(archive: Path, name: str) -> None:
    """Flip bytes in the middle of ``name``'s compressed data; its headers (CRC, sizes) stay as they were."""
    start, size = member_data_offset(archive, name)
    data = bytearray(archive.read_bytes())
    for offset in range(start + size // 2, start + size // 2 + 8):
        data[offset] ^= 0xFF
    archive.write_bytes(bytes(data))


@pytest.mark.parametrize("top", ["batch/", ""], ids=["in a top folder", "at the archive's top"])
def test_a_damaged_screenshot_fails_its_trace_and_is_named_as_uploaded(project, tmp_path, top):
    files = {**trace_files("good"), **trace_files("bad", steps=3)}
    archive = tmp_path / "upload.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(f"{top}{name}", data, compress_type=zipfile.ZIP_STORED if name.endswith("2.png") else None)
    damage(archive, f"{top}bad/s2.png")
    job = run(project, archive)
    assert job.status == "succeeded", job.message
    assert error_for(job, "s2.png is damaged").startswith(f"{top}bad/s2.png is damaged: ")
    assert "trace-import-" not in json.dumps(job.errors)  # no server folder named
    assert_only_imported(project, "good")


def test_a_screenshot_whose_header_lies_about_its_size_is_damaged_not_a_bomb(project, tmp_path):
    files = {**trace_files("good"), **trace_files("liar")}
    files["liar/s1.png"] = image_bytes("liar") + b"\0" * (1024 * 1024)
    archive = write_zip(tmp_path / "liar.zip", files)
    declare_size(archive, "batch/liar/s1.png", 100)
    job = run(project, archive)
    assert job.status == "succeeded", job.message
    assert error_for(job, "s1.png is damaged").startswith("batch/liar/s1.png is damaged: Bad CRC-32")
    assert_only_imported(project, "good")


def test_the_plan_copies_screenshots_into_the_parts_without_unpacking_them(project, tmp_path, settings, monkeypatch):
    from django.core.files.storage import default_storage

    from traces.services import import_plan_make

    settings.IMPORT_SHARD_TRACES = 1
    files = {**trace_files("one"), **trace_files("two", steps=3)}
    archive = tmp_path / "batch.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in files.items():
            # stored, deflated, and LZMA (which a copy cannot take as it is: the plan unpacks that one)
            kind = zipfile.ZIP_LZMA if name == "two/s3.png" else zipfile.ZIP_DEFLATED if "1" in name else None
            zf.writestr(f"batch/{name}", data, compress_type=kind)
    read = []
    real_open = zipfile.ZipFile.open

    def watched(self, name, mode="r", *args, **kwargs):
        if mode == "r":
            read.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return real_open(self, name, mode, *args, **kwargs)

    job = import_job_create(
        project=project, user=None, upload_name=str(archive), original_name="batch.zip", server_path=True, enqueue=False
    )
    monkeypatch.setattr(zipfile.ZipFile, "open", watched)
    (tmp_path / "scratch").mkdir()
    import_plan_make(job=job, scratch=tmp_path / "scratch")
    monkeypatch.setattr(zipfile.ZipFile, "open", real_open)
    assert sorted(read) == ["batch/one/trace.json", "batch/two/s3.png", "batch/two/trace.json"]

    job.refresh_from_db()
    with zipfile.ZipFile(archive) as zf:
        upload = {info.filename: info for info in zf.infolist()}
    copied = {}
    for part in job.plan["parts"]:
        with default_storage.open(part, "rb") as handle, zipfile.ZipFile(io.BytesIO(handle.read())) as zf:
            copied.update({info.filename: info for info in zf.infolist()})
    assert sorted(copied) == sorted(upload)
    for name, info in upload.items():
        if name != "batch/two/s3.png":  # as it was in the upload: checksum, sizes, compression
            assert (copied[name].CRC, copied[name].compress_size, copied[name].compress_type) == (
                info.CRC,
                info.compress_size,
                info.compress_type,
            ), name
        assert copied[name].file_size == info.file_size

    job = import_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    assert job.errors == []
    assert_only_imported(project, "one", "two")
    assert not Step.objects.filter(trace__project=project, screenshot__isnull=True).exists()


def test_a_screenshot_whose_header_is_not_where_the_directory_says_fails_only_its_trace(project, tmp_path):
    archive = write_zip(tmp_path / "batch.zip", {**trace_files("good"), **trace_files("lost")})
    with zipfile.ZipFile(archive) as zf:
        offset = zf.getinfo("batch/lost/s1.png").header_offset
    data = bytearray(archive.read_bytes())
    data[offset : offset + 4] = b"XXXX"  # the member's local header signature
    archive.write_bytes(bytes(data))
    job = run(project, archive)
    assert job.status == "succeeded", job.message
    assert error_for(job, "s1.png is damaged").startswith("batch/lost/s1.png is damaged: ")
    assert_only_imported(project, "good")


# A value of the wrong JSON type got as far as Python's own error ("TypeError: unhashable type: 'list'" for an
# outcome compared with the set of outcomes); each must be named: the file, the step, the field and the type wanted.
@pytest.mark.parametrize(
    ("where", "field", "value", "expected"),
    [
        ("trace", "outcome", ["x"], "typed/trace.json: field 'outcome' must be str, found list"),
        ("trace", "outcome", {"a": 1}, "typed/trace.json: field 'outcome' must be str, found dict"),
        ("trace", "source", ["x"], "typed/trace.json: field 'source' must be str, found list"),
        ("trace", "platform", 3, "typed/trace.json: field 'platform' must be str, found int"),
        ("trace", "metadata", [], "typed/trace.json: field 'metadata' must be dict, found list"),
        ("trace", "final_screenshot", ["s1.png"], "typed/trace.json: field 'final_screenshot' must be str, found list"),
        ("step", "screenshot", {"a": 1}, "typed/trace.json step 2: field 'screenshot' must be str, found dict"),
        ("step", "thought", 7, "typed/trace.json step 2: field 'thought' must be str, found int"),
        ("step", "reflection", ["x"], "typed/trace.json step 2: field 'reflection' must be str, found list"),
        (
            "step",
            "human_edited_response",
            True,
            "typed/trace.json step 2: field 'human_edited_response' must be str, found bool",
        ),
        ("step", "context", "plans", "typed/trace.json step 2: field 'context' must be dict, found str"),
    ],
)
def test_a_field_of_the_wrong_json_type_is_named_with_the_type_it_must_be(
    project, tmp_path, where, field, value, expected
):
    files = {**trace_files("good"), **trace_files("typed")}
    document = json.loads(files["typed/trace.json"])
    (document if where == "trace" else document["steps"][1])[field] = value
    files["typed/trace.json"] = json.dumps(document).encode()
    job = run(project, write_tree(tmp_path / "batch", files))
    assert error_for(job, "typed") == expected
    assert_only_imported(project, "good")


def test_a_screenshot_path_too_long_for_the_file_system_is_named_not_an_oserror(project, tmp_path):
    files = {**trace_files("good"), **trace_files("long")}
    document = json.loads(files["long/trace.json"])
    document["steps"][0]["screenshot"] = "s" * 5000 + ".png"
    files["long/trace.json"] = json.dumps(document).encode()
    job = run(project, write_tree(tmp_path / "batch", files))
    message = error_for(job, "long")
    assert message == f"long/trace.json step 1: file '{'s' * 119}…' (5004 characters) is too long for a file name"
    assert_only_imported(project, "good")


# --- the other source formats ------------------------------------------------------------------


def mobile_agent_run(folder: Path, data: dict, images=("1.jpg", "2.jpg")) -> Path:
    folder.mkdir(parents=True)
    (folder / "data.json").write_text(json.dumps(data), encoding="utf-8")
    for name in images:
        (folder / name).write_bytes(image_bytes(name, "JPEG"))
    return folder


MOBILE_STEP = {"Observation": "home", "Thought": "open it", "Action": "open App (Mail)"}


@pytest.mark.parametrize(
    ("data", "images", "expected"),
    [
        # "²".isdigit() is True and int("²") a ValueError: the key was taken for a step number, then crashed.
        ({"1": MOBILE_STEP, "²": MOBILE_STEP}, ("1.jpg",), "key '²' is not a step number"),
        ({"1": MOBILE_STEP, "01": MOBILE_STEP}, ("1.jpg",), "step 1 is given twice (key '01')"),
        ({"1": MOBILE_STEP, "9" * 5000: MOBILE_STEP}, ("1.jpg",), "is not a step number"),
        ({"1": {**MOBILE_STEP, "Thought": ["x"]}}, ("1.jpg",), "step 1: field 'Thought' must be str, found list"),
        ({"1": {**MOBILE_STEP, "Observation": {}}}, ("1.jpg",), "step 1: field 'Observation' must be str, found dict"),
    ],
)
def test_mobile_agent_step_keys_and_texts_are_checked(project, tmp_path, data, images, expected):
    mobile_agent_run(tmp_path / "results" / "Mail" / "1", {"1": MOBILE_STEP, "2": MOBILE_STEP})
    mobile_agent_run(tmp_path / "results" / "Mail" / "2", data, images)
    job = run(project, tmp_path / "results")
    assert job.status == "succeeded", job.message
    message = error_for(job, "Mail/2")
    assert message.startswith("Mail/2/data.json") and expected in message, message
    assert Trace.objects.filter(project=project).count() == 1


def test_mobile_agent_screenshot_named_by_a_superscript_digit_is_not_a_step(project, tmp_path):
    run_folder = mobile_agent_run(tmp_path / "results" / "Mail" / "1", {"1": MOBILE_STEP}, ("1.jpg", "².jpg"))
    job = run(project, tmp_path / "results")
    assert job.status == "succeeded" and job.traces_imported == 1, (job.message, job.errors)
    trace = Trace.objects.get(project=project)
    assert trace.final_screenshot is None and trace.step_count == 1
    assert (run_folder / "².jpg").is_file()


def screenagent_session(folder: Path, **fields) -> Path:
    (folder / "images").mkdir(parents=True)
    (folder / "images" / "a.jpg").write_bytes(image_bytes("a", "JPEG"))
    document = {
        "task_prompt_en": "Open the menu",
        "saved_image_name": "a.jpg",
        "LLM_response": 'Click it.\n```json\n[{"action_type": "MouseAction", "mouse_action_type": "click", '
        '"mouse_button": "left", "mouse_position": {"width": 10, "height": 20}}]\n```',
        "actions": [
            {
                "action_type": "MouseAction",
                "mouse_action_type": "click",
                "mouse_button": "left",
                "mouse_position": {"width": 10, "height": 20},
            }
        ],
        **fields,
    }
    (folder / "2024-01-01_00-00-00-000000_translate.json").write_text(json.dumps(document), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"LLM_response": 7}, ": field 'LLM_response' must be str, found int"),
        ({"LLM_response_editer_en": ["x"]}, ": field 'LLM_response_editer_en' must be str, found list"),
        ({"task_prompt_en": {"a": 1}}, ": field 'task_prompt_en' must be str, found dict"),
        ({"actions": [{"action_type": ["MouseAction"]}]}, " action 1: field 'action_type' must be str, found list"),
    ],
)
def test_screenagent_fields_of_the_wrong_type_are_named(project, tmp_path, fields, expected):
    screenagent_session(tmp_path / "sessions" / "good")
    screenagent_session(tmp_path / "sessions" / "typed", **fields)
    job = run(project, tmp_path / "sessions")
    assert job.status == "succeeded", job.message
    assert error_for(job, "typed") == f"typed/2024-01-01_00-00-00-000000_translate.json{expected}"
    assert Trace.objects.filter(project=project).count() == 1


def test_screenagent_executed_actions_that_cannot_be_converted_keep_the_step_with_the_reason(project, tmp_path):
    # The step kept the reason on its context, then the pointer's position after it was computed again, outside
    # that guard, and the whole session failed with "ActionConversionError: …".
    action = {"action_type": "MouseAction", "mouse_action_type": "click", "mouse_position": ["x"]}
    screenagent_session(tmp_path / "sessions" / "odd", actions=[action])
    job = run(project, tmp_path / "sessions")
    assert job.status == "succeeded" and job.traces_imported == 1, (job.message, job.errors)
    step = Step.objects.get(trace__project=project)
    assert step.context["human_action_error"] == "click has no mouse_position"
    assert step.action_text == "click(start_box='(10,20)')"


def test_uitars_and_osworld_image_names_too_long_are_named(project, tmp_path):
    from tests.traces.test_importers import osworld_folder

    messages = tmp_path / "runs" / "run"
    messages.mkdir(parents=True)
    (messages / "final_messages.json").write_text(
        json.dumps(
            [
                {"role": "user", "content": [{"type": "text", "text": "## User Instruction\nGo"}]},
                {"role": "user", "content": [{"type": "image", "image": "i" * 5000}]},
                {"role": "assistant", "content": "Thought: go\nAction: wait()"},
            ]
        ),
        encoding="utf-8",
    )
    job = run(project, tmp_path / "runs")
    assert error_for(job, "run/") == (
        f"run/final_messages.json message 2: file '{'i' * 119}…' (5000 characters) is too long for a file name"
    )

    folder = osworld_folder(tmp_path / "osworld", "ex1", initial=True, instruction="Go")
    lines = (folder / "traj.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["screenshot_file"] = "p" * 5000
    (folder / "traj.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    job = run(project, tmp_path / "osworld")
    assert error_for(job, "traj.jsonl") == (
        f"osworld/chrome/ex1/traj.jsonl line 1: file '{'p' * 119}…' (5000 characters) is too long for a file name"
    )


def test_a_parse_error_position_counts_in_the_action_text_the_page_shows(project, tmp_path):
    # The position counted from the start of the rebuilt reply ("Thought: step 1\nAction: …"), so it pointed
    # nowhere in the action text shown beside it ("unknown action 'Click' at position 22" for an action of 23).
    files = trace_files("typo", steps=1, action="wait()\n\nClick(start_box='(1,2)')")
    run(project, write_tree(tmp_path / "batch", files))
    step = Step.objects.get(trace__external_id="typo", index=1)
    assert step.action_text == "wait()\n\nClick(start_box='(1,2)')"
    assert step.parse_error == "unknown action 'Click' at position 8"
    assert step.action_text[8:].startswith("Click")
    assert "Action: wait()" in step.raw_response


def test_a_reply_without_an_action_says_so_without_a_position():
    from traces.services import reply_parse

    assert reply_parse("Thought: only a thought").error == "missing 'Action:'"
    assert reply_parse("Thought: x\nAction:   ").error == "expected an action after 'Action:'"
    shown = reply_parse("Thought: x\nAction:   wait()\n\nclick(start_box='(1,2')")
    assert shown.error == "malformed coordinates '(1,2' at position 24" and shown.action_text[24:] == "'(1,2')"
