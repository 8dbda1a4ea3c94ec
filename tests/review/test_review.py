"""Review decisions, agreement and dashboard figures against hand-computed answers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.utils import timezone

from annotation.agreement import agreement_report
from annotation.dashboards import DateRange, project_dashboard
from annotation.models import Annotation, AnnotationStatus, AuditEvent
from annotation.review import services as review
from annotation.selectors import word_diff
from annotation.services import annotation_transition, trace_recount_standing_annotations
from studio.errors import Invalid
from studio.permissions import Role
from tests import factories
from traces.models import Step, Trace

pytestmark = pytest.mark.django_db


def make_trace(project, external_id: str, steps: int = 5) -> Trace:
    """A trace of ``steps`` rows without screenshots (tests/factories.py)."""
    actions = [f"click(start_box='<|box_start|>({100 * i},{100 * i})<|box_end|>')" for i in range(1, steps + 1)]
    return factories.make_trace(
        project,
        through="rows",
        external_id=external_id,
        instruction="Open settings",
        source="test",
        steps=steps,
        actions=actions,
    )


def make_annotation(trace, user, *, status=AnnotationStatus.SUBMITTED, submitted_at=None, **fields) -> Annotation:
    """An annotation written as it would stand after its transitions (without their audit records)."""
    annotation = Annotation.objects.create(
        trace=trace,
        project=trace.project,
        annotator=user,
        status=status,
        submitted_at=submitted_at or (timezone.now() if status != "draft" else None),
        **fields,
    )
    trace_recount_standing_annotations(traces=Trace.objects.filter(pk=trace.pk))
    return annotation


# --- review services --------------------------------------------------------------------------


def test_reject_resubmit_accept_audits_every_transition(project, annotator, lead):
    trace = make_trace(project, "t1")
    ann = make_annotation(trace, annotator, verdict="no_error")
    with pytest.raises(review.ReviewError, match="needs a comment"):
        review.review_reject(annotation_id=ann.pk, actor=lead, comment="  ")
    review.review_reject(annotation_id=ann.pk, actor=lead, comment="Step 3 is wrong, look again.")
    ann.refresh_from_db()
    assert (ann.status, ann.review_comment, ann.reviewed_by) == ("rejected", "Step 3 is wrong, look again.", lead)
    with pytest.raises(review.ReviewError, match="only a submitted annotation"):
        review.review_accept(annotation_id=ann.pk, actor=lead)
    from django.db import transaction

    with transaction.atomic():
        annotation_transition(annotation=Annotation.objects.get(pk=ann.pk), to="submitted", actor=annotator)
    ann.refresh_from_db()
    with pytest.raises(review.ReviewConflict, match="changed since you opened it"):
        review.review_accept(annotation_id=ann.pk, actor=lead, expected_version=ann.version - 1)
    review.review_accept(annotation_id=ann.pk, actor=lead, expected_version=ann.version)
    moves = list(
        AuditEvent.objects.filter(annotation=ann, kind="transition").values_list(
            "from_status", "to_status", "actor__username"
        )
    )
    assert moves == [
        ("submitted", "rejected", "leader"),
        ("rejected", "submitted", "ann"),
        ("submitted", "accepted", "leader"),
    ]


def test_annotator_cannot_review(project, annotator):
    ann = make_annotation(make_trace(project, "t1"), annotator, verdict="no_error")
    with pytest.raises(PermissionDenied):
        review.review_accept(annotation_id=ann.pk, actor=annotator)
    assert Annotation.objects.get(pk=ann.pk).status == "submitted"


def test_edit_and_accept_records_before_and_after(project, annotator, lead):
    trace = make_trace(project, "t1")
    ann = make_annotation(
        trace,
        annotator,
        verdict="error",
        tau=2,
        error_category="wrong text",
        corrected_action="click(start_box='(1,2)')",
    )
    with pytest.raises(review.ReviewError, match="tau must lie between 1 and 5"):
        review.review_edit_and_accept(annotation_id=ann.pk, actor=lead, edits={"tau": 9})
    with pytest.raises(review.ReviewError, match="corrected action"):
        review.review_edit_and_accept(annotation_id=ann.pk, actor=lead, edits={"corrected_action": "click(start_box="})
    with pytest.raises(review.ReviewError, match="cannot be edited"):
        review.review_edit_and_accept(annotation_id=ann.pk, actor=lead, edits={"status": "accepted"})
    review.review_edit_and_accept(
        annotation_id=ann.pk, actor=lead, edits={"tau": "3", "corrected_action": "click(start_box='(5,6)')"}
    )
    ann.refresh_from_db()
    assert ann.status == "accepted" and ann.tau == 3
    assert ann.corrected_action == "click(start_box='<|box_start|>(5,6)<|box_end|>')"
    edit = AuditEvent.objects.get(annotation=ann, kind="edit")
    assert edit.changes["tau"] == [2, 3] and edit.actor == lead


def test_a_leads_point_with_decimals_is_stored_as_the_integer_it_trains(project, annotator, lead):
    ann = make_annotation(
        make_trace(project, "t1"),
        annotator,
        verdict="error",
        tau=2,
        error_category="wrong text",
        corrected_action="click(start_box='(1,2)')",
    )
    review.review_edit_and_accept(
        annotation_id=ann.pk, actor=lead, edits={"corrected_action": "click(start_box='(5.5,6.5)')"}
    )
    ann.refresh_from_db()
    # Ties to even (traces.grammar.model_number): 5.5 -> 6, 6.5 -> 6; the text and the editor's action agree.
    assert ann.corrected_action == "click(start_box='<|box_start|>(6,6)<|box_end|>')"
    assert ann.editor_state["corrected"]["args"]["start_box"] == [6, 6]


def test_word_diff_marks_changed_words():
    assert word_diff("click the red button", "click the blue button") == [
        {"op": "equal", "text": "click the "},
        {"op": "delete", "text": "red"},
        {"op": "insert", "text": "blue"},
        {"op": "equal", "text": " button"},
    ]


# --- agreement --------------------------------------------------------------------------------


def click(x, y):
    return f"click(start_box='<|box_start|>({x},{y})<|box_end|>')"


@pytest.fixture
def second_annotator(make_user, project):
    from traces.services import membership_add

    user = make_user("bob", Role.ANNOTATOR)
    membership_add(project=project, user=user)
    return user


@pytest.fixture
def agreement_fixture(project, annotator, second_annotator):
    """Four double-annotated traces (relative-1000 coordinates) plus noise that must not count."""
    A, B = annotator, second_annotator
    t = {n: make_trace(project, n) for n in ("T1", "T2", "T3", "T4", "T5")}
    pairs = {
        "T1": (
            dict(verdict="error", tau=2, error_category="wrong text", corrected_action=click(500, 500)),
            dict(verdict="error", tau=2, error_category="wrong text", corrected_action=click(530, 540)),
        ),
        "T2": (
            dict(verdict="error", tau=3, error_category="misread screen", corrected_action=click(1, 1)),
            dict(verdict="error", tau=4, error_category="wrong text", corrected_action=click(1, 1)),
        ),
        "T3": (dict(verdict="no_error"), dict(verdict="no_error")),
        "T4": (
            dict(verdict="error", tau=1, error_category="wrong text", corrected_action=click(100, 100)),
            dict(
                verdict="error",
                tau=1,
                error_category="wrong element / grounding",
                corrected_action="hotkey(key='ctrl c')",
            ),
        ),
    }
    made = {}
    for name, (a, b) in pairs.items():
        made[name] = (make_annotation(t[name], A, **a), make_annotation(t[name], B, **b))
    make_annotation(t["T5"], A, verdict="no_error")  # single annotation
    make_annotation(t["T5"], B, status="draft", verdict="error", tau=1)  # a draft is not an answer
    return made


def test_agreement_figures_match_hand_computation(project, lead, agreement_fixture):
    report = agreement_report(project)
    assert len(report.pairs) == 4
    assert report.first_error_exact == pytest.approx(3 / 4)  # T1 (τ 2), T3 (no error), T4 (τ 1)
    assert report.first_error_within_one == pytest.approx(4 / 4)  # + T2 (τ 3 vs 4)
    # Nominal α over units T1 (wt,wt), T2 (ms,wt), T4 (wt,weg); T3 has no category.
    # n_wt=4, n_ms=1, n_weg=1, n=6; disagreeing pairable values Σo_ck = 4; Σn_c·n_k = 36-18 = 18.
    # α = 1 - (n-1)·4/18 = 1 - 20/18 = -1/9
    assert report.category_alpha == pytest.approx(-1 / 9)
    assert report.action_type_pairs == 2 and report.action_type_agreement == pytest.approx(
        0.5
    )  # T1 same, T4 click≠hotkey
    assert report.click_pairs == 1 and report.click_distance_median == pytest.approx(0.05)  # (30, 40)/1000
    assert sorted(p.trace_id for p in report.disagreements) == sorted(
        [agreement_fixture["T2"][0].trace_id, agreement_fixture["T4"][0].trace_id]
    )

    chosen = agreement_fixture["T4"][0]
    review.review_adjudicate(annotation_id=chosen.pk, actor=lead)
    chosen.refresh_from_db()
    assert chosen.is_adjudicated and chosen.status == "accepted"
    assert [p.trace_id for p in agreement_report(project).disagreements] == [agreement_fixture["T2"][0].trace_id]
    # choosing the other one moves the mark: one adjudicated answer per trace
    other = agreement_fixture["T4"][1]
    review.review_adjudicate(annotation_id=other.pk, actor=lead)
    assert list(
        Annotation.objects.filter(trace_id=chosen.trace_id, is_adjudicated=True).values_list("pk", flat=True)
    ) == [other.pk]


def test_click_distance_uses_screen_size_for_pixel_conventions(project, annotator, second_annotator):
    from traces.models import Screenshot

    project.coordinate_convention = "screen-pixels"
    project.save()
    trace = make_trace(project, "px", steps=2)
    shot = Screenshot.objects.create(sha256="a" * 64, image="x.png", format="PNG", width=2000, height=1000, byte_size=1)
    Step.objects.filter(trace=trace, index=1).update(screenshot=shot)
    make_annotation(trace, annotator, verdict="error", tau=1, error_category="wrong text", corrected_action=click(0, 0))
    make_annotation(
        trace, second_annotator, verdict="error", tau=1, error_category="wrong text", corrected_action=click(600, 800)
    )
    report = agreement_report(project)
    assert report.click_distance_mean == pytest.approx(((600 / 2000) ** 2 + (800 / 1000) ** 2) ** 0.5)


# --- dashboards -------------------------------------------------------------------------------


def test_dashboard_figures_match_hand_computation(project, annotator, second_annotator, lead):
    assert connection.in_atomic_block  # the figures are read in turn, on this test's connection
    check_dashboard_against_hand_computation(project, annotator, second_annotator, lead)


def test_dashboard_figures_read_at_once_match_hand_computation(
    transactional_db, project, annotator, second_annotator, lead
):
    assert not connection.in_atomic_block  # committed data: the figures are read concurrently on their own connections
    check_dashboard_against_hand_computation(project, annotator, second_annotator, lead)


def check_dashboard_against_hand_computation(project, annotator, second_annotator, lead):
    today = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    day0, day1 = today - timedelta(days=2), today - timedelta(days=1)
    A, B = annotator, second_annotator
    tr = [make_trace(project, f"d{i}", steps=10) for i in range(8)]
    a1 = make_annotation(
        tr[0], A, submitted_at=day0, time_spent_s=30, verdict="error", tau=1, error_category="wrong text"
    )
    a2 = make_annotation(
        tr[1], A, submitted_at=day0, time_spent_s=50, verdict="error", tau=5, error_category="wrong text"
    )
    a3 = make_annotation(tr[2], A, submitted_at=day1, time_spent_s=100, verdict="no_error")
    b1 = make_annotation(
        tr[3], B, submitted_at=day1, time_spent_s=20, verdict="error", tau=10, error_category="misread screen"
    )
    b2 = make_annotation(tr[4], B, submitted_at=day1, time_spent_s=40, verdict="unusable", unusable_reason="blank")
    make_annotation(
        tr[5], B, submitted_at=today - timedelta(days=20), time_spent_s=1000, verdict="no_error"
    )  # before the range
    make_annotation(tr[6], A, status="draft", time_spent_s=7)  # not done
    for ann in (a1, a2, b2):
        review.review_accept(annotation_id=ann.pk, actor=lead)
    for ann in (a3, b1):
        review.review_reject(annotation_id=ann.pk, actor=lead, comment="again")

    data = project_dashboard(project, DateRange.from_days(day0.date(), today.date()))
    assert data["done_per_day"] == [
        {"day": day0.date().isoformat(), "annotator": "ann", "done": 2},
        {"day": day1.date().isoformat(), "annotator": "ann", "done": 1},
        {"day": day1.date().isoformat(), "annotator": "bob", "done": 2},
    ]
    # times 20, 30, 40, 50, 100 -> 40; ann 30, 50, 100 -> 50; bob 20, 40 -> 30
    assert data["median_time"] == {"overall_s": 40, "per_annotator_s": {"ann": 50, "bob": 30}}
    assert data["review"]["accepted"] == 3 and data["review"]["rejected"] == 2
    assert data["review"]["acceptance_rate"] == pytest.approx(0.6) and data["review"][
        "rejection_rate"
    ] == pytest.approx(0.4)
    assert data["review"]["per_annotator"] == [
        {
            "annotator": "ann",
            "accepted": 2,
            "rejected": 1,
            "acceptance_rate": pytest.approx(2 / 3),
            "rejection_rate": pytest.approx(1 / 3),
        },
        {"annotator": "bob", "accepted": 1, "rejected": 1, "acceptance_rate": 0.5, "rejection_rate": 0.5},
    ]
    # standing answers only (b1 was rejected): two "wrong text" errors at τ/n = 1/10 and 5/10
    assert data["error_categories"] == [{"category": "wrong text", "count": 2}]
    position = {row["bucket"]: row["count"] for row in data["first_error_position"]}
    assert position["0–10%"] == 1 and position["40–50%"] == 1 and sum(position.values()) == 2
    assert data["counters"] == {"draft": 1, "submitted": 1, "accepted": 3, "rejected": 2}
    assert data["verdicts"] == {"done": 5, "error": 3, "no_error": 1, "unusable": 1}
    assert data["agreement"]["pairs"] == 0 and data["agreement"]["first_error_exact"] is None
    assert data["suggestion_match"] is None or data["suggestion_match"]["compared"] == 0


def test_transitions_keep_the_count_of_standing_annotations(project, annotator, second_annotator, lead):
    trace = make_trace(project, "count")
    first = make_annotation(trace, annotator, status="draft")
    second = make_annotation(trace, second_annotator, status="draft")

    def move(annotation, to):
        with transaction.atomic():
            annotation_transition(annotation=annotation, to=to, actor=lead)
        trace.refresh_from_db()
        return trace.standing_annotations

    assert move(first, "submitted") == 1
    assert move(second, "submitted") == 2
    assert move(first, "rejected") == 1
    assert move(first, "submitted") == 2
    assert move(first, "accepted") == 2
    assert move(first, "rejected") == 1  # reopened
    trace_recount_standing_annotations(traces=Trace.objects.filter(pk=trace.pk))
    trace.refresh_from_db()
    assert trace.standing_annotations == 1


def test_median_of_even_and_odd_groups_single_annotator(project, annotator):
    for i, seconds in enumerate([10, 20, 30, 40]):
        make_annotation(make_trace(project, f"m{i}"), annotator, time_spent_s=seconds, verdict="no_error")
    data = project_dashboard(project, DateRange.from_days(None, None))
    assert data["median_time"]["overall_s"] == 25


# --- API ----------------------------------------------------------------------------------------


def test_review_api_rejects_bad_input_and_roles(project, annotator, lead, api_client):
    ann = make_annotation(make_trace(project, "t1"), annotator, verdict="no_error")
    assert api_client(annotator).post(f"/api/reviews/{ann.pk}/accept/", {}, format="json").status_code in (403, 404)
    response = api_client(lead).post(f"/api/reviews/{ann.pk}/reject/", {"comment": ""}, format="json")
    assert response.status_code == 400 and "comment" in response.json()["detail"]
    response = api_client(lead).post(f"/api/reviews/{ann.pk}/reject/", {"comment": "fix τ"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    bad = api_client(lead).get(f"/api/projects/{project.pk}/dashboard/?from=yesterday")
    assert bad.status_code == 400 and "from must be a date" in bad.json()["detail"]
    assert api_client(lead).get(f"/api/projects/{project.pk}/dashboard/").status_code == 200
    assert api_client(annotator).get(f"/api/projects/{project.pk}/dashboard/").status_code == 403
    history = api_client(lead).get(f"/api/traces/{ann.trace_id}/history/").json()["results"]
    assert [(h["from_status"], h["to_status"]) for h in history] == [("submitted", "rejected")]


@pytest.mark.parametrize(
    "query", ["to=9999-12-31", "from=0001-01-01", "from=9999-12-31&to=9999-12-31", "to=0001-01-02"]
)
def test_dashboard_days_past_the_calendar_are_a_clear_400(project, lead, api_client, query):
    response = api_client(lead).get(f"/api/projects/{project.pk}/dashboard/?{query}")
    assert response.status_code == 400, response.content
    assert "outside the days a dashboard covers" in response.json()["detail"]


def test_every_api_failure_is_json(project, lead, monkeypatch):
    from django.test import Client

    from annotation import dashboards

    def broken(*args, **kwargs):
        raise RuntimeError("an unforeseen bug")

    monkeypatch.setattr(dashboards, "project_dashboard", broken)
    client = Client(raise_request_exception=False)
    client.force_login(lead)
    response = client.get(f"/api/projects/{project.pk}/dashboard/")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "an unforeseen bug" not in response.json()["detail"]
    missing = client.get("/api/no-such-endpoint/")
    assert missing.status_code == 404 and "/api/no-such-endpoint/" in missing.json()["detail"]
    assert client.get("/no-such-page/")["Content-Type"].startswith("text/html")


def test_a_leads_edit_passes_the_annotators_action_check(project, annotator, lead, api_client):
    """The lead's actions are held to the rules the annotator's editor and submit use (one check): a four-key hotkey
    the prompt forbids, or an action the platform's action space lacks, is refused with the reason."""
    trace = make_trace(project, "t1")
    ann = make_annotation(trace, annotator, verdict="error", tau=2, error_category="wrong text")
    with pytest.raises(review.ReviewError, match="at most 3"):
        review.review_edit_and_accept(
            annotation_id=ann.pk, actor=lead, edits={"reflection_action": "hotkey(key='ctrl alt shift t')"}
        )
    with pytest.raises(review.ReviewError, match="corrected action"):
        review.review_edit_and_accept(annotation_id=ann.pk, actor=lead, edits={"corrected_action": "press_home()"})
    ann.refresh_from_db()
    assert ann.status == "submitted"
    # The review page's editor asks the same check through the review API; an annotator may not.
    url = f"/api/reviews/{ann.pk}/check-action/"
    body = {"slot": "reflection", "action": {"type": "hotkey", "args": {"key": "ctrl alt shift t"}}, "tau": 2}
    answer = api_client(lead).post(url, body, format="json")
    assert answer.status_code == 200 and not answer.json()["valid"]
    assert any("at most 3" in e for e in answer.json()["errors"])
    assert api_client(annotator).post(url, body, format="json").status_code in (403, 404)


