"""`trace-studio` commands (click). Configuration: TRACE_STUDIO_URL and TRACE_STUDIO_TOKEN, or --url/--token."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import click

from trace_studio_cli import runner as runner_loop
from trace_studio_cli.client import FINISHED, ApiError, StudioClient, bundle_verify


def _client(ctx: click.Context) -> StudioClient:
    return ctx.obj["client_factory"]()


@click.group()
@click.option("--url", envvar="TRACE_STUDIO_URL", default="", help="The studio's address (TRACE_STUDIO_URL).")
@click.option("--token", envvar="TRACE_STUDIO_TOKEN", default="", help="Your API token (TRACE_STUDIO_TOKEN).")
@click.pass_context
def cli(ctx: click.Context, url: str, token: str) -> None:
    """Trace Studio from the command line: projects, imports, exports and their bundles, checkpoint evaluations."""
    ctx.obj = {"client_factory": lambda: StudioClient(url, token)}


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def projects(ctx: click.Context, as_json: bool) -> None:
    """The projects this token can see."""
    rows = _client(ctx).projects()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no projects yet visible to this token (a lead or admin adds you to a project)")
    for p in rows:
        click.echo(f"{p['id']:>5}  {p['name']}  ({p.get('platform', '?')}, {p.get('coordinate_convention', '?')})")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def formats(ctx: click.Context, as_json: bool) -> None:
    """The export formats and trace layouts this studio takes (from its API: a format the server adds shows here)."""
    client = _client(ctx)
    exports, imports = client.export_formats(), client.import_formats()
    if as_json:
        click.echo(json.dumps({"exports": exports, "imports": imports}, indent=2))
        return
    click.echo("export formats (trace-studio export --format NAME):")
    for f in exports:
        click.echo(f"  {f['name']:<14}  {f['label']}")
    click.echo("trace layouts (trace-studio import --format NAME; detected when left out, in this order):")
    for f in imports:
        click.echo(f"  {f['name']:<14}  {f['label']}")


@cli.command()
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option(
    "--double-annotation-share",
    type=float,
    default=None,
    metavar="SHARE",
    help="0 to 1: the share of traces answered by several annotators, for agreement (0: off).",
)
@click.option(
    "--double-annotation-annotators",
    type=int,
    default=None,
    metavar="N",
    help="Distinct annotators per shared trace (2 or more).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def settings(
    ctx: click.Context,
    project_ref: str,
    double_annotation_share: float | None,
    double_annotation_annotators: int | None,
    as_json: bool,
) -> None:
    """Show a project's settings, or change its double annotation (leads and admins)."""
    client = _client(ctx)
    project = client.project(project_ref)
    changes = {
        key: value
        for key, value in (
            ("double_annotation_share", double_annotation_share),
            ("double_annotation_annotators", double_annotation_annotators),
        )
        if value is not None
    }
    if changes:
        project = client.project_update(project["id"], changes)
    if as_json:
        click.echo(json.dumps(project, indent=2))
        return
    click.echo(
        f"project {project['id']} ({project['name']}): {project.get('platform', '?')}, "
        f"{project.get('coordinate_convention', '?')}, history window {project.get('history_window', '?')}, "
        f"{project.get('double_annotation_words', '')}" + (" (saved)" if changes else "")
    )


def _follow(client: StudioClient, kind: str, job: dict, read) -> dict:
    """A progress bar until the job ends; the bar's length follows the job's own total as it becomes known."""
    with click.progressbar(
        length=max(job.get("progress_total") or 0, 1), label=f"{kind} {job['id']}", show_pos=True, file=sys.stderr
    ) as bar:

        def show(current: dict) -> None:
            total = current.get("progress_total") or 0
            if total and total != bar.length:
                bar.length = total
            bar.update(max(0, (current.get("progress_done") or 0) - bar.pos))

        return client.wait(read, on_progress=show)


def _finished_or_exit(kind: str, job: dict) -> None:
    if job["status"] != "succeeded":
        raise click.ClickException(f"{kind} {job['id']} {job['status']}: {job.get('message') or 'no message'}")


