"""`trace-studio slices` against a live server: a search saved under a name, listed and shown with its trend."""

from __future__ import annotations

from studio.security import api_token_issue
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import PLANTED_NOTE, plant_corrections
from tests.serving.test_cli import run_cli


def test_cli_saves_lists_and_shows_a_slice(live_server, project, annotator, lead, tmp_path):
    from traces.services import round_create

    traces = make_traces(project, tmp_path, count=3, steps=3)
    week = round_create(project=project, name="week 1", checkpoint="c1", actor=lead)
    for trace in traces:
        trace.round = week
        trace.save(update_fields=["round"])
    plant_corrections(project, traces, annotator=annotator, lead=lead, planted={traces[0].pk, traces[2].pk})
    token = api_token_issue(user=lead)
    empty = run_cli(live_server, token, "slices", "list", "--project", str(project.pk))
    assert empty.stdout.startswith(f"no slices yet in project {project.pk}"), empty.stdout
    made = run_cli(
        live_server, token, "slices", "create", "typed first", "--project", project.name, "--q", f'"{PLANTED_NOTE}"'
    )
    assert "created: 2 corrections (week 1 2/3)" in made.stdout, made.stdout
    listed = run_cli(live_server, token, "slices", "list", "--project", str(project.pk))
    assert "typed first  week 1 2/3" in listed.stdout, listed.stdout
    bad = run_cli(
        live_server, token, "slices", "create", "x", "--project", project.name, "--facet", "colour=red", check=False
    )
    assert bad.returncode == 1 and "colour" in bad.stderr
    slice_id = made.stdout.split()[1]
    shown = run_cli(live_server, token, "slices", "show", slice_id)
    assert "typed first: 2 corrections" in shown.stdout
    refused = run_cli(
        live_server, api_token_issue(user=annotator), "slices", "list", "--project", project.name, check=False
    )
    assert refused.returncode == 1
