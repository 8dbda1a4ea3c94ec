"""The page's pure JavaScript modules (static/js/geometry.js, zoom.js, action_editor.js, the workspace's state.js,
steps.js, overlay.js, editor.js, keyboard.js, hints.js, autosave.js, alternatives.js, history.js, stage.js's and panels.js's
decisions, versions.js, review_logic.js, api.js, jobs.js, prescore.js, prescore_start.js, job_status.js, presence.js,
csv.js, figures.js, the dashboards (quality.js: each annotator's quality) and dom.js's element builders) under Node's own test runner, without a browser: tests/js/*.test.mjs, against
the action table exactly as the server serves it and the server's own error answers. Node is Debian's ``nodejs``
(.ci/run installs it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from annotation.selectors import model_extent
from tests.conftest import REPO
from traces import grammar

NODE = shutil.which("node")
TESTS = sorted((REPO / "tests" / "js").glob("*.test.mjs"))
JS = REPO / "static" / "js"
# Modules that wire a page's elements and events over the modules above and hold no logic a test could run without a
# browser: the browser tests of their pages drive them. A new module is not one of them until it is written so.
DOM_WIRING = {"review.js", "workspace.js"}


@pytest.mark.skipif(NODE is None, reason="node is not installed (Debian's nodejs package; .ci/run installs it)")
def test_the_page_modules_pass_their_node_tests(tmp_path):
    assert len(TESTS) >= 6, TESTS  # the runner would pass on no files at all
    table = tmp_path / "action-table.json"
    table.write_text(json.dumps(grammar.action_table_json()), encoding="utf-8")
    points = tmp_path / "grammar-points.json"
    points.write_text(json.dumps(_grammar_points()), encoding="utf-8")
    errors = tmp_path / "error-answers.json"
    errors.write_text(json.dumps(_error_answers()), encoding="utf-8")
    jobs = tmp_path / "job-answers.json"
    jobs.write_text(json.dumps(_job_answers()), encoding="utf-8")
    result = subprocess.run(
        [NODE, "--test", *map(str, TESTS)],
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "STUDIO_ACTION_TABLE": str(table),
            "STUDIO_GRAMMAR_POINTS": str(points),
            "STUDIO_ERROR_ANSWERS": str(errors),
            "STUDIO_JOB_ANSWERS": str(jobs),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    passed = [line for line in result.stdout.splitlines() if line.startswith("# pass ")]
    assert passed and int(passed[0].split()[-1]) >= 25, result.stdout[-2000:]


def test_every_page_module_has_node_tests_but_the_dom_wiring():
    modules = {path.relative_to(JS).as_posix() for path in JS.rglob("*.js")}
    imported = {name for test in TESTS for name in re.findall(r'from "\.\./\.\./static/js/([^"]+)"', test.read_text())}
    assert {"prescore_start.js", "job_status.js", "jobs.js", "dashboard.js", "round_dashboard.js"} <= imported
    assert modules - imported == DOM_WIRING


def _error_answers() -> dict:
    """The server's error kinds and its own answers (studio.api.exception_handler, the API's one error path) to a
    refusal of every kind and to every way a login is lost, each marked with whether it is a lost login: what the
    page's ``isAuthProblem`` must tell apart."""
    from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, PermissionDenied

    from studio import errors
    from studio.access import AccessRefused
    from studio.api import exception_handler
    from studio.security import CsrfRefused

    raised = [
        (NotAuthenticated(), True),
        (AuthenticationFailed("Invalid token."), True),
        (CsrfRefused("CSRF Failed: CSRF token missing."), True),
        (errors.SignedOut("Not logged in (or the session expired): log in again."), True),
        (AccessRefused("annotation.review"), False),
        (errors.Forbidden("These credentials reach another project; log in as one of this project's leads."), False),
        (PermissionDenied(), False),
        (errors.Invalid("format: unknown format 'csv'", field="format"), False),
        (errors.Conflict("The annotation changed since you loaded it.", current_version=7), False),
        (errors.NotFound("No such trace."), False),
        (errors.TooLarge("The upload is over 2 GB."), False),
    ]
    answers = []
    for exc, signed_out in raised:
        response = exception_handler(exc, {})
        answers.append(
            {"what": repr(exc), "status": response.status_code, "data": response.data, "signed_out": signed_out}
        )
    return {
        "kinds": {kind.value: status for kind, status in errors.STATUS_BY_KIND.items()},
        "signed_out": errors.ErrorKind.SIGNED_OUT.value,
        "answers": answers,
    }


def _job_answers() -> dict:
    """The job statuses (studio.models.JobStatus), those a job never leaves (studio.jobs.JOB_TRANSITIONS: no way
    out), and the API's answer for a pre-scoring job in each status (prescoring.api.PrescoreJobSerializer, of an
    unsaved job: no database), and the trace page's URL the import page's notes link to."""
    from django.urls import reverse

    from prescoring.api import PrescoreJobSerializer
    from prescoring.models import PrescoreJob
    from studio.jobs import JOB_TRANSITIONS
    from studio.models import JobStatus

    messages = {JobStatus.SUCCEEDED: "6 steps scored", JobStatus.FAILED: "The model folder is missing."}
    answers = [
        PrescoreJobSerializer(
            PrescoreJob(
                pk=40 + n,
                project_id=3,
                scorer="rules",
                status=status,
                progress_done=2 * n,
                progress_total=6,
                message=messages.get(status, ""),
                errors=[{"trace": 1, "step": 2, "error": "unreadable"}] if status == JobStatus.FAILED else [],
            )
        ).data
        for n, status in enumerate(JobStatus.values)
    ]
    return {
        # The import page's link to a noted trace, as the page gives it (id 0) and as it must end up (id 7).
        "trace_url": reverse("trace-detail", args=[0]),
        "trace_url_of_7": reverse("trace-detail", args=[7]),
        "statuses": list(JobStatus.values),
        "finished": sorted(status for status, onward in JOB_TRANSITIONS.items() if not onward),
        "prescore_jobs": answers,
    }


class _Project:
    """What model_extent reads of a project."""

    def __init__(self, convention: str):
        self.coordinate_convention = convention
        self.max_pixels = grammar.MAX_PIXELS


def _grammar_points() -> list[dict]:
    """Pixels (ties at .5 among them) and the point the grammar makes of each, for the conventions that round."""
    cases = []
    for convention in (grammar.RELATIVE_1000, grammar.SMART_RESIZE_PIXELS):
        for width, height in ((1920, 1080), (1280, 800), (1000, 1000), (2560, 1440)):
            shot = {"width": width, "height": height, "extent": model_extent(_Project(convention), width, height)}
            for x, y in [(0, 0), (0.5, 2.5), (width / 2, height / 2), (width, height), (width / 3, height / 7)] + [
                (i * 37.5 % width, i * 13.25 % height) for i in range(1, 40)
            ]:
                point = grammar.from_screen_pixels((x, y), convention=convention, width=width, height=height)
                cases.append({"shot": shot, "px": [x, y], "point": list(point)})
    return cases
