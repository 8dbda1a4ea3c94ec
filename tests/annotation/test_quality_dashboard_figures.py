"""The quality dashboard's figures against a straightforward computation from the rows themselves: a small world of
bare rows (answers of every status and kind, in and out of the range, corrections equal to the recorded action or
not, traces answered once, twice or more, scored gold answers), each figure counted answer by answer in Python and
compared with what ``quality_dashboard`` reads through its grouped, indexed queries."""

from __future__ import annotations

import random
import statistics
from collections import Counter, defaultdict
from datetime import UTC, date, datetime, timedelta

import pytest

from annotation.agreement import agreement_report
from annotation.dashboards import DONE, DateRange
from annotation.models import (
    SECONDS_BUCKET_STARTS,
    Annotation,
    AnnotationKind,
    AnnotationStatus,
    GoldScore,
    GoldTrace,
    Verdict,
)
from annotation.quality import scoring
from annotation.quality import selectors as quality_selectors
from annotation.quality.rollup import quality_rollup_rebuild, seconds_bucket
from annotation.services import trace_recount_standing_annotations
from annotation.workflow import STANDING
from studio.permissions import Role
from tests.factories import make_trace
from traces.models import Step, Trace

pytestmark = pytest.mark.django_db

FIRST_DAY, LAST_DAY = date(2026, 3, 1), date(2026, 3, 20)
ACTIONS = ["click(start_box='(10,20)')", "type(content='hi')", "scroll(direction='down')", "finished()"]


@pytest.fixture
def world(project, make_user):
    rng = random.Random(11)
    people = [make_user(f"rater{i}", Role.ANNOTATOR) for i in range(4)]
    traces = [make_trace(project, external_id=f"q{i}", through="rows", steps=4, actions=ACTIONS) for i in range(14)]
    statuses = [*[AnnotationStatus.SUBMITTED] * 3, *[AnnotationStatus.ACCEPTED] * 3, AnnotationStatus.REJECTED]
    statuses.append(AnnotationStatus.DRAFT)
    rows = []
    for n, trace in enumerate(traces):
        # Traces answered by one, two, three or four people (agreement reads the first two standing answers).
        for person in rng.sample(people, 1 + n % len(people)):
            verdict = rng.choice([Verdict.ERROR, Verdict.ERROR, Verdict.NO_ERROR, Verdict.UNUSABLE])
            tau = rng.randint(1, 4) if verdict == Verdict.ERROR else None
            corrected = ""
            if verdict == Verdict.ERROR:
                corrected = rng.choice([ACTIONS[tau - 1], "click(start_box='(99,99)')", ""])
            # Days from before the range to after it, the range's own ends included.
            day = FIRST_DAY + timedelta(days=rng.randint(-3, (LAST_DAY - FIRST_DAY).days + 3))
            at = datetime(day.year, day.month, day.day, rng.randint(0, 23), rng.randint(0, 59), tzinfo=UTC)
            rows.append(
                Annotation(
                    trace=trace,
                    project=project,
                    annotator=person,
                    kind=AnnotationKind.GOLD if n % 7 == 0 else AnnotationKind.PRODUCTION,
                    status=rng.choice(statuses),
                    verdict=verdict,
                    tau=tau,
                    error_category="other" if verdict == Verdict.ERROR else "",
                    corrected_action=corrected,
                    time_spent_s=rng.randint(3, 90),
                    submitted_at=at,
                )
            )
    Annotation.objects.bulk_create(rows)
    trace_recount_standing_annotations(traces=Trace.objects.filter(project=project))
    reference = Annotation.objects.filter(kind=AnnotationKind.GOLD).first()
    gold = GoldTrace.objects.create(
        trace_id=reference.trace_id, project=project, reference=reference, reference_version=1
    )
    for answer in Annotation.objects.filter(project=project).exclude(pk=reference.pk)[:24]:
        parts = {f"{part}_ok": rng.choice([True, False, None]) for part in scoring.PARTS}
        GoldScore.objects.create(
            annotation=answer,
            gold=gold if rng.random() < 0.8 else None,
            project=project,
            annotator_id=answer.annotator_id,
            kind=rng.choice([AnnotationKind.GOLD, AnnotationKind.GOLD, AnnotationKind.QUALIFICATION]),
            trace_id_kept=answer.trace_id,
            reference_id_kept=reference.pk,
            reference_version=1,
            correct=all(v is not False for v in parts.values()),
            submitted_at=answer.submitted_at,
            rescored_at=answer.submitted_at if rng.random() < 0.3 else None,
            **parts,
        )
    # Rows written around the services: the dashboard's rollup is counted from them as a repair would.
    quality_rollup_rebuild(project_ids=[project.pk])
    return people


def _assert_median_within_its_buckets(median, times) -> None:
    """The dashboard's median is the exact one below 15 s, and within the buckets of the middle answers above."""
    if not times:
        assert median is None
        return
    ordered = sorted(times)
    low, high = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
    if high < 15:
        assert median == statistics.median(times)
    else:
        starts = SECONDS_BUCKET_STARTS
        assert seconds_bucket(low) <= median <= starts[starts.index(seconds_bucket(high)) + 1]


