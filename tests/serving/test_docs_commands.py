"""The commands of docs/weekly-round.md and docs/cli.md, run as written against a live server and a real worker:
each `trace-studio` line of their `sh` blocks, in order, with the role the docs give it, and only the
server's ids and this test's paths put in for the docs' examples. Between the doc's steps the test does what people
do on the pages (annotate, review) through the same services.

What the weekly round must show: a round opened, traces imported with their instructions from a file, double
annotation (every trace to two annotators, never one twice, agreement on the dashboard), a review, a bundle whose
validation split is not empty, an incremental bundle (--since) whose diff against its base removes nothing and names
what is already in the base, and the checkpoint evaluated on that bundle's validation split and on the round: the
docs' checkpoint folders hold the tiny random-weight Qwen2-VL (prescoring/tiny.py) under the studio's
STUDIO_EVALUATION_CHECKPOINTS_DIR, scored by the worker's gpu queue on the CPU."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from annotation import services as annotation_services
from annotation.dashboards import DateRange, project_dashboard
from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.review.services import review_accept
from exports.models import ExportJob
from studio.permissions import Role
from studio.security import api_token_issue
from tests.conftest import REPO
from tests.factories import native_trace_folder
from traces import grammar
from traces.models import Project, Trace
from traces.services import membership_add, project_create

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring.tiny import build_tiny_qwen2vl  # noqa: E402

pytestmark = pytest.mark.worker

DOCS = REPO / "docs"
# Commands a lead's token runs (docs/cli.md: "Leads (and admins)"; docs/weekly-round.md steps 1-2); the rest are
# an engineer's.
LEAD_COMMANDS = ("rounds create", "import", "instructions", "settings")
# The docs' sha256 abbreviation, as a digest the server takes.
WEIGHTS = "9f2c" + "0" * 60


def doc_commands(name: str) -> list[str]:
    """The `trace-studio` lines of a doc's sh blocks, in order."""
    text = (DOCS / name).read_text()
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        lines += [line.strip() for line in block.splitlines() if line.strip().startswith("trace-studio ")]
    return lines


def written_as(line: str, values: dict[str, str]) -> list[str]:
    """A doc's line with this server's ids and this test's paths in place of the docs' examples."""
    for example, value in values.items():
        line = line.replace(example, value)
    return shlex.split(line, comments=True)[1:]


def run_cli(url: str, token: str, args: list[str]) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "TRACE_STUDIO_URL": url, "TRACE_STUDIO_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-m", "trace_studio_cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _runs(folder: Path, ids: list[str]) -> Path:
    """A runner's folder of traces whose source carries no instruction (as Mobile-Agent's runs)."""
    for external_id in ids:
        native_trace_folder(folder / external_id, external_id=external_id, instruction="", steps=4)
    return folder


def _answer(user, project) -> Annotation | None:
    """What an annotator does in the workspace: take the next trace, mark step 2 wrong with a correction, submit."""
    claim = annotation_services.lease_next_trace(user=user, project=project)
    if claim is None:
        return None
    annotation = claim[0]
    editor = {
        "corrected": grammar.parse_action("click(start_box='<|box_start|>(220,310)<|box_end|>')").to_json(),
        "reflection": grammar.parse_action("hotkey(key='esc')").to_json(),
    }
    fields = {
        "verdict": Verdict.ERROR,
        "tau": 2,
        "error_category": project.error_categories[0],
        "corrected_thought": "Open the display settings instead.",
        "reflection_thought": "That opened the wrong panel; go back.",
        "editor_state": editor,
    }
    annotation = annotation_services.annotation_save_draft(
        annotation_id=annotation.pk, user=user, base_version=annotation.version, fields=fields
    )
    return annotation_services.annotation_submit(
        annotation_id=annotation.pk, user=user, base_version=annotation.version
    )


def _export_id(result: subprocess.CompletedProcess) -> int:
    return int(re.search(r"^export (\d+) ", result.stdout, flags=re.M).group(1))


