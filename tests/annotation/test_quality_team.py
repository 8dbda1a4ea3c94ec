"""A scripted team through the real queue: a careful annotator, a careless one (τ off by two half the time) and a
spammer ("no error" in five seconds). Gold traces come one in three; the quality dashboard flags the last two and not
the first; a newcomer who fails the qualification is kept out of the queue and one who passes gets in; and no gold
answer reaches a bundle."""

from __future__ import annotations

import json
import zipfile

import pytest

from annotation import services
from annotation.dashboards import DateRange
from annotation.models import Annotation, AnnotationKind, AnnotationStatus, GoldScore, Verdict
from annotation.quality import selectors as quality_selectors
from annotation.quality import services as quality
from annotation.review.services import review_accept
from studio.permissions import Role
from tests.fixtures_quality import error_fields, gold_traces, hand_in, is_gold, traces_of

CLAIMS = 12


def _careful(n: int, gold: bool) -> dict:
    # The reference's answer on gold; on real traces a mix of first errors and (not too many) "no error".
    if gold or n % 3:
        return {**error_fields(3), "seconds": 45}
    return {"verdict": Verdict.NO_ERROR, "seconds": 30}


def _careless(n: int, gold: bool) -> dict:
    return {**error_fields(5 if n % 2 == 0 else 3), "seconds": 40} if gold else {**error_fields(3), "seconds": 35}


def _spammer(n: int, gold: bool) -> dict:
    return {"verdict": Verdict.NO_ERROR, "seconds": 5}


def _work(user, project, script, claims: int = CLAIMS) -> list[Annotation]:
    done = []
    for n in range(claims):
        claim = services.lease_next_trace(user=user, project=project)
        assert claim is not None, f"{user.username}'s queue ran dry after {n} traces"
        annotation, _ = claim
        answer = script(n, is_gold(annotation))
        seconds = answer.pop("seconds")
        if answer["verdict"] == Verdict.ERROR and answer["tau"] > 4:
            answer["tau"] = 1  # a four-step trace: "two off" from step 3 is step 1 or 5
        done.append(hand_in(annotation, user, seconds=seconds, **answer))
    return done


@pytest.fixture
def team(project, lead, make_user):
    from traces.services import membership_add

    people = {name: make_user(name, Role.ANNOTATOR) for name in ("careful", "careless", "spammer", "expert")}
    for user in people.values():
        membership_add(project=project, user=user)
    golds = gold_traces(project, traces_of(project, 8), expert=people["expert"], lead=lead)
    traces_of(project, 30, start=100)
    quality.quality_settings_save(
        project=project,
        user=lead,
        fields={
            "gold_every": 3,
            "min_gold_answers": 3,
            "min_gold_accuracy": 0.8,
            "min_median_seconds": 10,
            "max_no_error_streak": 8,
        },
    )
    work = {
        name: _work(people[name], project, script)
        for name, script in (
            ("careful", _careful),
            ("careless", _careless),
            ("spammer", _spammer),
        )
    }
    return {"people": people, "golds": golds, "work": work}


def test_the_dashboard_flags_the_careless_and_the_spammer_and_not_the_careful(project, lead, team):
    for name, answers in team["work"].items():
        kinds = [a.kind for a in answers]
        assert kinds.count(AnnotationKind.GOLD) == CLAIMS // 3, (name, kinds)  # one in three, deterministically
    report = quality_selectors.quality_dashboard(project, DateRange.from_days(None, None))
    rows = {row["annotator"]: row for row in report["annotators"]}
    flags = {name: {f["flag"] for f in rows[name]["flags"]} for name in ("careful", "careless", "spammer")}
    assert flags["careful"] == set(), rows["careful"]
    assert flags["careless"] == {"low_gold_accuracy"}, rows["careless"]
    assert flags["spammer"] == {"too_fast", "no_error_streak", "low_gold_accuracy"}, rows["spammer"]
    careless_gold = rows["careless"]["gold"]
    assert (careless_gold["right"], careless_gold["n"]) == (2, 4)
    parts = {p["part"]: p for p in careless_gold["parts"]}
    assert (parts["tau_exact"]["right"], parts["tau_within_one"]["right"], parts["verdict"]["right"]) == (2, 2, 4)
    assert careless_gold["interval"][0] < 0.5 < careless_gold["interval"][1]
    assert rows["careful"]["gold"]["share"] == 1.0 and rows["spammer"]["gold"]["share"] == 0.0
    # Production work only: 8 real answers each; the spammer's "no error" rate beside the project's.
    assert rows["spammer"]["answers"] == 8 and rows["spammer"]["no_error_rate"] == 1.0
    assert 0 < report["project_figures"]["no_error_rate"] < 1
    assert rows["spammer"]["streak"]["current_no_error"] == 8 and rows["careful"]["streak"]["longest_no_error"] < 8
    assert report["csv"][0][0] == "annotator" and len(report["csv"]) == 1 + len(report["annotators"])
    # The lead pauses the spammer from there: the hand-out then refuses, saying why.
    client_answer = quality.annotator_pause_set(
        project=project, annotator=team["people"]["spammer"], actor=lead, paused=True, reason="too fast"
    )
    assert client_answer["paused"] is True
    with pytest.raises(quality.QueueClosed) as refused:
        services.lease_next_trace(user=team["people"]["spammer"], project=project)
    assert refused.value.extra["gate"] == "paused" and "too fast" in refused.value.detail


def test_gold_answers_stay_out_of_review_agreement_and_every_bundle(project, lead, engineer, team, tmp_path):
    from annotation.review.selectors import review_queue
    from exports.formats import format_names
    from exports.services import export_to_path

    gold_ids = set(Annotation.objects.exclude(kind=AnnotationKind.PRODUCTION).values_list("pk", flat=True))
    assert len(gold_ids) == 3 * (CLAIMS // 3) and GoldScore.objects.filter(annotation_id__in=gold_ids).count() == len(
        gold_ids
    )
    assert not set(review_queue(lead, project=project).values_list("pk", flat=True)) & gold_ids
    # A lead who accepts every handed-in answer anyway (through the review service): still no gold answer exported.
    for annotation in Annotation.objects.filter(project=project, status=AnnotationStatus.SUBMITTED):
        review_accept(annotation_id=annotation.pk, actor=lead)
    for fmt in format_names():
        job = export_to_path(project=project, user=engineer, fmt=fmt, options=None, out=tmp_path / f"{fmt}.zip")
        with zipfile.ZipFile(tmp_path / f"{fmt}.zip") as archive:
            manifest = json.loads(archive.read("manifest.json"))
        sources = {source["annotation_id"] for source in manifest["sources"]}
        assert sources and not sources & gold_ids, fmt
        assert not {pk for pk, _ in job.sources} & gold_ids
