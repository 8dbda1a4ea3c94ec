"""The flywheel's pages in Chromium, as an engineer uses them: the export's "what changed" page reached from the
export, the checkpoint evaluations side by side with a checkpoint folder to pick, and no failed request."""

from __future__ import annotations

import pytest

from annotation.models import Verdict
from annotation.review.services import review_adjudicate
from evaluation import services as evaluation_services
from exports import services as export_services
from tests.conftest import login
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace
from traces.models import Trace
from traces.services import round_create

pytest.importorskip("torch")
pytest.importorskip("transformers")

from prescoring.tiny import build_tiny_qwen2vl  # noqa: E402

pytestmark = pytest.mark.browser


def _accept(project, n, *, annotator, lead, round_):
    trace = make_trace(
        project,
        replies=REPLIES,
        external_id=f"fw{n}",
        image_seed=n % 3 + 1,
        instruction=f"Open the display settings ({n})",
    )
    Trace.objects.filter(pk=trace.pk).update(round=round_)
    return accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2 + n % 2,
        error_category=project.error_categories[n % 2],
        corrected_thought=f"Open the right item {n}.",
        corrected_action=f"click(start_box='<|box_start|>({300 + n},200)<|box_end|>')",
        reflection_thought="Wrong panel; go back.",
        reflection_action="hotkey(key='alt left')",
    )


def test_export_diff_and_checkpoint_evaluations_pages(
    browser, live_server, project, annotator, lead, engineer, tmp_path, artifacts_dir, settings
):
    week47 = round_create(project=project, name="week 47", checkpoint="agent-r0", actor=lead)
    week48 = round_create(project=project, name="week 48", checkpoint="agent-r1", actor=lead)
    first = [_accept(project, n, annotator=annotator, lead=lead, round_=week47) for n in range(3)]
    old = export_services.export_to_path(project=project, user=None, fmt="trl", options=None, out=tmp_path / "a.zip")
    review_adjudicate(annotation_id=first[0].pk, actor=lead, edits={"corrected_thought": "Open the right item, sure."})
    added = _accept(project, 3, annotator=annotator, lead=lead, round_=week48)
    new = export_services.export_to_path(project=project, user=None, fmt="trl", options=None, out=tmp_path / "b.zip")

    checkpoints = tmp_path / "checkpoints"
    for seed, name in enumerate(("agent-r1", "agent-r2")):
        build_tiny_qwen2vl(checkpoints / name, seed=seed)
        job = evaluation_services.evaluation_job_create(
            project=project, user=engineer, model_dir=str(checkpoints / name), split="all", enqueue=False
        )
        assert evaluation_services.evaluation_job_run(job_id=job.pk).status == "succeeded"
    settings.EVALUATION_CHECKPOINTS_DIR = str(checkpoints)

    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    failed = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    login(page, live_server.url, engineer.username)

    page.goto(f"{live_server.url}/exports/{new.pk}/")
    page.click("#export-diff-link")
    page.wait_for_url(f"**/exports/{new.pk}/diff/")
    summary = page.locator("#export-diff-summary").inner_text()
    assert summary == "1 added · 1 changed · 0 removed · 2 unchanged", summary
    assert page.locator(f'#diff-added tr[data-annotation="{added.pk}"]').count() == 1
    changed = page.locator(f'#diff-changed tr[data-annotation="{first[0].pk}"]').inner_text()
    assert "→" in changed and "accepted" in changed
    assert f"export {old.pk}" in page.locator("#export-diff p").first.inner_text()
    page.screenshot(path=str(artifacts_dir / "export-diff.png"), full_page=True)

    page.goto(f"{live_server.url}/projects/{project.pk}/evaluations/")
    rows = page.locator("#evaluations tbody tr")
    assert rows.count() == 2
    assert {rows.nth(i).locator("td").nth(1).inner_text().split("\n")[0] for i in range(2)} == {"agent-r1", "agent-r2"}
    options = page.locator("#evaluation-start select[name=model_dir] option").all_inner_texts()
    assert options == ["agent-r1", "agent-r2"]
    by_round = page.locator("#evaluations-by-round tbody").inner_text()
    assert "week 47" in by_round and "week 48" in by_round
    page.screenshot(path=str(artifacts_dir / "evaluations.png"), full_page=True)
    context.close()
    assert failed == []
