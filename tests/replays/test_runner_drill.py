"""Replays at scale with a runner killed midway (docs/runners.md, "Faults"), with real processes: 100 requests of the
settings app, four `trace-studio runner` processes against a served studio, one SIGKILLed while it holds a request.
Every request ends, each finished once by one live runner; the killed runner's request is taken over when its lease
runs out (its claim number goes up, its half branch gives way to a whole one); no live runner is ever refused for a
claim another holds. bench/replays.py runs the same drill at 1,000 requests through the services."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from annotation.models import Annotation, AnnotationStatus
from demo.settings_env import correction_to, record_failing_run
from replays.models import REPLAY_ENDED, ReplayRequest, ReplayStatus
from replays.services import replay_policy_set, replay_request_create
from studio.security import api_token_issue
from tests.conftest import REPO
from trace_studio_cli.client import StudioClient
from trace_studio_cli.runner import HttpTransport
from traces.models import Step, Trace

# Enough that the killed runner dies holding a request and the others share the rest (bench/replays.py runs 1,000).
REQUESTS = 40
RUNNERS = 4


def _copies_of(trace: Trace, count: int) -> list[Trace]:
    """``count`` traces with ``trace``'s steps (the same stored screenshots), each for an answer of its own."""
    steps = list(trace.steps.order_by("index"))
    copies = []
    for n in range(count):
        copy = Trace.objects.get(pk=trace.pk)
        copy.pk, copy.external_id = None, f"{trace.external_id}-{n}"
        copy.save()
        copies.append(copy)
    Step.objects.bulk_create(
        Step(
            trace=copy,
            index=s.index,
            screenshot_id=s.screenshot_id,
            thought=s.thought,
            action_text=s.action_text,
            parsed_actions=s.parsed_actions,
        )
        for copy in copies
        for s in steps
    )
    return copies


def _finished_lines(logs) -> list[int]:
    """The requests the runners' logs say they finished, once per line."""
    return [int(n) for log in logs for n in re.findall(r"^replay (\d+): succeeded success=True", log.read_text(), re.M)]


# How long a stopped runner's last words (a finish already sent) take to reach the studio's database.
LAST_WORDS_S = 1.5


def _kill_while_holding(victim: subprocess.Popen, name: str, requests, deadline: float):
    """SIGKILL ``victim`` midway (after a tenth of the requests ended) while it holds a request; that request as
    it was just before the kill (None if the runner never held one in time).

    The runner is stopped first (SIGSTOP) and killed only if its request is still claimed once what it had already
    sent has reached the studio: a finish on the wire would otherwise end the request after the kill, and no takeover
    would be left to see. Caught between a finish and its next claim, it runs on and is caught again."""
    while victim.poll() is None and time.monotonic() < deadline:
        if requests.filter(status__in=REPLAY_ENDED).count() >= REQUESTS // 10:
            held = requests.filter(status=ReplayStatus.CLAIMED, claimed_by=name).first()
            if held is not None:
                victim.send_signal(signal.SIGSTOP)
                time.sleep(LAST_WORDS_S)
                held.refresh_from_db()
                if held.status == ReplayStatus.CLAIMED and held.claimed_by == name:
                    victim.send_signal(signal.SIGKILL)
                    victim.wait(10)
                    return held
                victim.send_signal(signal.SIGCONT)
        time.sleep(0.02)
    return None


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_four_runner_processes_one_killed_end_every_request_once(live_server, project, lead, tmp_path):
    token = api_token_issue(user=lead)
    record_failing_run(HttpTransport(StudioClient(live_server.url, token)), project.pk, "settings-failing")
    replay_policy_set(project=project, every_accepted_correction=False, lease_s=4, deadline_s=900)
    original = Trace.objects.get(project=project, external_id="settings-failing")
    answers = Annotation.objects.bulk_create(
        Annotation(
            trace=trace,
            project=project,
            annotator=lead,
            status=AnnotationStatus.ACCEPTED,
            verdict="error",
            tau=1,
            corrected_action=correction_to("sidebar.appearance"),
        )
        for trace in _copies_of(original, REQUESTS)
    )
    for answer in answers:
        replay_request_create(annotation=answer, actor=lead, reason="api")
    requests = ReplayRequest.objects.filter(project=project)
    assert requests.filter(status=ReplayStatus.QUEUED).count() == REQUESTS

    logs = [tmp_path / f"runner-{i}.log" for i in range(RUNNERS)]
    command = [sys.executable, "-m", "trace_studio_cli.main", "--url", live_server.url, "--token", token, "runner"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    runners = []
    for i, log in enumerate(logs):
        with log.open("w") as out:
            args = [*command, "--project", str(project.pk), "--name", f"runner-{i}", "--poll", "0.2"]
            runners.append(subprocess.Popen(args, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT))
    victim = runners[0]
    try:
        deadline = time.monotonic() + 240
        held = _kill_while_holding(victim, "runner-0", requests, deadline)
        assert victim.returncode == -signal.SIGKILL, logs[0].read_text()[-2000:]

        while requests.exclude(status__in=REPLAY_ENDED).exists() and time.monotonic() < deadline + 120:
            assert all(r.poll() is None for r in runners[1:]), [log.read_text()[-2000:] for log in logs[1:]]
            time.sleep(0.2)
        # The last finishes reached the studio: their lines reach the logs before the runners are stopped.
        said_by = time.monotonic() + 15
        while time.monotonic() < said_by and len(_finished_lines(logs)) < REQUESTS:
            time.sleep(0.2)
        # Not one live runner was refused (a claim taken from it, a push twice): each still runs.
        assert all(r.poll() is None for r in runners[1:]), [log.read_text()[-2000:] for log in logs[1:]]
    finally:
        for runner in runners[1:]:
            runner.terminate()
            runner.wait(30)

    assert Counter(requests.values_list("status", flat=True)) == {ReplayStatus.SUCCEEDED: REQUESTS}
    finished = Counter(_finished_lines(logs))
    assert set(finished.values()) == {1}, finished.most_common(3)
    # The killed runner's last finish may have reached the studio and its line not the log.
    unsaid = requests.exclude(pk__in=list(finished))
    assert unsaid.count() <= 1 and set(unsaid.values_list("claimed_by", flat=True)) <= {"runner-0"}
    for request in requests.select_related("branch"):
        assert (request.branch.outcome, request.branch.step_count, request.branch.receiving) == ("success", 3, False)
    assert held is not None, "runner-0 never held a request long enough to be killed holding it"
    held.refresh_from_db()  # killed holding it: taken over once its lease ran out
    assert held.claims == 2 and held.claimed_by != "runner-0", (held.claims, held.claimed_by)
    assert len(set(requests.values_list("claimed_by", flat=True))) >= 2
