"""The search page in Chromium: a phrase and a facet, step cards with the two points drawn on the
screenshot, and the search saved as a slice whose page shows its count per round."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import login
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import PLANTED_NOTE, plant_corrections

pytestmark = pytest.mark.browser


def test_search_page_finds_filters_draws_points_and_saves_a_slice(
    browser, live_server, project, annotator, lead, artifacts_dir, tmp_path
):
    from traces.services import round_create

    traces = make_traces(project, tmp_path, count=5, steps=4)
    r1 = round_create(project=project, name="r1", checkpoint="agent-v1", actor=lead)
    r2 = round_create(project=project, name="r2", checkpoint="agent-v2", actor=lead)
    for i, trace in enumerate(traces):
        trace.round = r1 if i < 3 else r2
        trace.save(update_fields=["round"])
    planted = {traces[0].pk, traces[1].pk, traces[3].pk}
    plant_corrections(project, traces, annotator=annotator, lead=lead, planted=planted)

    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/search/")
    expect(page.locator("#search-count")).to_contain_text("5 corrections")
    page.fill("input[name=q]", f'"{PLANTED_NOTE}"')
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-count")).to_contain_text("3 corrections")
    cards = page.locator(".step-card")
    expect(cards).to_have_count(3)
    # Both points drawn over the thumbnail, which loads.
    first = cards.first
    expect(first.locator("circle.recorded-point")).to_have_count(1)
    expect(first.locator("circle.corrected-point")).to_have_count(1)
    href = first.locator("svg.step-shot image").get_attribute("href")
    assert page.request.get(f"{live_server.url}{href}").status == 200
    expect(first.locator(".corrected-action")).to_have_text("click(start_box='(500,80)')")
    # The round facet offers its counts within the search, and choosing one narrows it.
    options = page.locator("select[data-facet=round] option")
    expect(options).to_have_text(["any", "r1 (2)", "r2 (1)"])
    page.select_option("select[data-facet=round]", str(r1.pk))
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-count")).to_contain_text("2 corrections")
    page.screenshot(path=str(artifacts_dir / "insights-search.png"), full_page=True)
    # Saved as a slice (the round filter dropped again: the trend is per round).
    page.select_option("select[data-facet=round]", "")
    page.click("#search-form button[type=submit]")
    page.fill("#slice-save input[name=name]", "typed first")
    page.click("#slice-save button[type=submit]")
    expect(page.locator("#slice-count")).to_contain_text("3 corrections")
    bars = page.locator("#slice-trend .trend-bar")
    expect(bars).to_have_count(2)
    assert [bars.nth(i).get_attribute("data-count") for i in range(2)] == ["2", "1"]
    # Compared between the two checkpoints (r1: 2 of 3 corrections, r2: 1 of 2), and sent back to the queue.
    page.click("#slice-compare button[type=submit]")
    expect(page.locator("#slice-compare-result")).to_contain_text("down 16.67 points")
    page.click("#slice-send-to-queue")
    expect(page.locator("#slice-queue")).to_contain_text("3 of 3 traces sent back to the queue")
    page.screenshot(path=str(artifacts_dir / "insights-slice.png"), full_page=True)
    # Clusters: run here (the worker's job, in this process), renamed and pinned from the page, examples drawn.
    from insights import services

    services.cluster_run_compute(run_id=services.cluster_run_create(project=project, user=lead, enqueue=False).pk)
    page.goto(f"{live_server.url}/projects/{project.pk}/clusters/")
    first = page.locator("section.cluster").first
    expect(first.locator(".step-card").first).to_be_visible()
    last = page.locator("section.cluster").last
    last.locator("form.rename input[name=label]").fill("renamed by the lead")
    last.locator("form.rename button").click()
    page.locator("section.cluster", has_text="renamed by the lead").locator("form.pin button").click()
    expect(page.locator("section.cluster").first.locator(".cluster-name")).to_contain_text("renamed by the lead")
    page.screenshot(path=str(artifacts_dir / "insights-clusters.png"), full_page=True)
    page.close()


def test_a_search_past_the_counted_matches_says_what_the_filters_counts_are_of(
    browser, live_server, project, annotator, lead, artifacts_dir, tmp_path, monkeypatch
):
    """Past ``FACETS_COUNTED_MAX`` matches the filters' counts are of the newest ones only: the page says so beside
    the count, in the reader's language; under it, nothing is said."""
    from insights import selectors
    from studio.services import account_settings_update

    traces = make_traces(project, tmp_path, count=4, steps=3)
    plant_corrections(project, traces, annotator=annotator, lead=lead, planted={traces[0].pk})
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/search/")
    expect(page.locator("#search-count")).to_contain_text("4 corrections")
    expect(page.locator("#search-facets-of")).to_have_count(0)

    monkeypatch.setattr(selectors, "FACETS_COUNTED_MAX", 2)
    page.reload()
    expect(page.locator("#search-facets-of")).to_have_text("(the counts beside the filters are of the newest 2)")
    page.screenshot(path=str(artifacts_dir / "insights-search-facets-of.png"), full_page=True)
    account_settings_update(user=lead, language="zh-hans")
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/search/")
    expect(page.locator("#search-facets-of")).to_contain_text("2")
    assert not re.search(r"[A-Za-z]{3,}", page.locator("#search-facets-of").inner_text())
    # The card's state and the point's move are the studio's own words, in Chinese too.
    expect(page.locator(".step-card .pill").first).to_have_text("已通过")
    moves = [text for text in page.locator(".step-card p.muted.small").all_inner_texts() if text.startswith("点移动了")]
    assert len(moves) == 4 and not [move for move in moves if re.search(r"[A-Za-z]", move)], moves
    page.screenshot(path=str(artifacts_dir / "insights-search-facets-of-zh.png"), full_page=True)


