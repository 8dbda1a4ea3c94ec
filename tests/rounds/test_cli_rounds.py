"""`trace-studio rounds` and `import --round` against a live server and a real worker."""

from __future__ import annotations

import pytest

from studio.security import api_token_issue
from tests.factories import native_trace_folder
from tests.serving.test_cli import run_cli
from traces.models import Round, Trace

pytestmark = pytest.mark.worker


def test_cli_creates_a_round_and_imports_into_it(live_server, celery_worker, project, lead, engineer, tmp_path):
    lead_token, engineer_token = api_token_issue(user=lead), api_token_issue(user=engineer)
    made = run_cli(
        live_server, lead_token, "rounds", "create", "week 1", "--project", project.name, "--checkpoint", "ui-tars-r1"
    )
    assert "created" in made.stdout
    week = Round.objects.get(project=project, name="week 1")
    refused = run_cli(
        live_server,
        engineer_token,
        "rounds",
        "create",
        "w2",
        "--project",
        project.name,
        "--checkpoint",
        "c",
        check=False,
    )
    assert refused.returncode == 1 and "You cannot create rounds." in refused.stderr

    folder = native_trace_folder(tmp_path / "traces" / "r-1", external_id="r-1", steps=2, size=(640, 400))
    unknown = run_cli(
        live_server, lead_token, "import", str(folder.parent), "--project", project.name, "--round", "w9", check=False
    )
    assert unknown.returncode == 1 and "HTTP 400" in unknown.stderr and "no round 'w9'" in unknown.stderr
    imported = run_cli(
        live_server, lead_token, "import", str(folder.parent), "--project", project.name, "--round", "week 1", "--wait"
    )
    assert "round week 1" in imported.stdout and "succeeded: 1 trace, 2 steps" in imported.stdout, imported.stdout
    assert Trace.objects.get(project=project, external_id="r-1").round == week

    listed = run_cli(live_server, engineer_token, "rounds", "list", "--project", str(project.pk))
    assert f"{week.pk:>5}  week 1  ui-tars-r1  ran " in listed.stdout and "1 traces" in listed.stdout, listed.stdout