def _checkpoints(settings, folder: Path, names: list[str]) -> None:
    """The gpu workers' volume as the docs describe it: each checkpoint the docs name, a folder in
    STUDIO_EVALUATION_CHECKPOINTS_DIR (the live server runs in this process, so the setting reaches it)."""
    for name in names:
        build_tiny_qwen2vl(folder / name)
    settings.EVALUATION_CHECKPOINTS_DIR = str(folder)


def _evaluated(result: subprocess.CompletedProcess) -> dict[str, str]:
    """The figures `evaluate --wait` prints, by their words."""
    assert re.search(r"^evaluation \d+ succeeded", result.stdout, flags=re.M), result.stdout
    return dict(re.findall(r"^  ([^:]+): (.+)$", result.stdout, flags=re.M))


class Walk:
    """Runs a doc's lines in order; ``before`` hooks do the people's part before the line that needs it."""

    def __init__(self, url: str, tokens: dict[str, str], values: dict[str, str]):
        self.url, self.tokens, self.values = url, tokens, values
        self.exports: list[int] = []
        self.slices: list[int] = []
        self.results: list[tuple[str, subprocess.CompletedProcess]] = []

    def run(self, line: str) -> subprocess.CompletedProcess:
        # The docs' 42 and 43 are the first and second export the doc's own lines made.
        for example, index in (("43", 1), ("42", 0)):
            if len(self.exports) > index:
                self.values[f"--export {example}"] = f"--export {self.exports[index]}"
                self.values[f"diff {example}"] = f"diff {self.exports[index]}"
                self.values[f"--against {example}"] = f"--against {self.exports[index]}"
                self.values[f"--since {example}"] = f"--since {self.exports[index]}"
                self.values[f"download {example}"] = f"download {self.exports[index]}"
        if self.slices:  # the docs' slice 7 is the one the doc's own `slices create` made
            self.values["slices show 7"] = f"slices show {self.slices[0]}"
        args = written_as(line, self.values)
        role = "lead" if any(" ".join(args).startswith(c) for c in LEAD_COMMANDS) else "engineer"
        result = run_cli(self.url, self.tokens[role], args)
        assert result.returncode == 0, (line, args, result.stdout, result.stderr)
        if args[0] == "export":
            self.exports.append(_export_id(result))
        if args[:2] == ["slices", "create"]:
            self.slices.append(int(result.stdout.split()[1]))
        self.results.append((line, result))
        return result


@pytest.fixture
def people(project, annotator, lead, engineer, make_user):
    second = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=second)
    return {"annotators": [annotator, second], "lead": lead, "engineer": engineer}


