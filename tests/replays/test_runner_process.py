"""The reference runner as its own process against a served studio (docs/runners.md): the failing run pushed over
HTTP, its correction accepted under the project's rule, and `python -m demo.replay_runner --once` replays it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from annotation.models import Annotation, AnnotationStatus
from annotation.review.services import review_accept
from demo.replay_runner import HttpTransport, record_failing_run
from demo.settings_env import correction_to
from replays.models import ReplayRequest, ReplayStatus
from replays.services import replay_policy_set
from studio.security import api_token_issue
from tests.conftest import REPO
from traces.models import Trace


@pytest.mark.subprocess
@pytest.mark.django_db(transaction=True)
def test_the_reference_runner_replays_a_correction_from_its_own_process(live_server, project, annotator, lead):
    token = api_token_issue(user=lead)
    record_failing_run(HttpTransport(live_server.url, token), project.pk, "settings-failing")
    trace = Trace.objects.get(project=project, external_id="settings-failing")
    replay_policy_set(project=project, every_accepted_correction=True)
    answer = Annotation.objects.create(
        trace=trace,
        project=project,
        annotator=annotator,
        status=AnnotationStatus.SUBMITTED,
        verdict="error",
        tau=1,
        corrected_action=correction_to("sidebar.appearance"),
    )
    review_accept(annotation_id=answer.pk, actor=lead)  # committed: the rule's request is made after the commit
    request = ReplayRequest.objects.get(annotation=answer)

    command = [sys.executable, "-m", "demo.replay_runner", "--url", live_server.url, "--token", token]
    run = subprocess.run(
        [*command, "--project", str(project.pk), "--name", "process-runner", "--once"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert f"replay {request.pk}: succeeded success=True dark mode is on" in run.stdout
    request.refresh_from_db()
    assert (request.status, request.success, request.claimed_by) == (ReplayStatus.SUCCEEDED, True, "process-runner")
    assert (request.branch.parent_id, request.branch.outcome) == (trace.pk, "success")