@cli.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option(
    "--format", "fmt", default="", help="Importer to use (default: detected; `trace-studio formats` lists them)."
)
@click.option("--round", "round_ref", default="", help="The round (name or id) the new traces go in.")
@click.option("--wait/--no-wait", default=False, help="Follow the job until it ends (implied by --instructions).")
@click.option(
    "--instructions",
    "instructions_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Once imported, fill the traces' missing instructions from this CSV (external_id,instruction) or JSONL file.",
)
@click.pass_context
def import_(
    ctx: click.Context,
    path: Path,
    project_ref: str,
    fmt: str,
    round_ref: str,
    wait: bool,
    instructions_file: Path | None,
) -> None:
    """Upload PATH (a .zip, a .jsonl, or a folder, which is zipped first) into a project (and a round); leads and
    admins."""
    client = _client(ctx)
    project = client.project(project_ref)
    with tempfile.TemporaryDirectory() as tmp:
        archive = path
        if path.is_dir():
            # The folder goes in the zip as its top folder, under its own name, as a hand-made zip of it would:
            # the names importers derive from it and the job's messages are the folder's, whatever the temporary
            # place. (The studio knows a trace by its content, not by these names: docs/formats.md.)
            folder = path.resolve()
            on_top = {"root_dir": folder.parent, "base_dir": folder.name} if folder.name else {"root_dir": folder}
            archive = Path(shutil.make_archive(str(Path(tmp) / (folder.name or "upload")), "zip", **on_top))
        job = client.import_start(project["id"], archive, fmt=fmt, round_ref=round_ref)
    into = f", round {job['round_name']}" if job.get("round_name") else ""
    click.echo(f"import {job['id']} {job['status']} into project {project['id']} ({project['name']}{into})")
    if wait or instructions_file:
        job = _follow(client, "import", job, lambda: client.import_job(job["id"]))
        # The server's summary says what was lost first ("5 of 6 traces failed. ..."), in words.
        click.echo(f"import {job['id']} {job['status']}: {job.get('message') or 'no message'}")
        # Problems (lost) apart from notes (kept traces needing attention); a server without the split sends
        # only `errors`, all of them shown as problems.
        for heading, entries in (("problems", job.get("problems", job.get("errors"))), ("notes", job.get("notes"))):
            if entries:
                click.echo(f"{heading}:", err=True)
                for entry in entries:
                    click.echo(f"  {entry.get('error', entry)}", err=True)
        _finished_or_exit("import", job)
    if instructions_file:
        _instructions_report(client.instructions_set(project["id"], instructions_file))


def _instructions_report(report: dict) -> None:
    click.echo(f"instructions: {report['summary']}")
    for row in report.get("refused") or []:
        click.echo(f"  refused line {row['line']} {row.get('external_id') or '-'}: {row['reason']}", err=True)


@cli.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--replace", is_flag=True, help="Also replace instructions traces already have.")
@click.pass_context
def instructions(ctx: click.Context, path: Path, project_ref: str, replace: bool) -> None:
    """Set many traces' instructions from PATH: CSV with the header external_id,instruction, or JSONL lines
    {"external_id": ..., "instruction": ...}; leads and admins. Says what was set, refused and left."""
    client = _client(ctx)
    _instructions_report(client.instructions_set(client.project(project_ref)["id"], path, replace=replace))


@cli.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.pass_context
def gold(ctx: click.Context, path: Path, project_ref: str) -> None:
    """Mark traces gold from PATH: CSV with the header external_id[,annotator], or JSONL lines {"external_id": ...,
    "annotator": ...}; each trace's accepted answer (the annotator's, else the one an export takes) becomes its
    reference. Leads and admins. Says what was marked and each refused line with its reason."""
    client = _client(ctx)
    report = client.gold_mark(client.project(project_ref)["id"], path)
    click.echo(
        f"gold: {report['marked']} marked, {report['reference_changed']} with a new reference, "
        f"{report['unchanged']} unchanged, {len(report['refused'])} refused"
    )
    for row in report["refused"]:
        click.echo(f"  refused line {row['line']} {row.get('external_id') or '-'}: {row['reason']}", err=True)


@cli.command()
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--from", "first", default="", help="First day (2026-11-01; default: 30 days before --to).")
@click.option("--to", "last", default="", help="Last day (default: today).")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def quality(ctx: click.Context, project_ref: str, first: str, last: str, as_json: bool) -> None:
    """Each annotator's quality (leads): gold accuracy with its 95 % interval, median seconds per trace, the "no
    error" rate, and the flags the project's bounds raise."""
    client = _client(ctx)
    report = client.quality(client.project(project_ref)["id"], first=first, last=last)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for row in report["annotators"]:
        gold = row["gold"]
        accuracy = f"{_figure(gold['share'])} of {gold['n']} gold" if gold["n"] else "no gold answers"
        flags = "; ".join(flag["words"] for flag in row["flags"]) or "no flags"
        paused = "  (paused)" if row["paused"] else ""
        click.echo(
            f"{row['annotator']}: {row['answers']} answers, {accuracy}, median {_figure(row['median_time_s'])} s, "
            f"no error {_figure(row['no_error_rate'])}: {flags}{paused}"
        )