def test_the_weekly_round_as_written(live_server, celery_worker, project, people, settings, tmp_path):
    lead, engineer = people["lead"], people["engineer"]
    tokens = {"lead": api_token_issue(user=lead), "engineer": api_token_issue(user=engineer)}
    ids = [f"wk48-{n}" for n in range(4)]
    runs = _runs(tmp_path / "runs" / "week-48", ids)
    instructions = tmp_path / "instructions.csv"
    rows = [f"{external_id},Turn on night light ({n})" for n, external_id in enumerate(ids)]
    instructions.write_text("external_id,instruction\n" + "\n".join([*rows, "not-a-trace,Something"]) + "\n")
    values = {
        "--project 3": f"--project {project.pk}",
        "9f2c…": WEIGHTS,
        "runs/week-48/": f"{runs}/",
        "instructions.csv": str(instructions),
        "bundles/": f"{tmp_path / 'bundles'}/",
        # Every trace shared: the round's four traces are sure to show agreement (0.2 picks traces by a hash).
        "--double-annotation-share 0.2": "--double-annotation-share 1",
    }
    walk = Walk(live_server.url, tokens, values)
    lines = doc_commands("weekly-round.md")
    steps = ["rounds", "settings", "import", "export", "export", "diff", "evaluate", "evaluate"]
    assert [line.split()[1] for line in lines] == steps

    walk.run(lines[0])  # 1. open the round
    double = walk.run(lines[1])
    assert "double annotation: 100% of traces to 2 annotators each (saved)" in double.stdout
    project.refresh_from_db()
    imported = walk.run(lines[2])  # 2. import with the instructions the source lacks
    assert "succeeded" in imported.stdout and "round week 48" in imported.stdout, imported.stdout
    assert "instructions: 4 instructions set, 1 refused, 0 left as they were; 0 traces still await" in imported.stdout
    assert "refused line 6 not-a-trace: unknown id" in imported.stderr
    assert set(Trace.objects.filter(project=project).values_list("instruction", flat=True)) == {
        f"Turn on night light ({n})" for n in range(4)
    }

    # 3. Annotate (two annotators through the hand-out: each trace to both, never one twice) and review.
    first, second = people["annotators"]
    answered = {user.pk: [] for user in (first, second)}
    for user in (first, second):
        while (answer := _answer(user, project)) is not None:
            answered[user.pk].append(answer.trace_id)
    assert sorted(answered[first.pk]) == sorted(answered[second.pk]) and len(answered[first.pk]) == 4
    assert all(len(set(traces)) == len(traces) for traces in answered.values())
    for annotation in Annotation.objects.filter(project=project, annotator=first):
        review_accept(annotation_id=annotation.pk, actor=lead)
    figures = project_dashboard(project, DateRange.from_days(None, None))
    assert figures["agreement"]["pairs"] == 4 and figures["agreement"]["first_error_exact"] == 1.0

    # 5. Export everything accepted: the validation split (fraction 0.1) is not empty, and nothing is warned.
    full = walk.run(lines[3])
    assert "warning" not in full.stderr, full.stderr
    job = ExportJob.objects.get(pk=walk.exports[0])
    assert job.counts["by_split"].get("validation", 0) >= 1, job.counts
    bundle = next((tmp_path / "bundles").glob(f"export-{job.pk}.zip"))
    assert "validation" in " ".join(zipfile.ZipFile(bundle).namelist())

    # One more trace accepted (a late one of the round), then the incremental bundle and its diff.
    late = native_trace_folder(tmp_path / "late" / "wk48-late", external_id="wk48-late", steps=4)
    assert (
        run_cli(
            live_server.url, tokens["lead"], ["import", str(late.parent), "--project", str(project.pk), "--wait"]
        ).returncode
        == 0
    )
    review_accept(annotation_id=_answer(second, project).pk, actor=lead)
    walk.run(lines[4])
    diff = walk.run(lines[5])
    older, newer = walk.exports
    assert f"export {older} -> export {newer}: 1 added, 0 changed, 0 removed, 4 already in the base" in diff.stdout

    # 7. The trained checkpoint evaluated on the corrections: the validation split of the bundle it was trained on
    # (the full one), then the whole round.
    _checkpoints(settings, tmp_path / "checkpoints", ["ui-tars-r3"])
    on_validation = _evaluated(walk.run(lines[6]))
    on_round = _evaluated(walk.run(lines[7]))
    # Each accepted correction gives an error_correction sample, a post_reflection sample and a DPO pair: the
    # validation split holds at least one trace; the round, its four traces (the late one came in without a round).
    assert int(on_validation["samples"]) >= 3 and int(on_validation["pairs"]) >= 1, on_validation
    assert int(on_round["samples"]) == 12 and int(on_round["pairs"]) == 4, on_round
    assert 0 <= float(on_round["preference accuracy"]) <= 1
    # As the doc says, the incremental bundle may have no validation split of its own: with fewer than two traces
    # giving samples it trains every sample, and its validation split is refused with the reason (scoring it would
    # score what the checkpoint trained on); otherwise its split options may still select no trace (whether a
    # trace's seeded score falls under the fraction depends on its id): when it scores nothing, the CLI says so on
    # stderr; when it scores something, it warns of nothing.
    incremental = run_cli(
        live_server.url, tokens["engineer"], written_as(lines[6], walk.values | {"--export 42": f"--export {newer}"})
    )
    if ExportJob.objects.get(pk=newer).options.get("train_only"):
        assert incremental.returncode != 0 and "trained every sample" in incremental.stderr, incremental.stderr
        assert float(on_round["NLL/token corrected"]) > 0
        return
    assert incremental.returncode == 0, incremental.stderr
    if int(_evaluated(incremental)["samples"]) == 0:
        assert "scored no samples" in incremental.stderr
    else:
        assert "scored no samples" not in incremental.stderr
    assert float(on_round["NLL/token corrected"]) > 0


