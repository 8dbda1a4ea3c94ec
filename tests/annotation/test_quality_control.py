"""Quality control through its API and services: marking gold (one answer, a file, refusals that name why), gold
mixed into the queue (deterministic, never twice, never one's own reference, never as production work), scoring at
submit, a changed reference re-scoring (audited), a removed gold trace keeping its scores, the qualification with its
feedback, a lead's retry and pause, and the settings' refusals."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.models import (
    Annotation,
    AnnotationKind,
    AnnotationStatus,
    GoldEvent,
    GoldScore,
    GoldTrace,
    QualificationAttempt,
    Verdict,
)
from annotation.quality import selectors as quality_selectors
from annotation.quality import services as quality
from annotation.quality.scoring import PARTS
from annotation.review.services import review_adjudicate
from studio.errors import Invalid
from studio.permissions import Role
from tests.fixtures_quality import CATEGORY, CORRECTED, error_fields, gold_traces, hand_in, reference_of, traces_of


@pytest.fixture
def expert(make_user, project):
    from traces.services import membership_add

    user = make_user("expert", Role.ANNOTATOR)
    membership_add(project=project, user=user)
    return user


@pytest.fixture
def newcomer(make_user, project):
    from traces.services import membership_add

    user = make_user("newcomer", Role.ANNOTATOR)
    membership_add(project=project, user=user)
    return user


def _settings(project, lead, **fields):
    return quality.quality_settings_save(project=project, user=lead, fields=fields)


# --- marking gold --------------------------------------------------------------------------------------------------


def test_a_lead_marks_an_accepted_answer_gold_through_the_api(project, lead, expert, annotator, api_client):
    (trace,) = traces_of(project, 1)
    reference = reference_of(trace, annotator=expert, lead=lead)
    answer = api_client(lead).post(f"/api/projects/{project.pk}/gold/", {"annotation": reference.pk}, format="json")
    assert answer.status_code == 201, answer.json()
    assert answer.json()["outcome"] == "marked" and answer.json()["reference"]["annotator"] == "expert"
    again = api_client(lead).post(f"/api/projects/{project.pk}/gold/", {"annotation": reference.pk}, format="json")
    assert again.status_code == 200 and again.json()["outcome"] == "unchanged"
    listed = api_client(lead).get(f"/api/projects/{project.pk}/gold/").json()
    assert listed["count"] == 1 and listed["count_words"] == "1 gold trace"
    assert api_client(annotator).get(f"/api/projects/{project.pk}/gold/").status_code == 403
    assert GoldEvent.objects.filter(kind="marked").count() == 1
    state = quality_selectors.gold_state(reference)
    assert state == {"gold_id": answer.json()["id"], "is_reference": True, "refusal": ""}


@pytest.mark.parametrize(
    ("status", "verdict", "words"),
    [
        (AnnotationStatus.DRAFT, Verdict.ERROR, "it is a draft; only an accepted answer can be a reference"),
        (AnnotationStatus.REJECTED, Verdict.ERROR, "it is rejected; only an accepted answer"),
        (AnnotationStatus.SUBMITTED, Verdict.ERROR, "it is not reviewed yet"),
        (AnnotationStatus.ACCEPTED, Verdict.UNUSABLE, "it judges the trace unusable"),
    ],
)
def test_an_answer_that_cannot_be_gold_is_a_400_naming_why(project, lead, expert, api_client, status, verdict, words):
    (trace,) = traces_of(project, 1)
    answer = Annotation.objects.create(
        trace=trace, project=project, annotator=expert, status=status, verdict=verdict, unusable_reason="blank"
    )
    refused = api_client(lead).post(f"/api/projects/{project.pk}/gold/", {"annotation": answer.pk}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "annotation"
    assert words in refused.json()["detail"], refused.json()
    assert words in quality_selectors.gold_state(answer)["refusal"]  # the page's button says the same
    assert not GoldTrace.objects.exists()


def test_a_gold_file_marks_its_traces_and_names_each_refused_line(project, lead, expert, api_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    first, second, third = traces_of(project, 3)
    reference_of(first, annotator=expert, lead=lead)
    reference_of(second, annotator=expert, lead=lead)
    Annotation.objects.create(trace=third, project=project, annotator=expert, verdict=Verdict.NO_ERROR)
    text = (
        "external_id,annotator\n"
        f"{first.external_id},\n{second.external_id},expert\n{third.external_id},\nno-such-trace,\n{first.external_id},\n"
    )
    upload = SimpleUploadedFile("gold.csv", text.encode(), content_type="text/csv")
    report = api_client(lead).post(f"/api/projects/{project.pk}/gold/", {"file": upload}, format="multipart").json()
    assert (report["marked"], report["unchanged"]) == (2, 0)
    refused = {row["line"]: row["reason"] for row in report["refused"]}
    assert "it is a draft" in refused[4] and "no trace 'no-such-trace'" in refused[5]
    assert refused[6] == "this trace is named twice in the file"
    assert set(GoldTrace.objects.values_list("trace_id", flat=True)) == {first.pk, second.pk}


def test_the_gold_command_reads_a_file(project, lead, expert, tmp_path):
    from django.core.management import call_command

    (trace,) = traces_of(project, 1)
    reference_of(trace, annotator=expert, lead=lead)
    path = tmp_path / "gold.jsonl"
    path.write_text(f'{{"external_id": "{trace.external_id}"}}\n{{"external_id": "missing"}}\n')
    from io import StringIO

    out = StringIO()
    call_command("gold_mark", "--project", str(project.pk), "--file", str(path), "--by", "leader", stdout=out)
    assert "1 marked" in out.getvalue() and "line 2" in out.getvalue()
    assert GoldTrace.objects.filter(trace=trace).exists()


# --- the hand-out --------------------------------------------------------------------------------------------------


def test_gold_comes_one_in_n_never_twice_never_ones_own_reference_and_never_as_production(
    project, lead, expert, annotator
):
    golds = gold_traces(project, traces_of(project, 3), expert=expert, lead=lead)
    traces_of(project, 12, start=50)
    _settings(project, lead, gold_every=4)
    kinds = []
    for _ in range(12):
        annotation, _ = services.lease_next_trace(user=annotator, project=project)
        kinds.append(annotation.kind)
        hand_in(annotation, annotator, verdict=Verdict.NO_ERROR)
    # One in four of the first twelve, at the same places each run (three gold traces exist).
    assert kinds.count(AnnotationKind.GOLD) == 3
    positions = [i for i, kind in enumerate(kinds) if kind == AnnotationKind.GOLD]
    assert positions[1] - positions[0] == positions[2] - positions[1] == 4
    gold_trace_ids = {g.trace_id for g in golds}
    met = list(
        Annotation.objects.filter(annotator=annotator, trace_id__in=gold_trace_ids).values_list("trace_id", flat=True)
    )
    assert sorted(met) == sorted(set(met)) and len(met) == 3
    # The expert wrote every reference: no gold for them, and gold traces never reach them as production work.
    for _ in range(3):
        claim = services.lease_next_trace(user=expert, project=project)
        if claim is None:
            break
        assert claim[0].trace_id not in gold_trace_ids and claim[0].kind == AnnotationKind.PRODUCTION
        hand_in(claim[0], expert, verdict=Verdict.NO_ERROR)


def test_a_gold_trace_looks_like_any_other_and_is_scored_at_submit(project, lead, expert, annotator, api_client):
    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    _settings(project, lead, gold_every=1)
    answer = api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/", {}, format="json").json()
    assert answer["trace_id"] == gold.trace_id
    assert "kind" not in answer["annotation"] and answer["annotation"]["feedback_url"] is None
    annotation = Annotation.objects.get(pk=answer["annotation"]["id"])
    submitted = hand_in(annotation, annotator, **error_fields(4))
    score = GoldScore.objects.get(annotation=submitted)
    assert not score.correct and score.tau_exact_ok is False and score.tau_within_one_ok is True
    assert score.verdict_ok and score.category_ok
    # The annotator sees nothing of it (a gold trace stays unmarked); the lead sees the comparison.
    refused = api_client(annotator).get(f"/api/annotations/{annotation.pk}/feedback/")
    assert refused.status_code == 409 and refused.json()["detail"] == "There is no feedback for this answer."
    shown = api_client(lead).get(f"/api/annotations/{annotation.pk}/feedback/").json()
    assert shown["comparison"]["differences"][0]["part"] == "tau_exact"
    # Not in the review queue, not the annotator's production work.
    from annotation.review.selectors import review_queue

    assert not review_queue(lead, project=project).filter(pk=annotation.pk).exists()
    from insights.models import SearchEntry

    assert not SearchEntry.objects.filter(annotation_id=annotation.pk).exists()  # no correction of the project's
    assert services.lease_next_trace(user=annotator, project=project) is None  # one gold trace, met: none left


def test_a_changed_reference_rescores_its_answers_audited(project, lead, expert, annotator, make_user):
    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    _settings(project, lead, gold_every=1)
    annotation, _ = services.lease_next_trace(user=annotator, project=project)
    hand_in(annotation, annotator, **error_fields(4))
    assert not GoldScore.objects.get(annotation=annotation).correct
    # Another accepted answer, at step 4, becomes the reference: the answer is right now.
    other = make_user("other", Role.ANNOTATOR)
    new_reference = reference_of(gold.trace, annotator=other, lead=lead, tau=4)
    _, outcome = quality.gold_mark_answer(annotation_id=new_reference.pk, user=lead)
    assert outcome == "reference_changed"
    score = GoldScore.objects.get(annotation=annotation)
    assert score.correct and score.rescored_at is not None and score.previous["correct"] is False
    event = GoldEvent.objects.get(kind="reference_changed")
    assert event.detail["rescored"] == 1 and event.detail["changed"] == 1 and event.actor == lead
    # An adjudication that edits the reference re-scores again.
    review_adjudicate(annotation_id=new_reference.pk, actor=lead, edits={"error_category": "other"})
    assert GoldEvent.objects.filter(kind="reference_changed").count() == 2
    score.refresh_from_db()
    assert score.category_ok is False and not score.correct
    from annotation.dashboards import DateRange

    report = quality_selectors.quality_dashboard(project, DateRange.from_days(None, None))
    assert report["gold_changes"][0]["kind"] == "reference_changed"
    assert "1 answers re-scored, 1 changed" in report["gold_changes"][0]["words"]


def test_removing_a_gold_trace_keeps_its_scores_marked_as_such(project, lead, expert, annotator, api_client):
    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    _settings(project, lead, gold_every=1)
    annotation, _ = services.lease_next_trace(user=annotator, project=project)
    hand_in(annotation, annotator, **error_fields(3))
    removed = api_client(lead).delete(f"/api/gold/{gold.pk}/")
    assert removed.status_code == 200 and removed.json()["scores_kept"] == 1
    score = GoldScore.objects.get(annotation=annotation)
    assert score.gold_id is None and score.gold_removed_at is not None and score.correct
    from annotation.dashboards import DateRange

    report = quality_selectors.quality_dashboard(project, DateRange.from_days(None, None))
    row = next(r for r in report["annotators"] if r["annotator"] == annotator.username)
    assert row["gold"]["n"] == 1 and row["gold"]["removed"] == 1
    assert report["gold_changes"][0]["kind"] == "removed"
    assert Annotation.objects.get(pk=annotation.pk).kind == AnnotationKind.GOLD  # still no production work


# --- qualification -------------------------------------------------------------------------------------------------


def test_a_qualification_larger_than_the_gold_is_refused(project, lead, api_client):
    answer = api_client(lead).patch(
        f"/api/projects/{project.pk}/quality/settings/", {"qualification_size": 3}, format="json"
    )
    assert answer.status_code == 400 and answer.json()["field"] == "qualification_size"
    assert "larger than this project's 0" in answer.json()["detail"]
    bad = api_client(lead).patch(f"/api/projects/{project.pk}/quality/settings/", {"point_tolerance": 2}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "point_tolerance"
    with pytest.raises(Invalid, match="gold_every must be a whole number"):  # a caller other than the JSON API
        quality.quality_settings_save(project=project, user=lead, fields={"gold_every": float("inf")})


def test_a_newcomer_who_fails_the_qualification_is_kept_out_until_a_lead_allows_another_try(
    project, lead, expert, newcomer, api_client
):
    gold_traces(project, traces_of(project, 4), expert=expert, lead=lead)
    traces_of(project, 2, start=50)
    _settings(project, lead, qualification_size=2, qualification_pass_mark=1.0)
    state = api_client(newcomer).get(f"/api/projects/{project.pk}/qualification/").json()
    assert state["status"] == "not_started" and not state["queue_open"] and "2 qualification traces" in state["words"]
    for _ in range(2):
        claim = api_client(newcomer).post(f"/api/projects/{project.pk}/next-trace/", {}, format="json").json()
        annotation = Annotation.objects.get(pk=claim["annotation"]["id"])
        assert annotation.kind == AnnotationKind.QUALIFICATION
        assert api_client(newcomer).get(f"/api/annotations/{annotation.pk}/feedback/").status_code == 409  # not yet
        submitted = hand_in(annotation, newcomer, verdict=Verdict.NO_ERROR)
        assert api_client(newcomer).get(f"/api/annotations/{submitted.pk}/").json()["feedback_url"]
        feedback = api_client(newcomer).get(f"/api/annotations/{submitted.pk}/feedback/").json()
        assert feedback["correct"] is False and feedback["reference_words"] == "First error at step 3"
        assert feedback["comparison"]["reference"]["error_category"] == CATEGORY
    refused = api_client(newcomer).post(f"/api/projects/{project.pk}/next-trace/", {}, format="json")
    assert refused.status_code == 409 and refused.json()["gate"] == "qualification_failed"
    assert "0 of 2 answers right" in refused.json()["detail"]
    failed = api_client(newcomer).get(f"/api/projects/{project.pk}/qualification/").json()
    assert failed["status"] == "failed" and not failed["queue_open"]
    assert [answer["correct"] for answer in failed["attempts"][0]["answers"]] == [False, False]  # kept with it
    retry = api_client(lead).post(
        f"/api/projects/{project.pk}/qualification/retry/", {"annotator": "newcomer"}, format="json"
    )
    assert retry.status_code == 201 and retry.json()["number"] == 2 and retry.json()["allowed_by"] == "leader"
    # The second attempt, right this time: the real queue opens, with traces never met before.
    for _ in range(2):
        annotation, _ = services.lease_next_trace(user=newcomer, project=project)
        assert annotation.kind == AnnotationKind.QUALIFICATION
        hand_in(annotation, newcomer, **error_fields(3))
    assert api_client(newcomer).get(f"/api/projects/{project.pk}/qualification/").json()["queue_open"]
    annotation, _ = services.lease_next_trace(user=newcomer, project=project)
    assert annotation.kind == AnnotationKind.PRODUCTION
    attempts = QualificationAttempt.objects.filter(annotator=newcomer).order_by("number")
    assert [(a.status, a.correct) for a in attempts] == [("failed", 0), ("passed", 2)]
    again = api_client(lead).post(
        f"/api/projects/{project.pk}/qualification/retry/", {"annotator": "newcomer"}, format="json"
    )
    assert again.status_code == 409 and "passed the qualification already" in again.json()["detail"]


def test_qualification_needs_enough_unseen_gold_and_leads_are_not_gated(project, lead, expert, newcomer):
    gold_traces(project, traces_of(project, 2), expert=expert, lead=lead)
    traces_of(project, 1, start=50)
    _settings(project, lead, qualification_size=2)
    # The expert wrote both references: nothing is left for them to qualify on.
    with pytest.raises(quality.QueueClosed) as refused:
        services.lease_next_trace(user=expert, project=project)
    assert refused.value.extra["gate"] == "qualification_unavailable"
    claim = services.lease_next_trace(user=lead, project=project)
    assert claim is not None and claim[0].kind == AnnotationKind.PRODUCTION


def test_a_paused_queue_says_so_and_resumes(project, lead, annotator, api_client):
    traces_of(project, 1)
    paused = api_client(lead).post(
        f"/api/projects/{project.pk}/quality/pause/",
        {"annotator": "ann", "paused": True, "reason": "check"},
        format="json",
    )
    assert paused.status_code == 200 and paused.json()["paused"]
    refused = api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/", {}, format="json")
    assert refused.status_code == 409 and refused.json()["gate"] == "paused" and "check" in refused.json()["detail"]
    assert api_client(annotator).get(f"/api/projects/{project.pk}/qualification/").json()["paused"]
    api_client(lead).post(
        f"/api/projects/{project.pk}/quality/pause/", {"annotator": "ann", "paused": False}, format="json"
    )
    assert api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/", {}, format="json").status_code == 200
    unknown = api_client(lead).post(
        f"/api/projects/{project.pk}/quality/pause/", {"annotator": "nobody", "paused": True}, format="json"
    )
    assert unknown.status_code == 400 and unknown.json()["field"] == "annotator"


def test_gold_answers_stay_out_of_agreement(project, lead, expert, annotator, make_user):
    from annotation.agreement import agreement_report

    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    _settings(project, lead, gold_every=1)
    second = make_user("second", Role.ANNOTATOR)
    from traces.services import membership_add

    membership_add(project=project, user=second)
    for user in (annotator, second):
        annotation, _ = services.lease_next_trace(user=user, project=project)
        assert annotation.trace_id == gold.trace_id
        hand_in(annotation, user, verdict=Verdict.NO_ERROR)
    assert agreement_report(project).pairs == []


def test_a_gold_trace_has_no_quota_an_expired_lease_on_it_is_kept(project, lead, expert, annotator, make_user):
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Lease
    from traces.services import membership_add

    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    _settings(project, lead, gold_every=1)
    second = make_user("second", Role.ANNOTATOR)
    membership_add(project=project, user=second)
    first_answer, _ = services.lease_next_trace(user=annotator, project=project)
    hand_in(first_answer, annotator, verdict=Verdict.NO_ERROR)
    mine, lease = services.lease_next_trace(user=second, project=project)
    assert mine.trace_id == gold.trace_id  # taken though another annotator answered it (a quota of one otherwise)
    Lease.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert services.lease_heartbeat(lease_id=lease.pk, user=second).released_at is None
    Lease.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert services.lease_take_for_annotation(annotation=mine, user=second) is not None  # the workspace opens editable


def test_a_reference_sent_back_stops_handing_out_its_trace_and_rescores_once_accepted_again(
    project, lead, expert, annotator, make_user
):
    from annotation.review.services import review_accept
    from traces.services import membership_add

    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    _settings(project, lead, gold_every=1)
    answer, _ = services.lease_next_trace(user=annotator, project=project)
    hand_in(answer, annotator, **error_fields(4))
    assert not GoldScore.objects.get(annotation=answer).correct
    # The lead reopens the reference: nobody is handed the trace as gold meanwhile.
    from django.db import transaction

    from annotation.services import annotation_transition

    with transaction.atomic():
        reopened = Annotation.objects.select_for_update().get(pk=gold.reference_id)
        annotation_transition(annotation=reopened, to=AnnotationStatus.REJECTED, actor=lead, comment="τ is 4")
    newcomer = make_user("third", Role.ANNOTATOR)
    membership_add(project=project, user=newcomer)
    assert services.lease_next_trace(user=newcomer, project=project) is None
    # The expert moves τ to 4 (the click placed again on o_4) and hands it in again; accepted, it re-scores the
    # answer, which is right now.
    reference = Annotation.objects.get(pk=gold.reference_id)
    on_step_4 = {**CORRECTED, "args": {"start_box": [302, 262]}}
    saved = services.annotation_save_draft(
        annotation_id=reference.pk,
        user=expert,
        base_version=reference.version,
        fields=error_fields(4, corrected=on_step_4),
    )
    services.annotation_submit(annotation_id=saved.pk, user=expert, base_version=saved.version)
    review_accept(annotation_id=reference.pk, actor=lead)
    assert GoldScore.objects.get(annotation=answer).correct
    assert GoldEvent.objects.filter(kind="reference_changed", actor=lead).count() == 1


# --- skipping gold and qualification traces ------------------------------------------------------------------------


def test_a_qualification_trace_is_not_skipped_and_its_workspace_offers_no_skip(
    project, lead, expert, newcomer, api_client, client
):
    gold_traces(project, traces_of(project, 3), expert=expert, lead=lead)
    _settings(project, lead, qualification_size=2)
    annotation, _ = services.lease_next_trace(user=newcomer, project=project)
    assert annotation.kind == AnnotationKind.QUALIFICATION
    refused = api_client(newcomer).post(f"/api/annotations/{annotation.pk}/skip/")
    assert refused.status_code == 409 and refused.json()["detail"].startswith("A qualification trace cannot be skipped")
    # Nothing changed: the trace is still theirs, and the hand-out gives it again rather than an easier one.
    assert services.lease_next_trace(user=newcomer, project=project)[0].pk == annotation.pk
    client.force_login(newcomer)
    assert 'id="ws-skip"' not in client.get(f"/annotations/{annotation.pk}/").content.decode()


def test_a_skipped_gold_trace_counts_as_a_wrong_answer_whatever_comes_after(
    project, lead, expert, annotator, api_client, client, make_user
):
    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    traces_of(project, 1, start=10)
    _settings(project, lead, gold_every=1)
    annotation, _ = services.lease_next_trace(user=annotator, project=project)
    assert annotation.kind == AnnotationKind.GOLD
    client.force_login(annotator)
    assert 'id="ws-skip"' in client.get(f"/annotations/{annotation.pk}/").content.decode()  # as on any trace
    skipped = api_client(annotator).post(f"/api/annotations/{annotation.pk}/skip/")
    assert skipped.status_code == 200, skipped.json()
    score = GoldScore.objects.get(annotation=annotation)
    assert not score.correct and score.comparison["skipped"] is True
    applying = {part: getattr(score, f"{part}_ok") for part in PARTS if getattr(score, f"{part}_ok") is not None}
    assert applying and not any(applying.values())  # every part that applies is wrong
    # The next trace is no other gold trace (none is left) but the production one; the skipped one never comes back.
    following, _ = services.lease_next_trace(user=annotator, project=project)
    assert following.kind == AnnotationKind.PRODUCTION and following.trace_id != gold.trace_id
    # Handed in later with the reference's own answer, the skip's score stands: skipping first gains nothing.
    hand_in(Annotation.objects.get(pk=annotation.pk), annotator, **error_fields(3))
    score.refresh_from_db()
    assert not score.correct and score.comparison["skipped"] is True
    # A changed reference scores the skip again as a skip.
    other = make_user("other", Role.ANNOTATOR)
    quality.gold_mark_answer(annotation_id=reference_of(gold.trace, annotator=other, lead=lead, tau=4).pk, user=lead)
    score.refresh_from_db()
    assert score.rescored_at is not None and not score.correct and score.comparison["skipped"] is True