def test_a_clusters_page_of_many_clusters_is_small_and_merges_a_cluster_found_by_name(
    browser, live_server, project, lead, artifacts_dir
):
    """400 clusters: the page holds 25 of them and no list of every other one; the merge field offers the clusters
    whose name holds the words typed (from the server), and the one picked is merged. A newer run still queued is
    shown above the finished run's clusters, with its cancel button."""
    from insights.models import Cluster, ClusterRun
    from studio.models import JobStatus

    finished = ClusterRun.objects.create(project=project, status=JobStatus.SUCCEEDED, corrections=1200)
    Cluster.objects.bulk_create(
        Cluster(
            run=finished,
            kind="signature",
            name=f"click → type · {n} px · family {n}",
            size=1000 - n,
            annotation_ids=[2 * n, 2 * n + 1],  # (rows only: no correction behind them)
        )
        for n in range(400)
    )
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    login(page, live_server.url, lead.username)
    shown = page.goto(f"{live_server.url}/projects/{project.pk}/clusters/")
    assert shown.status == 200 and len(shown.body()) < 60_000  # 400 clusters' merge lists were 400 × 399 options
    expect(page.locator("#clusters-pager")).to_contain_text("400 clusters · page 1 of 16")
    expect(page.locator("section.cluster")).to_have_count(25)
    # A lead clusters again: the new run waits in the queue, the finished run's clusters stay on the page.
    queued = ClusterRun.objects.create(project=project)
    page.reload()
    expect(page.locator("#cluster-run")).to_contain_text(f"Run {queued.pk}: queued")
    expect(page.locator("#clusters-from")).to_contain_text(f"run {finished.pk}'s")
    first = page.locator("section.cluster").first
    expect(first.locator(".cluster-name")).to_have_text("click → type · 0 px · family 0")
    field = first.locator("form.merge input[name=merge_with]")
    field.fill("family 370")
    choices = first.locator("form.merge datalist option")
    expect(choices).to_have_count(1)
    choice = choices.first.get_attribute("value")
    assert choice.startswith("#") and choice.endswith("click → type · 370 px · family 370")
    field.fill("family 3")  # 3, 30 to 39, 43, 53, ...: twenty at most, largest first
    expect(choices).to_have_count(20)
    expect(choices.first).to_have_attribute("value", re.compile(r"^#\d+ click → type · 3 px · family 3$"))
    page.screenshot(path=str(artifacts_dir / "insights-clusters-many.png"), full_page=False)
    field.fill(choice)  # what picking the option from the list does
    into = int(first.get_attribute("data-cluster"))
    first.locator("form.merge button").click()
    expect(page.locator("#clusters-pager")).to_contain_text("399 clusters")
    merged = Cluster.objects.get(pk=into)
    assert merged.merged and merged.annotation_ids == [0, 1, 740, 741]
    assert not finished.clusters.filter(name__endswith="family 370").exists()
    page.click("#cluster-cancel")
    expect(page.locator("#cluster-notice")).to_have_text("Cancelled before it started.")
    expect(page.locator("#cluster-run")).to_contain_text(f"Run {queued.pk}: cancelled")
    page.screenshot(path=str(artifacts_dir / "insights-clusters-cancelled.png"), full_page=False)
    page.close()


def test_the_alignment_page_recommends_a_threshold_by_its_cost_and_gain_or_none(
    browser, live_server, project, annotator, lead, artifacts_dir, tmp_path
):
    """Two scorers on six corrected traces (τ is step 2 of 4: two steps judged each): one puts τ at 0.85 on four
    traces, the other scores every step 0.5. The first's advice names its threshold with the steps it reads and the
    first errors it catches; the second gets none, and says why."""
    from prescoring.models import PrescoreJob, StepSuggestion
    from traces.models import Step

    traces = make_traces(project, tmp_path, count=6, steps=4)
    humans = plant_corrections(project, traces, annotator=annotator, lead=lead, planted=set())
    sharp = PrescoreJob.objects.create(project=project, scorer="rules", status="succeeded")
    blind = PrescoreJob.objects.create(project=project, scorer="rules", status="succeeded")
    for i, trace in enumerate(traces):
        for step in Step.objects.filter(trace=trace, index__lte=humans[trace.pk].tau):
            at_tau = step.index == humans[trace.pk].tau
            StepSuggestion.objects.create(
                step=step, job=sharp, scorer="rules", suspicion=(0.85 if i < 4 else 0.05) if at_tau else 0.25
            )
            StepSuggestion.objects.create(step=step, job=blind, scorer="rules", suspicion=0.5)
    judged = Step.objects.filter(trace__in=traces, suggestions__job=sharp).count()
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/alignment/")
    advice = page.locator(f'.alignment-suspicion[data-job="{sharp.pk}"] .threshold-advice')
    expect(advice).to_have_attribute("data-threshold", "0.3")
    expect(advice).to_contain_text(f"4 of {judged} steps to read ({judged - 4} fewer), catching 4 of the 6 human")
    expect(page.locator(f'.alignment-suspicion[data-job="{sharp.pk}"] tr.best')).to_have_attribute(
        "data-threshold", "0.3"
    )
    none = page.locator(f'.alignment-suspicion[data-job="{blind.pk}"] .threshold-advice')
    expect(none).to_contain_text("no threshold is recommended")
    expect(page.locator(f'.alignment-suspicion[data-job="{blind.pk}"] tr.best')).to_have_count(0)
    page.locator(f'.alignment-suspicion[data-job="{sharp.pk}"] h3').last.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "insights-alignment-thresholds.png"), full_page=True)
    page.close()
