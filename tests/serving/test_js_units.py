"""The page's pure JavaScript modules (static/js/geometry.js, zoom.js, action_editor.js, the workspace's state.js,
steps.js, overlay.js, editor.js, keyboard.js, hints.js, autosave.js, alternatives.js, history.js, stage.js's and panels.js's
decisions, versions.js, review_logic.js, api.js, jobs.js, prescore.js, prescore_start.js, job_status.js, presence.js,
csv.js, figures.js, values.js, the dashboards (quality.js: each annotator's quality), dom.js's element builders), and the
modules that wire a page's elements and events (the review page's static/js/review/*.js, the workspace's stage,
draft, editor, side panels, keys, alternatives and undo, the live socket, the quality and round dashboards, pre-scoring,
the job pages, the pre-score start, the clusters' merge field and the review page's and the workspace's entry modules
(review.js, workspace.js) as they start on a page: on a stand-in document,
tests/js/stand_in_dom.mjs) under Node's own test runner, without a browser: tests/js/*.test.mjs, against
the action table exactly as the server serves it and the server's own error answers, with each module's line
coverage measured (node's own) and held to its floor (tests/js/coverage_floors.json). Node is Debian's ``nodejs``
(.ci/run installs it)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from annotation.selectors import model_extent
from tests.conftest import REPO
from traces import grammar

NODE = shutil.which("node")
TESTS = sorted((REPO / "tests" / "js").glob("*.test.mjs"))
JS = REPO / "static" / "js"
# How a node test names the module it loads: imported (``from "../../static/js/x.js"``, ``import "…"``), or loaded
# once its page is laid out (``await import("../../static/js/x.js")``: a module that starts on its page as it loads).
IMPORTED = re.compile(r'(?:\bfrom |\bimport |\bimport\()"\.\./\.\./static/js/([^"]+)"')
# Each module's floor of line coverage under the node tests, in percent: a module measured below its floor fails, and
# so does a module without one. Floors only rise (a commit that lowers one fails); the pure modules (the file's
# "pure": decisions without a page) stay at 100. STUDIO_RAISE_JS_FLOORS=1 writes the floors measured where they are
# higher.
FLOORS = REPO / "tests" / "js" / "coverage_floors.json"


@dataclass(frozen=True)
class NodeRun:
    result: subprocess.CompletedProcess
    coverage: dict[str, float]  # module (relative to static/js) → percent of its lines run


@pytest.fixture(scope="module")
def node_run(tmp_path_factory) -> NodeRun:
    """The node tests, run once with line coverage (node's own, in LCOV), against the server's answers."""
    if NODE is None:
        pytest.skip("node is not installed (Debian's nodejs package; .ci/run installs it)")
    folder = tmp_path_factory.mktemp("node")
    files = {
        "STUDIO_ACTION_TABLE": grammar.action_table_json(),
        "STUDIO_GRAMMAR_POINTS": _grammar_points(),
        "STUDIO_ERROR_ANSWERS": _error_answers(),
        "STUDIO_JOB_ANSWERS": _job_answers(),
    }
    env = {"PATH": "/usr/bin:/bin"}
    for variable, data in files.items():
        env[variable] = str(folder / f"{variable.lower()}.json")
        (folder / f"{variable.lower()}.json").write_text(json.dumps(data), encoding="utf-8")
    lcov = folder / "lcov.info"
    result = subprocess.run(
        [
            NODE,
            "--test",
            "--experimental-test-coverage",
            "--test-reporter=tap",
            "--test-reporter-destination=stdout",
            "--test-reporter=lcov",
            f"--test-reporter-destination={lcov}",
            *map(str, TESTS),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    return NodeRun(result, line_coverage(lcov.read_text(encoding="utf-8") if lcov.exists() else ""))


def line_coverage(lcov: str) -> dict[str, float]:
    """Each static/js module's percent of lines run, from an LCOV report (a record per file: SF its path, LF its
    lines, LH those run, end_of_record)."""
    coverage, record = {}, {}
    for line in lcov.splitlines():
        key, _, value = line.partition(":")
        if key in ("SF", "LF", "LH"):
            record[key] = value
        elif key == "end_of_record" and "SF" in record:
            path = REPO / record["SF"]  # relative to the folder node ran in, the repository's
            if path.is_relative_to(JS):
                found, hit = int(record.get("LF", 0)), int(record.get("LH", 0))
                coverage[path.relative_to(JS).as_posix()] = math.floor(10000 * hit / found) / 100 if found else 100.0
            record = {}
    return coverage


def floor_problems(
    coverage: dict[str, float], floors: dict[str, float], pure: list[str], modules: set[str]
) -> list[str]:
    """What breaks the floors: a module without a floor, a floor of no module, a module under its floor (one not loaded
    by any test is at 0), a pure module's floor under 100."""
    problems = [f"{name}: no floor in {FLOORS.name}" for name in sorted(modules - floors.keys())]
    problems += [f"{name}: a floor, but no such module" for name in sorted(floors.keys() - modules)]
    for name in sorted(modules & floors.keys()):
        if coverage.get(name, 0.0) < floors[name]:
            problems.append(
                f"{name}: {coverage.get(name, 0.0)} % of its lines run, under its floor of {floors[name]} %"
            )
    problems += [
        f"{name}: pure, so its floor is 100, not {floors.get(name)}" for name in pure if floors.get(name) != 100
    ]
    return problems


