"""`trace-studio runner` as its own process against a served studio (docs/runners.md), driving the settings app
(demo/settings_env.py): two failing runs pushed over HTTP (`--record`), one corrected to the right page and one to a
wrong place, both accepted under the project's rule, and one `--once` run replays them: the first correction stands
verified, the second refuted with the evaluator's words."""

from __future__ import annotations

import subprocess
import sys

import pytest

from annotation.models import Annotation, AnnotationStatus
from annotation.review.services import review_accept
from demo.settings_env import correction_to
from replays.models import ReplayRequest, ReplayStatus
from replays.selectors import REFUTED, VERIFIED, verifications
from replays.services import replay_policy_set
from studio.security import api_token_issue
from tests.conftest import REPO
from traces.models import Trace


def trace_studio(url: str, token: str, *args: str) -> subprocess.CompletedProcess:
    """The command line in its own process, from the checkout (where its default environment lies)."""
    command = [sys.executable, "-m", "trace_studio_cli.main", "--url", url, "--token", token, *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=180)


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_the_runner_command_verifies_a_correction_and_refutes_a_wrong_one(
    live_server, project, annotator, engineer, lead
):
    token = api_token_issue(user=lead)
    for external_id in ("settings-failing", "settings-failing-2"):
        pushed = trace_studio(live_server.url, token, "runner", "--project", str(project.pk), "--record", external_id)
        assert pushed.returncode == 0, pushed.stderr
        assert f"pushed {external_id}" in pushed.stdout
    replay_policy_set(project=project, every_accepted_correction=True)
    answers = {}
    for external_id, widget in (("settings-failing", "sidebar.appearance"), ("settings-failing-2", "sidebar.sound")):
        answer = Annotation.objects.create(
            trace=Trace.objects.get(project=project, external_id=external_id),
            project=project,
            annotator=annotator,
            status=AnnotationStatus.SUBMITTED,
            verdict="error",
            tau=1,
            corrected_action=correction_to(widget),
        )
        review_accept(annotation_id=answer.pk, actor=lead)  # committed: the rule's request is made after the commit
        answers[widget] = answer
    right = ReplayRequest.objects.get(annotation=answers["sidebar.appearance"])
    wrong = ReplayRequest.objects.get(annotation=answers["sidebar.sound"])

    run = trace_studio(
        live_server.url, token, "runner", "--project", project.name, "--name", "process-runner", "--once"
    )
    assert run.returncode == 0, run.stderr
    assert f"replay {right.pk}: succeeded success=True dark mode is on" in run.stdout
    assert f"replay {wrong.pk}: succeeded success=False dark mode is off (the app shows its sound page)" in run.stdout
    assert "2 replayed; no request waits" in run.stdout
    for request in (right, wrong):
        request.refresh_from_db()
        assert (request.status, request.claimed_by, request.branch.parent_id) == (
            ReplayStatus.SUCCEEDED,
            "process-runner",
            request.trace_id,
        )
    assert (right.branch.outcome, wrong.branch.outcome) == ("success", "failure")
    assert verifications([a.pk for a in answers.values()]) == {
        answers["sidebar.appearance"].pk: VERIFIED,
        answers["sidebar.sound"].pk: REFUTED,
    }

    # An environment the runner cannot load is said, with the exit status a script sees.
    missing = trace_studio(live_server.url, token, "runner", "--project", str(project.pk), "--environment", "no.such")
    assert missing.returncode == 1 and "environment 'no.such' cannot be imported" in missing.stderr