def test_the_workspace_and_review_apis_answer_with_one_shape_of_an_annotation(project, annotator, lead, api_client):
    # Both start from selectors.annotation_fields_json; a hand-written second dict would drift from it.
    from annotation.selectors import ANNOTATION_FIELDS, annotation_fields_json

    ann = make_annotation(
        make_trace(project, "shape"),
        annotator,
        verdict="error",
        tau=2,
        error_category="wrong element / grounding",
        corrected_thought="Click the other item.",
        corrected_action="click(start_box='<|box_start|>(300,300)<|box_end|>')",
        note="a note",
        time_spent_s=42,
    )
    shared = annotation_fields_json(ann)
    assert set(shared) == {*ANNOTATION_FIELDS, "submitted_at"} and shared["submitted_at"]
    review_view = api_client(lead).get(f"/api/reviews/{ann.pk}/").json()["annotation"]
    own_view = api_client(annotator).get(f"/api/annotations/{ann.pk}/").json()
    for view in (review_view, own_view):
        assert {key: view[key] for key in shared} == shared
    # The keys each API's clients read beyond the shared ones.
    assert {"external_id", "project_id", "project", "annotator", "is_adjudicated", "reviewed_by", "reviewed_at"} <= set(
        review_view
    )
    assert review_view["review_url"] == f"/reviews/{ann.pk}/"
    assert {"unusable_reason", "editor_state", "updated_at"} <= set(own_view)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("tau", 9, "tau must lie between 1 and 5: 9 is outside the trace's steps 1..5"),
        ("tau", 0, "tau must lie between 1 and 5: 0 is outside the trace's steps 1..5"),
        ("error_category", "not a category", "error category 'not a category' is not one of this project's categories"),
        ("verdict", "maybe", "verdict must be one of"),
        ("note", 5, "note must be text"),
    ],
)
def test_the_draft_and_the_review_edit_refuse_a_field_with_one_rule(project, annotator, field, value, message):
    # One rule (annotation.answer_fields.clean_answer_field), each path its own error type: a second copy of a
    # field's rule would refuse with another message, or not at all.
    from annotation.services import drafts as services

    ann = make_annotation(make_trace(project, "rules"), annotator, verdict="error", tau=1)
    with pytest.raises(Invalid) as draft:
        services._clean_draft_fields(ann, {field: value})
    with pytest.raises(review.ReviewError) as edit:
        review._clean_edits(ann, {field: value})
    assert str(draft.value) == str(edit.value)
    assert str(draft.value).startswith(message)
    assert services._clean_draft_fields(ann, {"tau": 5, "error_category": project.error_categories[0]}) == (
        review._clean_edits(ann, {"tau": "5", "error_category": project.error_categories[0]})
    )