def _by_hand(project, period) -> dict[int, dict]:
    """Each annotator's figures counted answer by answer, as the dashboard describes them."""
    answers = list(Annotation.objects.filter(project=project).order_by("id"))
    in_range = [a for a in answers if a.submitted_at and period.since <= a.submitted_at < period.until]
    done = [a for a in in_range if a.kind == AnnotationKind.PRODUCTION and a.status in DONE]
    recorded = {(s.trace_id, s.index): s.action_text for s in Step.objects.filter(trace__project=project)}
    out: dict[int, dict] = defaultdict(lambda: {"verdicts": Counter(), "times": [], "corrections": [0, 0]})
    for a in done:
        out[a.annotator_id]["verdicts"][a.verdict] += 1
        out[a.annotator_id]["times"].append(a.time_spent_s)
        if a.status in STANDING and a.verdict == Verdict.ERROR and a.corrected_action:
            out[a.annotator_id]["corrections"][0] += 1
            out[a.annotator_id]["corrections"][1] += a.corrected_action == recorded[(a.trace_id, a.tau)]
    first_two: dict[int, list] = defaultdict(list)
    for a in in_range:
        if a.kind == AnnotationKind.PRODUCTION and a.status in STANDING:
            first_two[a.trace_id].append(a)
    pairs: dict[int, Counter] = defaultdict(Counter)
    for group in first_two.values():
        if len(group) >= 2:
            a, b = group[0], group[1]
            same = (a.verdict, a.tau if a.verdict == Verdict.ERROR else None) == (
                b.verdict,
                b.tau if b.verdict == Verdict.ERROR else None,
            )
            near = same or (a.verdict == b.verdict == Verdict.ERROR and abs(a.tau - b.tau) <= 1)
            for person in (a, b):
                pairs[person.annotator_id].update(pairs=1, exact=same, within_one=near)
    gold: dict[int, Counter] = defaultdict(Counter)
    for score in GoldScore.objects.filter(project=project, kind=AnnotationKind.GOLD):
        if period.since <= score.submitted_at < period.until:
            gold[score.annotator_id].update(n=1, right=score.correct)
            for part in scoring.PARTS:
                value = getattr(score, f"{part}_ok")
                gold[score.annotator_id].update({f"{part}__n": value is not None, f"{part}__right": value is True})
    for annotator_id, counts in pairs.items():
        out[annotator_id]["agreement"] = counts
    for annotator_id, counts in gold.items():
        out[annotator_id]["gold"] = counts
    return out


@pytest.mark.parametrize(
    "days", [(FIRST_DAY, LAST_DAY), (FIRST_DAY + timedelta(days=5), FIRST_DAY + timedelta(days=6))]
)
def test_each_annotators_figures_equal_a_count_of_their_answers(project, world, days):
    period = DateRange.from_days(*days)
    expected = _by_hand(project, period)
    report = quality_selectors.quality_dashboard(project, period)
    rows = {row["annotator_id"]: row for row in report["annotators"]}
    assert set(expected) <= set(rows)
    checked = Counter()
    for annotator_id, row in rows.items():
        want = expected.get(annotator_id, {"verdicts": Counter(), "times": [], "corrections": [0, 0]})
        answers = sum(want["verdicts"].values())
        assert row["answers"] == answers
        assert row["no_error_rate"] == (want["verdicts"][Verdict.NO_ERROR] / answers if answers else None)
        _assert_median_within_its_buckets(row["median_time_s"], want["times"])
        n, identical = want["corrections"]
        assert (row["identical_corrections"]["n"], row["identical_corrections"]["identical"]) == (n, identical)
        pairs = want.get("agreement", Counter())
        assert row["agreement"]["pairs"] == pairs["pairs"]
        if pairs["pairs"]:
            assert row["agreement"]["exact"] == pairs["exact"] / pairs["pairs"]
            assert row["agreement"]["within_one"] == pairs["within_one"] / pairs["pairs"]
        gold = want.get("gold", Counter())
        assert (row["gold"]["n"], row["gold"]["right"]) == (gold["n"], gold["right"])
        for part in row["gold"]["parts"]:
            assert (part["n"], part["right"]) == (gold[f"{part['part']}__n"], gold[f"{part['part']}__right"])
        checked.update(answers=answers > 0, pairs=pairs["pairs"] > 0, identical=identical > 0, gold=gold["n"] > 0)
    if days == (FIRST_DAY, LAST_DAY):
        # The world reaches every figure (a comparison of empty figures would prove nothing).
        assert checked["answers"] >= 3 and checked["pairs"] >= 2 and checked["identical"] >= 1 and checked["gold"] >= 1
    everyone = Counter()
    for want in expected.values():
        everyone.update(want["verdicts"])
    total = sum(everyone.values())
    assert report["project_figures"]["answers"] == total
    assert report["project_figures"]["no_error_rate"] == (everyone[Verdict.NO_ERROR] / total if total else None)


def test_the_agreement_figures_are_those_of_the_agreement_report(project, world):
    """The dashboard's agreement reads two answers per trace; the project's agreement report reads them all and
    pairs the first two: both must count the same pairs for each annotator."""
    period = DateRange.from_days(FIRST_DAY, LAST_DAY)
    per: dict[str, Counter] = defaultdict(Counter)
    for pair in agreement_report(project, since=period.since, until=period.until).pairs:
        for row in (pair.a, pair.b):
            per[row.annotator__username].update(pairs=1, exact=pair.answers_exact, within_one=pair.answers_within_one)
    fast = quality_selectors._agreement_by_annotator(project, period)
    assert per and set(fast) == set(per)
    for name, counts in per.items():
        assert fast[name] == {
            "pairs": counts["pairs"],
            "exact": counts["exact"] / counts["pairs"],
            "within_one": counts["within_one"] / counts["pairs"],
        }