@cli.group()
def rounds() -> None:
    """A project's rounds: each names the checkpoint whose runs produced its traces."""


@rounds.command("list")
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def rounds_list(ctx: click.Context, project_ref: str, as_json: bool) -> None:
    """The project's rounds, oldest run first."""
    client = _client(ctx)
    rows = client.rounds(client.project(project_ref)["id"])
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no rounds yet in project {project_ref} (trace-studio rounds create NAME --project ...)")
    for r in rows:
        weights = f"  weights {r['weights_hash'][:12]}" if r.get("weights_hash") else ""
        click.echo(
            f"{r['id']:>5}  {r['name']}  {r['checkpoint']}  ran {r['ran_at']}  {r['trace_count']} traces{weights}"
        )


@rounds.command("create")
@click.argument("name")
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--checkpoint", required=True, help="The checkpoint whose runs produce the round's traces.")
@click.option("--weights-hash", default="", help="sha256 of the checkpoint's weight files.")
@click.option("--ran-at", default="", help="When it ran (ISO 8601, e.g. 2026-11-24T09:00:00Z; default: now).")
@click.pass_context
def rounds_create(ctx: click.Context, name: str, project_ref: str, checkpoint: str, weights_hash: str, ran_at: str):
    """Start round NAME in a project (leads and admins)."""
    client = _client(ctx)
    made = client.round_create(
        client.project(project_ref)["id"], name, checkpoint, weights_hash=weights_hash, ran_at=ran_at
    )
    click.echo(f"round {made['id']} {made['name']} ({made['checkpoint']}) created")


@cli.group()
def slices() -> None:
    """A project's slices: searches of its corrections saved under a name, counted per round."""


def _trend(slice_: dict) -> str:
    return " → ".join(f"{p['name']} {p['count']}/{p['of']}" for p in slice_.get("trend", []))


@slices.command("list")
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def slices_list(ctx: click.Context, project_ref: str, as_json: bool) -> None:
    """The project's slices with their count per round (oldest round first)."""
    client = _client(ctx)
    rows = client.slices(client.project(project_ref)["id"])
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no slices yet in project {project_ref} (trace-studio slices create NAME --project ...)")
    for s in rows:
        click.echo(f"{s['id']:>5}  {s['name']}  {_trend(s)}")


@slices.command("create")
@click.argument("name")
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--q", "text", default="", help='Words and "quoted phrases" the corrections must hold.')
@click.option(
    "--facet", "facets", multiple=True, help="A facet filter NAME=VALUE (e.g. category='wrong text'); repeat."
)
@click.pass_context
def slices_create(ctx: click.Context, name: str, project_ref: str, text: str, facets: tuple[str, ...]) -> None:
    """Save a search as slice NAME (leads, engineers, admins)."""
    client = _client(ctx)
    query = {name_: str(value) for name_, value in _option_pairs(facets).items()}
    if text:
        query["q"] = text
    made = client.slice_create(client.project(project_ref)["id"], name, query)
    shown = client.slice(made["id"])
    click.echo(f"slice {made['id']} {made['name']} created: {shown['count']} corrections ({_trend(shown)})")


@slices.command("show")
@click.argument("slice_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def slices_show(ctx: click.Context, slice_id: int, as_json: bool) -> None:
    """A slice's count and its count per round."""
    shown = _client(ctx).slice(slice_id)
    if as_json:
        click.echo(json.dumps(shown, indent=2))
        return
    click.echo(f"{shown['id']}  {shown['name']}: {shown['count']} corrections  {_trend(shown)}")


def _option_pairs(pairs: tuple[str, ...]) -> dict:
    options = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{pair!r}: write NAME=VALUE", param_hint="--option")
        try:
            options[name] = json.loads(raw)
        except ValueError:
            options[name] = raw
    return options


@cli.command()
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--format", "fmt", required=True, help="The bundle's format (`trace-studio formats` lists the studio's).")
@click.option(
    "--option",
    "option_pairs",
    multiple=True,
    metavar="NAME=VALUE",
    help="An export option, e.g. include_error_free=true or validation_fraction=0.2 (repeatable).",
)
@click.option(
    "--since",
    "since_export",
    type=int,
    default=None,
    metavar="EXPORT_ID",
    help="Only annotations new or changed since that export (an incremental bundle).",
)
@click.option("--wait/--no-wait", default=False, help="Follow the job until it ends (implied by --out).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Download the finished bundle into this folder (resumable; sha256 checked).",
)
@click.pass_context
def export(
    ctx: click.Context,
    project_ref: str,
    fmt: str,
    option_pairs: tuple[str, ...],
    since_export: int | None,
    wait: bool,
    out_dir: Path | None,
) -> None:
    """Build a training bundle from the project's accepted annotations."""
    client = _client(ctx)
    project = client.project(project_ref)
    options = _option_pairs(option_pairs)
    if since_export is not None:
        options["since_export"] = since_export
    job = client.export_start(project["id"], fmt, options)
    click.echo(f"export {job['id']} {job['status']} ({fmt}) for project {project['id']} ({project['name']})")
    if not (wait or out_dir):
        return
    job = _follow(client, "export", job, lambda: client.export_job(job["id"]))
    _finished_or_exit("export", job)
    counts = job.get("counts") or {}
    click.echo(f"export {job['id']} succeeded: {json.dumps(counts)}")
    if not sum((counts.get("by_kind") or {}).values()):
        click.echo(
            f"warning: export {job['id']} holds no samples: {job.get('message') or 'nothing to export'}", err=True
        )
    elif counts.get("validation_empty"):
        click.echo(f"warning: the validation split is empty: {counts['validation_empty']}", err=True)
    if out_dir:
        _download(client, job, out_dir)