def test_the_review_queue_says_verdicts_in_the_review_pages_words(project, annotator, second_annotator, lead, client):
    # The queue, its disagreements and the API that updates it live showed the stored values ("no_error",
    # "error τ=2") where the review page says "No error".
    trace = make_trace(project, "words")
    first = make_annotation(trace, annotator, verdict="error", tau=2, error_category="wrong element / grounding")
    make_annotation(trace, second_annotator, verdict="no_error")
    client.force_login(lead)
    page = client.get("/reviews/").content.decode()
    assert "<td>First error at step 2</td>" in page and "<td>No error</td>" in page
    assert f"{annotator.username}: First error at step 2 · {second_annotator.username}: No error" in page
    # A disagreement names its trace as the queue does, by its external id, linked to the trace's page.
    assert f'<td><a href="/traces/{trace.pk}/">words</a></td>' in page
    assert "no_error" not in page.replace('data-verdict="no_error"', "")
    rows = client.get(f"/api/reviews/?project={project.pk}").json()["results"]
    assert {r["id"]: r["verdict_text"] for r in rows}[first.pk] == "First error at step 2"
    detail = client.get(f"/reviews/{first.pk}/").content.decode()
    assert f"by {second_annotator.username} — Submitted, No error" in detail


def test_the_dashboard_gives_the_pairs_behind_each_agreement_figure_in_words(project, lead, agreement_fixture, client):
    # The page wrote "(1 pairs)" itself; the counts in words come from studio.words on the server.
    client.force_login(lead)
    body = client.get(f"/api/projects/{project.pk}/dashboard/").json()
    pairs = [body["agreement"][key] for key in ("action_type_pairs", "click_pairs", "box_pairs")]
    assert pairs == [2, 1, 0]
    assert body["agreement_words"] == {"action_type_pairs": "2 pairs", "click_pairs": "1 pair", "box_pairs": "0 pairs"}


