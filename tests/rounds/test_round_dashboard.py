"""The round dashboard: every round side by side, from the project dashboard's grouped scans grouped by
round; numbers checked against a small world computed by hand; and the page in a real Chromium."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection

from annotation.dashboards import round_dashboard
from annotation.models import AnnotationStatus
from prescoring.models import TraceSuggestion
from studio.permissions import Role
from tests.review.test_review import make_annotation, make_trace
from traces import services
from traces.models import Trace


def hand_world(project, lead, make_user):
    """Two rounds and a trace in none; see the test for the figures each should give."""
    from prescoring.services import prescore_job_create

    A, B = make_user("ann2", Role.ANNOTATOR), make_user("bob", Role.ANNOTATOR)
    r1 = services.round_create(project=project, name="r1", checkpoint="m1", ran_at=datetime(2026, 11, 1, tzinfo=UTC))
    # Made first, ran later: the order is by ran_at.
    r2 = services.round_create(
        project=project, name="r2", checkpoint="m2", weights_hash="beef", ran_at=datetime(2026, 11, 8, tzinfo=UTC)
    )

    def trace(name, steps, round_):
        made = make_trace(project, name, steps=steps)
        Trace.objects.filter(pk=made.pk).update(round=round_)
        return made

    t1, t2, t3, t4, t5 = (
        trace("t1", 10, r1),
        trace("t2", 4, r1),
        trace("t3", 5, r1),
        trace("t4", 5, r1),
        trace("t5", 5, r1),
    )
    cat1, cat2 = project.error_categories[0], project.error_categories[1]
    accepted, rejected = AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED
    make_annotation(t1, A, status=accepted, verdict="error", tau=2, error_category=cat1, time_spent_s=30)
    make_annotation(t2, A, verdict="error", tau=4, error_category=cat2, time_spent_s=50)
    make_annotation(t3, A, verdict="no_error", time_spent_s=20)
    make_annotation(t4, A, verdict="unusable", unusable_reason="blank screens", time_spent_s=40)
    make_annotation(t5, B, status=rejected, verdict="error", tau=1, error_category=cat1, time_spent_s=100)

    u1, u2, u3, u4 = trace("u1", 8, r2), trace("u2", 8, r2), trace("u3", 8, r2), trace("u4", 8, r2)
    make_annotation(u1, A, verdict="error", tau=2, error_category=cat1, time_spent_s=10)
    make_annotation(u2, B, status=accepted, verdict="no_error", time_spent_s=30)
    make_annotation(u3, A, verdict="no_error", time_spent_s=20)
    make_annotation(u4, A, status=AnnotationStatus.DRAFT, time_spent_s=7)

    v1 = trace("v1", 5, None)
    make_annotation(v1, A, verdict="error", tau=5, error_category=cat1, time_spent_s=60)

    job = prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)
    TraceSuggestion.objects.create(trace=t1, job=job, scorer="rules", suggested_tau=3)  # a miss (human τ 2)
    TraceSuggestion.objects.create(trace=u1, job=job, scorer="rules", suggested_tau=2)  # a hit
    return cat1, cat2


def check_round_dashboard(project, lead, make_user):
    cat1, cat2 = hand_world(project, lead, make_user)
    data = round_dashboard(project)
    assert data["scored"] is True
    none, r1, r2 = data["rounds"]
    assert [r["name"] for r in data["rounds"]] == ["(no round)", "r1", "r2"]
    assert (r2["checkpoint"], r2["weights_hash"], r2["ran_at"]) == ("m2", "beef", "2026-11-08T00:00:00+00:00")

    # r1: standing answers t1..t4 (t5's was rejected): 2 errors, 1 unusable of 4.
    assert (r1["traces"], r1["answers"]) == (5, 4)
    assert r1["verdicts"] == {"error": 2, "no_error": 1, "unusable": 1}
    assert (r1["error_share"], r1["unusable_share"]) == (0.5, 0.25)
    # τ 2 of 10 and 4 of 4: median step 3, mean 3, mean τ/n (0.2 + 1.0) / 2 = 0.6, in the tenths 10–20% and 90–100%.
    step = r1["first_error_step"]
    assert (step["answers"], step["median"], step["mean"]) == (2, 3, 3)
    assert step["mean_relative"] == pytest.approx(0.6)
    assert [h["count"] for h in step["histogram"]] == [0, 1, 0, 1, 0, 0, 0, 0, 0, 0]
    assert {b["bucket"]: b["count"] for b in r1["first_error_position"] if b["count"]} == {"10–20%": 1, "90–100%": 1}
    assert sorted((c["category"], c["count"]) for c in r1["error_categories"]) == sorted([(cat1, 1), (cat2, 1)])
    # Time over every finished annotation, the rejected one too: 20 30 40 50 100 -> 40.
    assert r1["median_time_s"] == 40
    assert r1["suggestion_match"] == {"compared": 1, "matched": 0, "rate": 0.0}  # t1 missed; t2 had no suggestion
    assert all(v is None for v in r1["change"].values())  # the first round is compared with nothing

    # r2: u1 error (τ 2 of 8), u2 and u3 no error; u4 is a draft.
    assert (r2["traces"], r2["answers"], r2["verdicts"]) == (4, 3, {"error": 1, "no_error": 2, "unusable": 0})
    assert r2["error_share"] == pytest.approx(1 / 3) and r2["unusable_share"] == 0
    assert (r2["first_error_step"]["median"], r2["first_error_step"]["mean_relative"]) == (2, 0.25)
    assert {b["bucket"]: b["count"] for b in r2["first_error_position"] if b["count"]} == {"20–30%": 1}
    assert r2["error_categories"] == [{"category": cat1, "count": 1}]
    assert r2["median_time_s"] == 20  # 10 20 30
    assert r2["suggestion_match"] == {"compared": 1, "matched": 1, "rate": 1.0}
    assert r2["change"] == {
        "error_share": pytest.approx(1 / 3 - 1 / 2),
        "unusable_share": -0.25,
        "first_error_step_median": -1,
        "first_error_relative_mean": pytest.approx(0.25 - 0.6),
        "median_time_s": -20,
        "suggestion_match_rate": 1.0,
    }

    # The trace in no round: one error at its last step.
    assert (none["traces"], none["answers"], none["error_share"], none["median_time_s"]) == (1, 1, 1.0, 60)
    assert none["first_error_step"]["histogram"][4] == {"step": "5", "count": 1}
    assert none["suggestion_match"] == {"compared": 0, "matched": 0, "rate": None}
    assert all(v is None for v in none["change"].values())


@pytest.mark.django_db
def test_round_dashboard_matches_hand_computation(project, lead, make_user):
    assert connection.in_atomic_block  # the scans run in turn on this test's connection
    check_round_dashboard(project, lead, make_user)


def test_round_dashboard_read_at_once_matches_hand_computation(transactional_db, project, lead, make_user):
    assert not connection.in_atomic_block  # committed: the scans run at once on their own connections
    check_round_dashboard(project, lead, make_user)


@pytest.mark.django_db
def test_round_dashboard_api_is_for_leads_and_a_project_without_rounds_is_empty(project, lead, annotator, api_client):
    url = f"/api/projects/{project.pk}/rounds/dashboard/"
    assert api_client(annotator).get(url).status_code == 403
    empty = api_client(lead).get(url)
    assert empty.status_code == 200 and empty.json()["rounds"] == []
    services.round_create(project=project, name="r1", checkpoint="m1")
    [only] = api_client(lead).get(url).json()["rounds"]
    assert (only["name"], only["traces"], only["answers"], only["error_share"]) == ("r1", 0, 0, None)


@pytest.mark.browser
def test_round_dashboard_page_draws_the_rounds_side_by_side(
    browser, live_server, project, lead, make_user, artifacts_dir
):
    from playwright.sync_api import expect

    from tests.conftest import login

    hand_world(project, lead, make_user)
    page = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard/")
    page.click("#round-dashboard-link")
    page.wait_for_url(f"{live_server.url}/projects/{project.pk}/dashboard/rounds/")
    page.wait_for_selector("#rounds[data-loaded]")
    assert page.locator("[data-chart][data-drawn='1']").count() == 6
    rows = page.locator("#round-table tbody tr")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-round") for i in range(3)] == ["(no round)", "r1", "r2"]
    r2 = page.locator("#round-table tr[data-round='r2']")
    assert r2.locator("[data-figure='error_share']").inner_text() == "33.3 % (−16.7 pp)"
    assert r2.locator("[data-figure='unusable_share']").inner_text() == "0.0 % (−25.0 pp)"
    assert r2.locator("[data-figure='median_time']").inner_text() == "20 s (−20 s)"
    assert r2.locator("[data-figure='suggestion_match']").inner_text() == "100.0 % of 1 (+100.0 pp)"
    page.screenshot(path=str(artifacts_dir / "round-dashboard.png"), full_page=True)

    with page.expect_download() as download:
        page.click("[data-csv='shares']")
    lines = open(download.value.path()).read().splitlines()
    assert lines[0] == "round,answers,error,unusable,error_share,unusable_share"
    assert lines[2:] == ["r1,4,2,1,0.5,0.25", "r2,3,1,0,0.3333333333333333,0"], lines
    with page.expect_download() as download:
        page.click("[data-csv='first_error_step']")
    steps = open(download.value.path()).read().splitlines()
    assert "r1,2,1" in steps and "r1,4,1" in steps and "r2,2,1" in steps and "r2,10+,0" in steps
    assert not errors, errors