def lowered(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """The modules whose floor ``after`` is under the one ``before`` (a module gone from ``after`` is not lowered)."""
    return sorted(name for name in before.keys() & after.keys() if after[name] < before[name])


def test_the_page_modules_pass_their_node_tests(node_run):
    result = node_run.result
    assert len(TESTS) >= 6, TESTS  # the runner would pass on no files at all
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    passed = [line for line in result.stdout.splitlines() if line.startswith("# pass ")]
    assert passed and int(passed[0].split()[-1]) >= 25, result.stdout[-2000:]


def test_every_module_keeps_its_floor_of_line_coverage(node_run):
    assert node_run.result.returncode == 0, node_run.result.stdout[-4000:]
    assert node_run.coverage.get("geometry.js") == 100.0, node_run.coverage  # the report was read
    spec = json.loads(FLOORS.read_text(encoding="utf-8"))
    modules = {path.relative_to(JS).as_posix() for path in JS.rglob("*.js")}
    if os.environ.get("STUDIO_RAISE_JS_FLOORS") == "1":
        raised = {
            name: max(spec["floors"].get(name, 0.0), node_run.coverage.get(name, 0.0)) for name in sorted(modules)
        }
        FLOORS.write_text(json.dumps({**spec, "floors": raised}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        spec["floors"] = raised
    assert floor_problems(node_run.coverage, spec["floors"], spec["pure"], modules) == []


def test_control_a_module_under_its_floor_or_without_one_fails():
    modules = {"a.js", "b.js", "c.js", "d.js"}
    floors = {"a.js": 50.0, "b.js": 80.0, "d.js": 0.0, "gone.js": 10.0}
    problems = floor_problems({"a.js": 50.0, "b.js": 79.99}, floors, ["a.js"], modules)
    assert [problem.split(":")[0] for problem in problems] == ["c.js", "gone.js", "b.js", "a.js"], problems
    end = "end_of_record"
    report = f"SF:{JS / 'x.js'}\nLH:2\nLF:3\n{end}\nSF:static/js/w/z.js\nLF:4\nLH:4\n{end}\nSF:tests/js/y.test.mjs\nLH:0\nLF:1\n{end}\n"
    assert line_coverage(report) == {"x.js": 66.66, "w/z.js": 100.0}


def test_floors_only_rise():
    """The floors against the last committed version of the file that differs from them (the commit before, once
    they are committed): none is lower."""
    now = json.loads(FLOORS.read_text(encoding="utf-8"))["floors"]
    git = shutil.which("git")
    log = (
        subprocess.run(
            [git or "git", "log", "--format=%H", "--", str(FLOORS.relative_to(REPO))],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        if git
        else None
    )
    if log is None or log.returncode != 0:
        pytest.skip("no git history to compare the floors with")
    for commit in log.stdout.split():
        shown = subprocess.run(
            [git, "show", f"{commit}:{FLOORS.relative_to(REPO)}"], cwd=REPO, capture_output=True, text=True, check=True
        )
        before = json.loads(shown.stdout)["floors"]
        if before != now:
            assert lowered(before, now) == [], f"floors lowered since {commit[:12]}"
            break


def test_control_a_lowered_floor_is_found():
    assert lowered({"a.js": 80.0, "b.js": 100.0, "gone.js": 5.0}, {"a.js": 79.5, "b.js": 100.0, "new.js": 0.0}) == [
        "a.js"
    ]


def imported_modules(text: str) -> set[str]:
    """The static/js modules a node test's ``text`` imports or loads (relative to static/js)."""
    return set(IMPORTED.findall(text))


def test_every_page_module_has_node_tests():
    modules = {path.relative_to(JS).as_posix() for path in JS.rglob("*.js")}
    imported = {name for test in TESTS for name in imported_modules(test.read_text())}
    # Some modules only a test that lays out their page loads: the pages' entry modules among them.
    assert {"prescore_start.js", "job_status.js", "jobs.js", "review.js", "workspace.js"} <= imported
    assert modules - imported == set()


def test_control_a_module_neither_imported_nor_loaded_is_not_counted():
    text = """import { a } from "../../static/js/a.js";
import "../../static/js/side_effect.js";
await import("../../static/js/w/entry.js");
// static/js/mentioned.js, and reimport("../../static/js/b.js") or from("../../static/js/c.js")
const { x } = await import("./served.mjs");
"""
    assert imported_modules(text) == {"a.js", "side_effect.js", "w/entry.js"}


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