def test_the_review_queue_lists_projects_with_work_waiting_first(project, annotator, lead, client):
    from traces.services import project_create

    # "Aardvark" sorts before "Test project" but has nothing waiting: it comes after the project with work.
    idle = project_create(name="Aardvark idle", members=[annotator, lead])
    make_annotation(make_trace(project, "waiting"), annotator, verdict="no_error")
    client.force_login(lead)
    page = client.get("/reviews/").content.decode()
    assert page.index(f'data-project-id="{project.pk}"') < page.index(f'data-project-id="{idle.pk}"')


def test_the_trace_pages_history_links_a_lead_to_each_annotations_review(project, annotator, lead, client):
    from annotation.services import annotation_transition

    trace = make_trace(project, "linked")
    answer = make_annotation(trace, annotator, status=AnnotationStatus.DRAFT, verdict="no_error")
    annotation_transition(annotation=answer, to=AnnotationStatus.SUBMITTED, actor=annotator)  # a history row
    client.force_login(lead)
    assert f'<a href="/reviews/{answer.pk}/">#{answer.pk}</a> by {annotator.username}' in (
        client.get(f"/traces/{trace.pk}/").content.decode()
    )
    # Statuses by their names, as every other page writes them (the history showed "draft → submitted").
    assert '<span class="pill draft">Draft</span> → <span class="pill submitted">Submitted</span>' in (
        client.get(f"/traces/{trace.pk}/").content.decode()
    )
    assert 'id="annotation-status">Submitted</span>' in client.get(f"/reviews/{answer.pk}/").content.decode()
    client.force_login(annotator)  # who may not review sees the number alone
    page = client.get(f"/traces/{trace.pk}/").content.decode()
    assert f"#{answer.pk} by {annotator.username}" in page and f"/reviews/{answer.pk}/" not in page