@cli.command()
@click.argument("job_id", type=int)
@click.option(
    "--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True
)
@click.pass_context
def download(ctx: click.Context, job_id: int, out_dir: Path) -> None:
    """Download (or resume downloading) a finished export's bundle and check it."""
    client = _client(ctx)
    job = client.export_job(job_id)
    if job["status"] not in FINISHED:
        raise click.ClickException(f"export {job_id} is {job['status']}; wait for it (trace-studio export ... --wait)")
    _download(client, job, out_dir)


@cli.command()
@click.argument("export_id", type=int)
@click.option("--against", type=int, default=None, help="The older export (default: the project's previous one).")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def diff(ctx: click.Context, export_id: int, against: int | None, as_json: bool) -> None:
    """What changed between two bundles: annotations added, changed (version) and removed; for an incremental
    bundle, those it left out because its base holds them ("already in the base", not removed)."""
    answer = _client(ctx).export_diff(export_id, against)
    if as_json:
        click.echo(json.dumps(answer, indent=2))
        return
    summary = answer.get("summary") or (
        f"{len(answer['added'])} added, {len(answer['changed'])} changed, {len(answer['removed'])} removed, "
        f"{answer['unchanged']} unchanged"
    )
    click.echo(f"export {answer['older']} -> export {answer['newer']}: {summary}")
    for row in answer["added"]:
        click.echo(f"+ annotation {row['annotation_id']} v{row['version']}")
    for row in answer["changed"]:
        click.echo(f"~ annotation {row['annotation_id']} v{row['from_version']} -> v{row['to_version']}")
    for row in answer["removed"]:
        click.echo(f"- annotation {row['annotation_id']} v{row['version']}")


# The figures of an evaluation as the API gives them (evaluation/metrics.py), with the words the table uses.
EVALUATION_FIGURES = (
    ("samples", "samples"),
    ("preference_accuracy", "preference accuracy"),
    ("pairs", "pairs"),
    ("mean_margin", "mean margin (nats)"),
    ("nll_corrected", "NLL/token corrected"),
    ("nll_post_reflection", "NLL/token post-reflection"),
)