def test_the_cli_doc_as_written(live_server, celery_worker, project, people, settings, tmp_path):
    """docs/cli.md on a project of its own: the engineer's lines first (an empty project: the export warns, the
    listings say there is nothing yet), then the lead's; an engineer's import is refused as the doc says. The
    `evaluate` line last: it scores the round the lead's lines made, once its traces are answered and accepted."""
    lead, engineer = people["lead"], people["engineer"]
    tokens = {"lead": api_token_issue(user=lead), "engineer": api_token_issue(user=engineer)}
    other = project_create(name="CLI doc project", members=[lead, engineer])
    ids = [f"cli-{n}" for n in range(2)]
    runs = _runs(tmp_path / "runs" / "week-48", ids)
    instructions = tmp_path / "instructions.csv"
    instructions.write_text("external_id,instruction\n" + "".join(f"{i},Open the settings ({i})\n" for i in ids))
    values = {
        "--project 3": f"--project {other.pk}",
        "9f2c…": WEIGHTS,
        "runs/week-48/": f"{runs}/",
        "instructions.csv": str(instructions),
        "bundles/": f"{tmp_path / 'bundles'}/",
    }
    walk = Walk(live_server.url, tokens, values)
    lines = doc_commands("cli.md")
    evaluations = [line for line in lines if line.startswith("trace-studio evaluate ")]
    assert len(evaluations) == 1
    out = {}
    for line in [line for line in lines if line not in evaluations]:
        result = walk.run(line)
        out.setdefault(" ".join(line.split()[1:3]), []).append(result)
    assert f"{other.pk}  CLI doc project" in out["projects"][0].stdout
    assert "  llamafactory    LLaMA-Factory (sharegpt JSON)" in out["formats #"][0].stdout  # the server's list
    assert "holds no samples" in out["export --project"][0].stderr  # nothing accepted yet, said on stderr
    assert "no rounds yet in project" in out["rounds list"][0].stdout
    assert "no evaluations yet in project" in out["evaluations --project"][0].stdout
    assert "instructions: 2 instructions set" in out["import runs/week-48/"][1].stdout
    assert "instructions: 0 instructions set, 0 refused, 2 left" in out["instructions instructions.csv"][0].stdout
    assert "double annotation: 20% of traces to 2 annotators each" in out["settings --project"][0].stdout
    assert "typed first" in out["slices list"][0].stdout and "typed first" in out["slices show"][0].stdout
    other.refresh_from_db()
    assert other.double_annotation_share == 0.2
    refused = run_cli(live_server.url, tokens["engineer"], ["import", f"{runs}/", "--project", str(other.pk)])
    assert refused.returncode == 1 and "HTTP 403" in refused.stderr
    assert Project.objects.get(pk=project.pk).double_annotation_share == 0
    assert not Annotation.objects.filter(status=AnnotationStatus.ACCEPTED, project=other).exists()

    # The round's two traces answered and accepted, then the doc's checkpoint evaluated on them.
    membership_add(project=other, user=people["annotators"][0])
    for _ in ids:
        review_accept(annotation_id=_answer(people["annotators"][0], other).pk, actor=lead)
    _checkpoints(settings, tmp_path / "checkpoints", ["agent-r2"])
    figures = _evaluated(walk.run(evaluations[0]))
    assert int(figures["samples"]) == 6 and int(figures["pairs"]) == 2, figures
