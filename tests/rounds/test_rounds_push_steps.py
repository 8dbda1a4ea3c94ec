"""Runners push a trace into a round step by step while they run: POST
/api/projects/<id>/traces/<external_id>/steps/ then .../end/. Each step is read by the native importer's step reader
and stored as an import stores it; the trace receives steps (out of the annotation queue and pre-scoring) until it
is ended."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from annotation.services import lease_next_trace
from prescoring.services import prescore_job_create
from studio.security import api_token_issue
from tests.conftest import REPO
from tests.factories import native_trace_folder, screen_png
from traces import services
from traces.models import Step, Trace

UNPARSEABLE = "click(start_box='(12,"  # the grammar cannot read it: kept raw with its error


def _file(path: Path, name: str | None = None) -> io.BytesIO:
    upload = io.BytesIO(path.read_bytes())
    upload.name = name or path.name
    return upload


def _step(client, project, external_id: str, index: int, step: dict, screenshot: Path | None = None, **first):
    data = {"index": str(index), "step": json.dumps(step), **first}
    if screenshot is not None:
        data["screenshot"] = _file(screenshot)
    return client.post(f"/api/projects/{project.pk}/traces/{external_id}/steps/", data, format="multipart")


def _end(client, project, external_id: str, **data):
    return client.post(f"/api/projects/{project.pk}/traces/{external_id}/end/", data, format="multipart")


def _stored_steps(trace: Trace) -> list[tuple]:
    return [
        (
            s.index,
            s.screenshot.sha256 if s.screenshot else None,
            s.thought,
            s.reflection,
            s.action_text,
            s.raw_response,
            s.parsed_actions,
            s.parse_error,
            s.off_screen_point,
            s.context,
        )
        for s in Step.objects.filter(trace=trace).select_related("screenshot").order_by("index")
    ]


@pytest.mark.django_db
def test_a_trace_pushed_step_by_step_equals_the_same_trace_pushed_whole(project, lead, api_client, tmp_path):
    week = services.round_create(project=project, name="week 48", checkpoint="m1")
    folder = native_trace_folder(
        tmp_path / "ep",
        external_id="ep-whole",
        steps=3,
        size=(640, 400),
        actions=["click(start_box='(100,200)')", UNPARSEABLE, "click(start_box='(5000,3000)')"],  # 3: off the screen
    )
    document = json.loads((folder / "trace.json").read_text())
    # What a trace object says of its trace beside its steps: a step push sends each at step 1.
    document.update(source="osworld-runner", platform="desktop", metadata={"model": "UI-TARS-1.5-7B"})
    client = api_client(lead)
    whole = client.post(
        f"/api/projects/{project.pk}/traces/",
        {
            "round": "week 48",
            "trace": json.dumps(document),
            "screenshots": [_file(folder / s["screenshot"]) for s in document["steps"]] + [_file(folder / "final.png")],
        },
        format="multipart",
    )
    assert whole.status_code == 201, whole.content

    for index, step in enumerate(document["steps"], start=1):
        first = {
            "instruction": document["instruction"],
            "round": str(week.pk),
            "source": document["source"],
            "platform": document["platform"],
            "metadata": json.dumps(document["metadata"]),
        }
        first = first if index == 1 else {}
        answer = _step(client, project, "ep-steps", index, step, folder / step["screenshot"], **first)
        assert answer.status_code == 201, answer.content
        assert (answer.json()["step_count"], answer.json()["receiving"], answer.json()["step_index"]) == (
            index,
            True,
            index,
        )
    ended = _end(client, project, "ep-steps", final_screenshot=_file(folder / "final.png"), outcome="unknown")
    assert ended.status_code == 200 and ended.json()["receiving"] is False

    pushed_whole = Trace.objects.get(project=project, external_id="ep-whole")
    by_steps = Trace.objects.get(project=project, external_id="ep-steps")
    assert _stored_steps(by_steps) == _stored_steps(pushed_whole)
    stored = _stored_steps(by_steps)
    assert [s[0] for s in stored] == [1, 2, 3] and all(s[1] for s in stored)
    assert stored[0][6] and stored[0][7] == ""  # parsed, no error
    assert stored[1][4] == UNPARSEABLE and stored[1][6] == [] and stored[1][7]  # kept raw, with its error
    assert stored[2][8] and not stored[0][8]  # (5000, 3000) lies off the screen in any convention
    assert by_steps.metadata == {"model": "UI-TARS-1.5-7B", "platform": "desktop"}  # as the importer keeps it
    fields = ("instruction", "round_id", "step_count", "final_screenshot_id", "outcome", "coordinate_convention")
    for field in (*fields, "source", "metadata"):
        assert getattr(by_steps, field) == getattr(pushed_whole, field), field
    assert by_steps.receiving is False and pushed_whole.receiving is False


@pytest.mark.django_db
def test_retries_are_idempotent_and_gaps_changes_and_ended_traces_are_refused(
    project, lead, annotator, api_client, tmp_path
):
    client = api_client(lead)
    shots = [screen_png(tmp_path / f"s{n}.png", size=(800, 500), label=f"s{n}", seed=n) for n in (1, 2, 3)]
    steps = [{"thought": f"Step {n}.", "action": f"click(start_box='({100 * n},{50 * n})')"} for n in (1, 2, 3)]

    gap_first = _step(client, project, "run-7", 2, steps[1], shots[1])
    assert gap_first.status_code == 409 and "step 1 is missing" in gap_first.json()["detail"]
    assert not Trace.objects.exists()

    assert _step(client, project, "run-7", 1, steps[0], shots[0], instruction="Open it").status_code == 201
    again = _step(client, project, "run-7", 1, steps[0], shots[0], instruction="Open it")
    assert again.status_code == 200 and again.json()["step_count"] == 1

    gap = _step(client, project, "run-7", 3, steps[2], shots[2])
    assert gap.status_code == 409 and gap.json()["kind"] == "conflict"
    assert "step 3 of 'run-7' cannot come yet: step 2 is missing" in gap.json()["detail"]

    other_image = _step(client, project, "run-7", 1, steps[0], shots[1])
    assert other_image.status_code == 409 and "another screenshot" in other_image.json()["detail"]
    other_text = _step(client, project, "run-7", 1, {**steps[0], "thought": "Changed my mind."}, shots[0])
    assert other_text.status_code == 409 and "another thought" in other_text.json()["detail"]

    assert _step(client, project, "run-7", 2, steps[1], shots[1]).status_code == 201
    unreadable = _step(client, project, "run-7", 3, {"thought": "no action"}, shots[2])
    assert unreadable.status_code == 400 and unreadable.json()["detail"] == "step 3: missing field 'action'"
    not_json = client.post(
        f"/api/projects/{project.pk}/traces/run-7/steps/", {"index": "3", "step": "{oops"}, format="multipart"
    )
    assert not_json.status_code == 400 and not_json.json()["detail"].startswith("step 3: invalid JSON")
    assert _step(client, project, "run-7", 3, steps[2], shots[2]).status_code == 201
    trace = Trace.objects.get(external_id="run-7")
    assert trace.step_count == 3 and Step.objects.filter(trace=trace).count() == 3 and trace.receiving

    assert _end(client, project, "run-7", outcome="success").status_code == 200
    assert _end(client, project, "run-7", outcome="success").status_code == 200  # a retried end
    changed_end = _end(client, project, "run-7", outcome="failure")
    assert changed_end.status_code == 409 and "another outcome" in changed_end.json()["detail"]
    after_end = _step(client, project, "run-7", 4, steps[0], shots[0])
    assert after_end.status_code == 409 and "'run-7' was ended" in after_end.json()["detail"]
    late_retry = _step(client, project, "run-7", 3, steps[2], shots[2])  # a retry that arrives after the end
    assert late_retry.status_code == 200 and late_retry.json()["step_count"] == 3
    assert Trace.objects.get(pk=trace.pk).step_count == 3 and Trace.objects.get(pk=trace.pk).outcome == "success"

    started = _step(client, project, "run-9", 1, steps[0], shots[0], instruction="Open it")
    assert started.status_code == 201
    whole = client.post(
        f"/api/projects/{project.pk}/traces/",
        {
            "trace": json.dumps({"external_id": "run-9", "instruction": "Open it", "steps": [steps[0]]}),
        },
        format="multipart",
    )
    assert whole.status_code == 409 and "'run-9' is receiving steps" in whole.json()["detail"]
    assert Trace.objects.get(external_id="run-9").step_count == 1

    unknown = _end(client, project, "never-pushed")
    assert unknown.status_code == 404 and "no trace 'never-pushed'" in unknown.json()["detail"]
    bad_round = _step(client, project, "run-8", 1, steps[0], shots[0], round="week 99")
    assert bad_round.status_code == 400 and "has no round 'week 99'" in bad_round.json()["detail"]
    refused = _step(api_client(annotator), project, "run-8", 1, steps[0], shots[0])
    assert refused.status_code == 403 and refused.json()["detail"] == "You cannot import traces."
    assert not Trace.objects.filter(external_id="run-8").exists()


@pytest.mark.django_db
def test_a_receiving_trace_is_neither_annotated_nor_prescored_until_ended(
    project, lead, annotator, api_client, client, tmp_path
):
    api = api_client(lead)
    shot = screen_png(tmp_path / "s1.png", size=(800, 500), label="s1", seed=1)
    made = _step(api, project, "live-1", 1, {"action": "wait()"}, shot, instruction="Wait for it")
    assert made.status_code == 201
    trace = Trace.objects.get(external_id="live-1")
    assert trace.receiving

    assert lease_next_trace(user=annotator, project=project) is None
    job = prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)
    from prescoring.services import _job_traces

    assert list(_job_traces(job)) == []
    client.force_login(lead)
    listing = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert f'data-receiving="{trace.pk}">receiving steps' in listing
    page = client.get(f"/traces/{trace.pk}/").content.decode()
    assert 'id="trace-receiving"' in page and "Receiving steps" in page

    assert _end(api, project, "live-1").status_code == 200
    leased = lease_next_trace(user=annotator, project=project)
    assert leased is not None and leased[0].trace_id == trace.pk
    assert [t.pk for t in _job_traces(job)] == [trace.pk]
    assert "receiving steps" not in client.get(f"/projects/{project.pk}/traces/").content.decode()


def _doc_block(language: str, after: str) -> str:
    text = (REPO / "docs" / "rounds.md").read_text(encoding="utf-8")
    section = text[text.index(after) :]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


@pytest.mark.subprocess
def test_the_docs_step_by_step_example_runs_on_a_live_server(live_server, project, lead, tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the docs example is a curl script")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TRACE_STUDIO_URL": live_server.url,
        "TRACE_STUDIO_TOKEN": api_token_issue(user=lead),
        "TRACE_STUDIO_PROJECT": str(project.pk),
    }
    services.round_create(project=project, name="week 48", checkpoint="m1")
    for n in (1, 2):
        screen_png(tmp_path / f"s{n}.png", size=(800, 500), label=f"doc {n}", seed=60 + n)
    script = _doc_block("sh", "### Step by step, while the runner runs")
    for _ in range(2):  # run twice: the second run is a runner retrying every request
        result = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert result.returncode == 0, (result.stdout, result.stderr)
    trace = Trace.objects.get(project=project, external_id="episode-0043")
    assert (trace.round.name, trace.step_count, trace.receiving, trace.final_screenshot is not None) == (
        "week 48",
        2,
        False,
        True,
    )


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_step_push_through_the_web_entry_is_an_upload_route(web_server, project, lead, annotator, tmp_path):
    """Through real uvicorn: the step route is an upload route (studio.web_entry.UPLOAD_ROUTES), so a step whose
    screenshot passes the 5 MB form cap is taken, and a sender who may not import is refused before the body."""
    import requests
    from PIL import Image

    from tests.serving.test_web_entry_limits import connect, read_answer, send_head

    port = web_server()
    for route in ("steps", "end"):
        sock = connect(port)
        send_head(
            sock,
            "POST",
            f"/api/projects/{project.pk}/traces/big-1/{route}/",
            {
                "Content-Length": str(100 * 1024**2),
                "Content-Type": "multipart/form-data; boundary=x",
                "Authorization": f"Token {api_token_issue(user=annotator)}",
            },
        )
        status, body = read_answer(sock)
        sock.close()
        assert status == 403 and body["detail"] == "You cannot import traces.", route

    noise = Image.frombytes("RGB", (1600, 1200), os.urandom(1600 * 1200 * 3))  # does not compress: ~5.8 MB
    noise.save(tmp_path / "big.png")
    assert (tmp_path / "big.png").stat().st_size > 5 * 1024**2
    answer = requests.post(
        f"http://127.0.0.1:{port}/api/projects/{project.pk}/traces/big-1/steps/",
        headers={"Authorization": f"Token {api_token_issue(user=lead)}"},
        data={"index": "1", "instruction": "Look", "step": json.dumps({"action": "wait()"})},
        files=[("screenshot", ("big.png", (tmp_path / "big.png").read_bytes()))],
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    trace = Trace.objects.get(external_id="big-1")
    assert trace.receiving and trace.steps.get().screenshot.byte_size > 5 * 1024**2


@pytest.mark.django_db(transaction=True)
def test_concurrent_pushes_of_one_step_store_it_once(project, tmp_path):
    """A runner's retries can overlap the first attempt: the same step 1 four times at once makes one trace with one
    step; four different step 2s at once store one and refuse the others (the trace's row lock orders them)."""
    import threading

    from django.db import connection

    from studio.errors import Conflict

    shot = screen_png(tmp_path / "s.png", size=(800, 500), label="s", seed=3).read_bytes()

    def all_at_once(pushes) -> list:
        barrier = threading.Barrier(len(pushes))
        results: list = [None] * len(pushes)

        def run(position, push):
            barrier.wait()
            try:
                results[position] = push()
            except Conflict as exc:
                results[position] = exc
            finally:
                connection.close()

        threads = [threading.Thread(target=run, args=pair) for pair in enumerate(pushes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def push(index: int, thought: str):
        return lambda: services.trace_step_push(
            project=project,
            external_id="race-1",
            index=index,
            step=json.dumps({"thought": thought, "action": "wait()"}),
            screenshot=shot,
            instruction="Wait",
        )

    firsts = all_at_once([push(1, "Same.") for _ in range(4)])
    assert sorted(r.created for r in firsts) == [False, False, False, True]
    assert len({r.trace.pk for r in firsts}) == 1 and Step.objects.count() == 1

    seconds = all_at_once([push(2, f"Variant {n}.") for n in range(4)])
    stored = [r for r in seconds if not isinstance(r, Conflict)]
    assert len(stored) == 1 and stored[0].created, seconds
    assert all("stored already with another thought" in r.detail for r in seconds if isinstance(r, Conflict))
    trace = Trace.objects.get(external_id="race-1")
    assert trace.step_count == 2 and trace.steps.get(index=2).thought == stored[0].step.thought


def test_a_pushed_screenshot_is_not_decoded_in_the_web_request(project, lead, api_client, tmp_path, monkeypatch):
    """A web request checks a pushed image from its header and chunks only (format, size, pixel limit, checksums);
    the decode and the thumbnail are a worker's. Eight concurrent 40 Mpx pushes took the web processes from 0.9 to
    2.7 GB when each push decoded its image."""
    from PIL import Image

    from traces.models import Screenshot

    big = tmp_path / "big.png"
    Image.new("RGB", (6000, 6600), (200, 204, 210)).save(big, format="PNG")
    decoded: list[tuple] = []
    real_load = Image.Image.load

    def counting_load(image):
        decoded.append(image.size)
        return real_load(image)

    monkeypatch.setattr(Image.Image, "load", counting_load)
    client = api_client(lead)
    step = {"thought": "Open it.", "action": "click(start_box='(100,50)')"}
    answer = _step(client, project, "huge-1", 1, step, big, instruction="Open it")
    assert answer.status_code == 201, answer.content
    assert decoded == [], f"the web request decoded {decoded}"
    shot = Trace.objects.get(external_id="huge-1").steps.get(index=1).screenshot
    assert (shot.width, shot.height, shot.thumbnail.name) == (6000, 6600, "")

    # The worker's side: it decodes the image once and stores the thumbnail.
    services.screenshot_thumbnail_make_by_hash(sha256=shot.sha256)
    assert decoded and Screenshot.objects.get(pk=shot.pk).thumbnail.name

    over = tmp_path / "over.png"
    Image.new("RGB", (8000, 8000)).save(over, format="PNG")
    decoded.clear()
    refused = _step(client, project, "huge-2", 1, step, over, instruction="Open it")
    assert refused.status_code == 400 and "pixel limit" in refused.json()["detail"]
    assert decoded == []
