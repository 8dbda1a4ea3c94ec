"""Runners push a trace into a round: POST /api/projects/<id>/traces/, idempotent by external_id,
through the importers' own path; and docs/rounds.md's curl and Python examples, run as written against a live
server."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from studio.security import api_token_issue
from tests.conftest import REPO
from tests.factories import native_trace_folder, screen_png
from traces import services
from traces.models import Step, Trace


def _push(client, project, **data):
    return client.post(f"/api/projects/{project.pk}/traces/", data, format="multipart")


def _native_parts(folder: Path) -> dict:
    document = json.loads((folder / "trace.json").read_text())
    names = [s["screenshot"] for s in document["steps"]] + [document["final_screenshot"]]
    shots = []
    for name in names:
        upload = io.BytesIO((folder / name).read_bytes())
        upload.name = name
        shots.append(upload)
    return {"trace": json.dumps(document), "screenshots": shots}


@pytest.mark.django_db
def test_push_is_idempotent_by_external_id_and_puts_the_trace_in_its_round(
    project, lead, annotator, api_client, tmp_path
):
    week1 = services.round_create(project=project, name="week 1", checkpoint="m1")
    week2 = services.round_create(project=project, name="week 2", checkpoint="m2")
    folder = native_trace_folder(tmp_path / "ep-1", external_id="ep-1", steps=3, size=(640, 400))
    client = api_client(lead)

    made = _push(client, project, round="week 1", **_native_parts(folder))
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["external_id"], body["round"], body["step_count"]) == ("ep-1", week1.pk, 3)
    trace = Trace.objects.get(pk=body["id"])
    assert trace.final_screenshot is not None and Step.objects.filter(trace=trace).exclude(screenshot=None).count() == 3

    again = _push(client, project, round=str(week1.pk), **_native_parts(folder))
    assert again.status_code == 200 and again.json()["id"] == trace.pk
    assert Trace.objects.filter(project=project).count() == 1 and Step.objects.count() == 3

    elsewhere = _push(client, project, round="week 2", **_native_parts(folder))
    assert elsewhere.status_code == 409 and elsewhere.json()["trace"] == trace.pk
    assert "already stored, in week 1" in elsewhere.json()["detail"]
    assert not Trace.objects.filter(round=week2).exists()

    # The same request as a .zip in an import layout.
    other = native_trace_folder(tmp_path / "zips" / "ep-2", external_id="ep-2", steps=2, size=(640, 400))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for file in sorted(other.iterdir()):
            zf.write(file, f"ep-2/{file.name}")
    buffer.seek(0)
    buffer.name = "ep-2.zip"
    zipped = _push(client, project, round="week 2", file=buffer)
    assert zipped.status_code == 201, zipped.content
    assert Trace.objects.get(external_id="ep-2").round == week2
    buffer.seek(0)
    assert _push(client, project, round="week 2", file=buffer).status_code == 200

    refused = _push(api_client(annotator), project, **_native_parts(folder))
    assert refused.status_code == 403 and refused.json()["detail"] == "You cannot import traces."


@pytest.mark.django_db
def test_push_refusals_name_the_problem_and_store_nothing(project, lead, api_client, tmp_path):
    client = api_client(lead)
    folder = native_trace_folder(tmp_path / "ep-x", external_id="ep-x", steps=2, size=(640, 400))
    unknown = _push(client, project, round="week 5", **_native_parts(folder))
    assert unknown.status_code == 400 and "has no round 'week 5'" in unknown.json()["detail"]

    parts = _native_parts(folder)
    parts["screenshots"] = parts["screenshots"][1:]  # step 1's image is missing
    missing = _push(client, project, **parts)
    assert missing.status_code == 400
    assert missing.json()["detail"] == "trace/trace.json step 1: file 'step_001.png' does not exist"

    broken = _native_parts(folder)
    broken["screenshots"][0] = io.BytesIO(b"\x89PNG\r\n\x1a\n not really")
    broken["screenshots"][0].name = "step_001.png"
    bad_image = _push(client, project, **broken)
    assert bad_image.status_code == 400 and "step 1" in bad_image.json()["detail"]

    assert _push(client, project, trace="{not json").status_code == 400
    neither = _push(client, project, round="")
    assert neither.status_code == 400 and "either as file" in neither.json()["detail"]

    two = io.BytesIO()
    with zipfile.ZipFile(two, "w") as zf:
        for external_id in ("z-1", "z-2"):
            f = native_trace_folder(tmp_path / "two" / external_id, external_id=external_id, steps=1, size=(320, 200))
            for file in f.iterdir():
                zf.write(file, f"{external_id}/{file.name}")
    two.seek(0)
    two.name = "two.zip"
    several = _push(client, project, file=two)
    assert several.status_code == 400 and "one trace per request" in several.json()["detail"]
    assert not Trace.objects.exists()


def _doc_block(language: str, after: str) -> str:
    text = (REPO / "docs" / "rounds.md").read_text(encoding="utf-8")
    section = text[text.index(after) :]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


def _episode(folder: Path, *, steps: int, task: str) -> Path:
    folder.mkdir(parents=True)
    records = []
    for n in range(1, steps + 1):
        screen_png(folder / f"s{n}.png", size=(800, 500), label=f"{folder.name} {n}", seed=n)
        records.append(
            {"thought": f"Step {n}.", "action": f"click(start_box='({100 * n},{60 * n})')", "screenshot": f"s{n}.png"}
        )
    (folder / "steps.json").write_text(json.dumps(records))
    (folder / "task.txt").write_text(task)
    return folder


@pytest.mark.subprocess
def test_the_docs_examples_push_into_a_round_on_a_live_server(live_server, project, lead, tmp_path):
    token = api_token_issue(user=lead)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TRACE_STUDIO_URL": live_server.url,
        "TRACE_STUDIO_TOKEN": token,
        "TRACE_STUDIO_PROJECT": str(project.pk),
    }
    # The Python example: it makes its round, pushes two episodes; run again (a runner retrying), nothing doubles.
    script = tmp_path / "push.py"
    script.write_text(_doc_block("python", "## Push a trace"))
    _episode(tmp_path / "episodes" / "run-001", steps=3, task="Open the settings")
    _episode(tmp_path / "episodes" / "run-002", steps=2, task="Close the window")
    runs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr
        runs.append(result.stdout.split())
    assert runs[0] == runs[1] and runs[0][0::2] == ["run-001", "run-002"]
    traces = Trace.objects.filter(project=project).select_related("round").order_by("external_id")
    assert [(t.external_id, t.step_count, t.round.name, t.round.checkpoint) for t in traces] == [
        ("run-001", 3, "week 48", "ui-tars-1.5-7b-r2"),
        ("run-002", 2, "week 48", "ui-tars-1.5-7b-r2"),
    ]
    assert [str(t.pk) for t in traces] == runs[0][1::2]

    # The curl example, in a folder holding episode-0042/ (trace.json, s1.png, s2.png).
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the Python example ran, the curl one cannot")
    episode = tmp_path / "curl" / "episode-0042"
    episode.mkdir(parents=True)
    for n in (1, 2):
        screen_png(episode / f"s{n}.png", size=(800, 500), label=f"curl {n}", seed=40 + n)
    document = {
        "format": "trace-studio/v1",
        "external_id": "episode-0042",
        "instruction": "Mirror the picture",
        "steps": [{"screenshot": f"s{n}.png", "action": "wait()"} for n in (1, 2)],
    }
    (episode / "trace.json").write_text(json.dumps(document))
    for expected in ("201", "200"):
        result = subprocess.run(
            ["bash", "-c", _doc_block("sh", "## Push a trace").rstrip() + ' -o /dev/null -w "%{http_code}"'],
            cwd=episode.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0 and result.stdout == expected, (result.stdout, result.stderr)
    trace = Trace.objects.get(project=project, external_id="episode-0042")
    assert trace.round.name == "week 48" and trace.step_count == 2


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_push_through_the_web_entry_takes_an_upload_sized_body_and_refuses_annotators_first(
    web_server, project, lead, annotator, tmp_path
):
    """Through real uvicorn: a push is an upload route (studio.web_entry.UPLOAD_ROUTES), so a trace whose screenshots
    pass the 5 MB form cap is taken, and a sender who may not import is refused before a byte of the body is read."""
    import requests
    from PIL import Image

    from tests.serving.test_web_entry_limits import connect, read_answer, send_head

    port = web_server()
    sock = connect(port)
    send_head(
        sock,
        "POST",
        f"/api/projects/{project.pk}/traces/",
        {
            "Content-Length": str(100 * 1024**2),
            "Content-Type": "multipart/form-data; boundary=x",
            "Authorization": f"Token {api_token_issue(user=annotator)}",
        },
    )
    status, body = read_answer(sock)
    sock.close()
    assert status == 403 and body["detail"] == "You cannot import traces."

    noise = Image.frombytes("RGB", (1600, 1200), os.urandom(1600 * 1200 * 3))  # does not compress: ~5.8 MB
    noise.save(tmp_path / "big.png")
    assert (tmp_path / "big.png").stat().st_size > 5 * 1024**2
    document = {"external_id": "big-1", "instruction": "Look", "steps": [{"screenshot": "big.png", "action": "wait()"}]}
    services.round_create(project=project, name="week 1", checkpoint="m1")
    answer = requests.post(
        f"http://127.0.0.1:{port}/api/projects/{project.pk}/traces/",
        headers={"Authorization": f"Token {api_token_issue(user=lead)}"},
        data={"round": "week 1", "trace": json.dumps(document)},
        files=[("screenshots", ("big.png", (tmp_path / "big.png").read_bytes()))],
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    assert Trace.objects.get(external_id="big-1").round.name == "week 1"
