"""Each annotator's quality on the project dashboard, in Chromium against uvicorn (HTTP and the live socket): a
spammer's flags are shown in words, a new one appears as their answers arrive (no reload), the CSV holds the
server's rows, and the lead pauses their queue from the table, which the spammer's queue then says."""

from __future__ import annotations

import csv
import io

import pytest

from annotation import services
from annotation.models import Annotation, AnnotationKind, QueuePause, Verdict
from annotation.quality.rollup import quality_rollup_rebuild
from annotation.quality.services import quality_settings_save
from annotation.services import annotation_submit
from studio.permissions import Role
from tests.conftest import login
from tests.fixtures_export import REPLIES, make_trace
from tests.fixtures_quality import error_fields, gold_traces, hand_in, traces_of
from tests.review.test_browser_review import api, asgi_server  # noqa: F401 - the fixture: uvicorn on the test DB
from traces import grammar
from traces.services import membership_add

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

CORRECTED = grammar.parse_action("click(start_box='(300,260)')")
REFLECTION = grammar.parse_action("hotkey(key='alt left')")
SIZES = {"desktop": (1920, 1080), "laptop": (1366, 768)}


def draft(project, annotator, n: int, *, verdict: str, seconds: int) -> Annotation:
    trace = make_trace(
        project,
        replies=REPLIES,
        external_id=f"q-{annotator.username}-{n}",
        instruction=f"Task {annotator.username} {n}",
        image_seed=n + (0 if annotator.username == "ann" else 20),
    )
    fields = {"verdict": verdict, "time_spent_s": seconds}
    if verdict == Verdict.ERROR:
        fields.update(
            tau=3,
            error_category=project.error_categories[0],
            corrected_thought="Open Display.",
            reflection_thought="Wrong panel; go back.",
            editor_state={"corrected": CORRECTED.to_json(), "reflection": REFLECTION.to_json()},
            corrected_action=grammar.render_action(CORRECTED),
            reflection_action=grammar.render_action(REFLECTION),
        )
    return Annotation.objects.create(trace=trace, project=project, annotator=annotator, **fields)