def _figure(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


@cli.command()
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--checkpoint", required=True, help="The checkpoint's name, e.g. agent-r2.")
@click.option(
    "--model-dir",
    required=True,
    help="Its folder on the gpu workers (a path, or a name in the studio's STUDIO_EVALUATION_CHECKPOINTS_DIR).",
)
@click.option(
    "--split",
    type=click.Choice(("validation", "all")),
    default=None,
    help="The bundle's validation split or all samples (default: all with --round, else validation).",
)
@click.option("--round", "round_ref", default="", help="Only this round's traces (name or id).")
@click.option("--export", "export_id", type=int, default=None, help="Take the split's fraction and seed from it.")
@click.option("--validation-fraction", type=float, default=None)
@click.option("--split-seed", type=int, default=None)
@click.option("--wait/--no-wait", default=False, help="Follow the job until it ends and print its figures.")
@click.pass_context
def evaluate(
    ctx: click.Context,
    project_ref: str,
    checkpoint: str,
    model_dir: str,
    split: str | None,
    round_ref: str,
    export_id: int | None,
    validation_fraction: float | None,
    split_seed: int | None,
    wait: bool,
) -> None:
    """Score a checkpoint on the project's accepted corrections (docs/rounds.md, "Evaluate a checkpoint")."""
    client = _client(ctx)
    project = client.project(project_ref)
    body: dict[str, str | int | float | None] = {
        "checkpoint": checkpoint,
        "model_dir": model_dir,
        "split": split,
        "round": round_ref,
        "export": export_id,
    }
    body |= {"validation_fraction": validation_fraction, "split_seed": split_seed}
    job = client.evaluation_start(project["id"], body)
    click.echo(f"evaluation {job['id']} {job['status']} of {job['checkpoint']} on project {project['id']}")
    if not wait:
        return
    job = _follow(client, "evaluation", job, lambda: client.evaluation(job["id"]))
    _finished_or_exit("evaluation", job)
    click.echo(f"evaluation {job['id']} succeeded: {job.get('message', '')}")
    overall = (job.get("metrics") or {}).get("overall") or {}
    for key, words in EVALUATION_FIGURES:
        click.echo(f"  {words}: {_figure(overall.get(key))}")
    if not overall.get("samples"):
        # A finished job over an empty selection (an incremental bundle's empty validation split, a round with
        # nothing accepted yet) has no figures: said where a script watching stderr sees it.
        click.echo(f"warning: evaluation {job['id']} scored no samples: its selection holds none", err=True)


@cli.command()
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
@click.pass_context
def evaluations(ctx: click.Context, project_ref: str, as_json: bool) -> None:
    """The project's checkpoint evaluations, newest first: one line per checkpoint run."""
    client = _client(ctx)
    rows = client.evaluations(client.project(project_ref)["id"])
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no evaluations yet in project {project_ref} (trace-studio evaluate --project ...)")
        return
    click.echo("\t".join(["id", "checkpoint", "weights", "status"] + [words for _, words in EVALUATION_FIGURES]))
    for job in rows:
        overall = (job.get("metrics") or {}).get("overall") or {}
        head = [str(job["id"]), job["checkpoint"], (job.get("weights_hash") or "")[:12], job["status"]]
        click.echo("\t".join(head + [_figure(overall.get(key)) for key, _ in EVALUATION_FIGURES]))


@cli.command()
@click.option("--project", "project_ref", required=True, help="Project id or name.")
@click.option("--name", default="reference-runner", show_default=True, help="The runner's name, shown on its claims.")
@click.option(
    "--environment",
    default=runner_loop.DEFAULT_ENVIRONMENT,
    show_default=True,
    help="The environment module: restore(metadata, actions) and agent(env) (docs/runners.md).",
)
@click.option("--once", is_flag=True, help="Stop when no request waits.")
@click.option("--poll", type=float, default=2.0, show_default=True, help="Seconds between polls when none waits.")
@click.option(
    "--record",
    default="",
    metavar="EXTERNAL_ID",
    help="Push the environment's failing run (its record_failing_run) under this id, then stop.",
)
@click.pass_context
def runner(
    ctx: click.Context, project_ref: str, name: str, environment: str, once: bool, poll: float, record: str
) -> None:
    """Replay corrections in an environment: claim the project's replay requests, push each branch, finish it with
    the environment's verdict (a lead's token; docs/runners.md)."""
    client = _client(ctx)
    project_id = client.project(project_ref)["id"]
    transport = runner_loop.HttpTransport(client)
    try:
        module = runner_loop.environment_load(environment)
        if record:
            if not callable(getattr(module, "record_failing_run", None)):
                raise runner_loop.RunnerError(f"environment {environment!r} has no record_failing_run to push")
            module.record_failing_run(transport, project_id, record)
            click.echo(f"pushed {record}")
            return
        replayed = runner_loop.run(transport, project_id, name, module, once=once, poll=poll, said=click.echo)
    except runner_loop.RunnerError as exc:
        raise ApiError(str(exc)) from None
    click.echo(f"{replayed} replayed; no request waits")


def _download(client: StudioClient, job: dict, out_dir: Path) -> None:
    with click.progressbar(length=int(job.get("bundle_size") or 0) or 1, label="bundle", file=sys.stderr) as bar:

        def show(have: int, total: int) -> None:
            bar.update(max(0, have - bar.pos))

        result = client.download(job, out_dir, on_bytes=show)
    checked = bundle_verify(result.path)
    resumed = f", resumed at byte {result.resumed_from}" if result.resumed_from else ""
    click.echo(
        f"{result.path} ({result.size} bytes{resumed}); sha256 {result.sha256} matches the studio's; "
        f"{checked} files match manifest.json"
    )


def main() -> None:
    try:
        cli(standalone_mode=True)
    except ApiError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