@pytest.mark.parametrize("screen", ["desktop", "laptop"])
def test_a_spammer_is_flagged_live_and_paused(
    browser,
    asgi_server,  # noqa: F811 - the fixture imported above
    project,
    annotator,
    lead,
    make_user,
    artifacts_dir,
    screen,  # noqa: F811
):
    careful = make_user("careful", Role.ANNOTATOR)
    membership_add(project=project, user=careful)
    expert = make_user("expert", Role.ANNOTATOR)
    membership_add(project=project, user=expert)
    gold_traces(project, traces_of(project, 2, start=50), expert=expert, lead=lead)
    Annotation.objects.filter(annotator=expert).update(time_spent_s=120)  # the references took their time
    quality_rollup_rebuild(project_ids=[project.pk])  # changed around the services: the dashboard's counts recounted
    quality_settings_save(
        project=project,
        user=lead,
        fields={"max_no_error_streak": 3, "min_median_seconds": 10, "min_gold_answers": 2, "gold_every": 1},
    )
    for user, right in ((annotator, False), (careful, True)):  # each meets both gold traces first
        for _ in range(2):
            gold, _ = services.lease_next_trace(user=user, project=project)
            assert gold.kind == AnnotationKind.GOLD
            hand_in(gold, user, **(error_fields(3) if right else {"verdict": Verdict.NO_ERROR}))
    quality_settings_save(project=project, user=lead, fields={"gold_every": 0})
    for n in range(2):  # two quick "no error" answers: too fast, not yet a streak of three
        answer = draft(project, annotator, n, verdict=Verdict.NO_ERROR, seconds=3)
        annotation_submit(annotation_id=answer.pk, user=annotator, base_version=answer.version)
    careful_answer = draft(project, careful, 0, verdict=Verdict.ERROR, seconds=95)
    annotation_submit(annotation_id=careful_answer.pk, user=careful, base_version=careful_answer.version)
    third = draft(project, annotator, 2, verdict=Verdict.NO_ERROR, seconds=3)

    width, height = SIZES[screen]
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, asgi_server, lead.username)
    page.goto(f"{asgi_server}/projects/{project.pk}/dashboard/")
    page.wait_for_selector("#live[data-connected='1']", state="attached", timeout=15000)
    page.wait_for_selector("#quality[data-loaded]")
    spammer = page.locator("#quality-table tr[data-annotator='ann']")
    assert spammer.get_attribute("data-flags") == "too_fast low_gold_accuracy"
    assert "Too fast: median 3 s per trace, below 10 s." in spammer.inner_text()  # in words, not by colour alone
    assert "Gold accuracy 0% over 2 gold answers, below 80%." in spammer.inner_text()
    assert "0.0 % of 2 (0.0–65.8 %)" in spammer.locator("[data-quality='gold']").inner_text()  # n and 95 % interval
    assert "100.0 % of 2 (34.2–100.0 %)" in page.inner_text(
        "#quality-table tr[data-annotator='careful'] [data-quality='gold']"
    )
    assert page.locator("#quality-table tr[data-annotator='careful']").get_attribute("data-flags") == ""
    assert page.inner_text("#quality-flagged") == "1 annotator is flagged."
    # The figures above keep their own cells (the table's cells are found by data-quality, not data-figure).
    assert page.inner_text("[data-figure='median_time']") == "95 s"  # 3, 3, 95, 120, 120
    assert "100.0 % of 2 (project 40.0 %)" in spammer.locator("[data-quality='no_error']").inner_text()

    # The third "no error" in a row arrives: the streak's flag shows without a reload.
    ann_page = browser.new_context().new_page()
    login(ann_page, asgi_server, annotator.username)
    api(ann_page, f"/api/annotations/{third.pk}/submit/", "POST", {"version": third.version})
    page.wait_for_selector(
        "#quality-table tr[data-annotator='ann'][data-flags='too_fast no_error_streak low_gold_accuracy']",
        timeout=15000,
    )
    assert "'No error' 3 times in a row (the bound is 3)." in spammer.inner_text()
    page.click("#quality-parts summary")  # the gold accuracy part by part
    assert "First error τ (exact)" in page.inner_text("#quality-parts thead")
    page.screenshot(path=str(artifacts_dir / f"quality-dashboard-flagged-{screen}.png"), full_page=True)

    with page.expect_download() as download:
        page.click("[data-csv='quality']")
    rows = list(csv.reader(io.StringIO(open(download.value.path()).read())))
    header = rows[0]
    by_name = {row[0]: dict(zip(header, row, strict=True)) for row in rows[1:]}
    assert (
        by_name["ann"]["flags"] == "too_fast; no_error_streak; low_gold_accuracy" and by_name["careful"]["flags"] == ""
    )
    assert by_name["ann"]["gold_n"] == "2" and by_name["ann"]["gold_accuracy"] == "0"
    assert by_name["ann"]["current_no_error_streak"] == "3" and by_name["ann"]["answers"] == "3"

    # The lead pauses the spammer's queue from the table.
    page.click("[data-pause='ann']")
    page.wait_for_selector("#quality-table tr[data-annotator='ann'][data-paused='1']")
    assert "Queue paused" in spammer.inner_text()
    assert page.inner_text("[data-pause='ann']") == "Resume"
    assert QueuePause.objects.filter(project=project, annotator=annotator).exists()
    page.screenshot(path=str(artifacts_dir / f"quality-dashboard-paused-{screen}.png"), full_page=True)
    ann_page.goto(f"{asgi_server}/queue/")
    assert "Your queue is paused." in ann_page.inner_text("[data-paused='1']")
    assert ann_page.locator(f"[data-next-trace='{project.pk}']").count() == 0

    page.click("[data-pause='ann']")  # and resumes it
    page.wait_for_selector("#quality-table tr[data-annotator='ann'][data-paused='0']")
    assert not QueuePause.objects.filter(project=project, annotator=annotator).exists()
    assert not errors, errors
