"""The quality dashboard's rollup, kept in the transaction of each status change and lead's edit, equals a recount
from the answers (``quality_rollup_rebuild``) after a scripted mix of hand-ins, reviews, a rework of a rejected
answer, a lead's edit, gold answers scored, re-scored and their gold removed, and a trace deleted; a draft save
leaves it alone."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation import services
from annotation.models import (
    AgreementPair,
    Annotation,
    AnnotationStatus,
    AnswerRollup,
    AnswerRollupEntry,
    GoldRollup,
    Verdict,
)
from annotation.quality import services as quality
from annotation.quality.rollup import median_of_buckets, quality_rollup_rebuild
from annotation.review.services import review_accept, review_edit_and_accept, review_reject
from annotation.services import annotation_transition
from studio.permissions import Role
from tests.fixtures_quality import error_fields, gold_traces, hand_in, reference_of, traces_of
from traces.services import trace_delete


def _kept(project) -> dict:
    """The rollup as it stands: each day's non-zero counts, each answer's entry, each trace's pair."""
    days = {}
    for row in AnswerRollup.objects.filter(project=project).values():
        key = (row.pop("annotator_id"), row.pop("day"))
        row.pop("id"), row.pop("project_id")
        counts = {name: n for name, n in row.items() if n}
        if counts:
            days[key] = counts
    entries = {row.pop("annotation_id"): row for row in AnswerRollupEntry.objects.filter(project=project).values()}
    pairs = {row.pop("trace_id"): row for row in AgreementPair.objects.filter(project=project).values()}
    gold_days = {}
    for row in GoldRollup.objects.filter(project=project).values():
        key = (row.pop("annotator_id"), row.pop("day"))
        row.pop("id"), row.pop("project_id")
        if any(row.values()):
            gold_days[key] = row
    return {"days": days, "entries": entries, "pairs": pairs, "gold_days": gold_days}


def _new_answer(user, project, trace) -> Annotation:
    return Annotation.objects.create(trace=trace, project=project, annotator=user)


@pytest.mark.django_db
def test_the_kept_rollup_equals_a_recount_after_a_mix_of_changes(project, lead, annotator, make_user):
    others = [make_user(f"rater{i}", Role.ANNOTATOR) for i in range(2)]
    people = [annotator, *others]
    for person in others:
        project.memberships.create(user=person)
    traces = traces_of(project, 4)
    answers = {}
    for n, trace in enumerate(traces):
        for k, person in enumerate(people):
            fields = error_fields(2 + (n + k) % 2) if (n + k) % 3 else {"verdict": Verdict.NO_ERROR}
            answers[(n, k)] = hand_in(_new_answer(person, project, trace), person, seconds=5 + 40 * k + n, **fields)
    review_accept(annotation_id=answers[(0, 0)].pk, actor=lead)
    rejected = review_reject(annotation_id=answers[(0, 1)].pk, actor=lead, comment="look again")
    before = _kept(project)
    # The annotator reworks the rejected answer: draft saves leave the rollup as it was handed in.
    saved = services.annotation_save_draft(
        annotation_id=rejected.pk, user=people[1], base_version=rejected.version, fields={"verdict": Verdict.UNUSABLE}
    )
    assert _kept(project) == before
    hand_in(saved, people[1], seconds=700, **error_fields(3))
    # A lead's edit and accept, a reopen of an accepted answer, a rejection left standing.
    review_edit_and_accept(annotation_id=answers[(1, 2)].pk, actor=lead, edits={"verdict": Verdict.NO_ERROR})
    with transaction.atomic():
        reopened = Annotation.objects.select_for_update().get(pk=answers[(0, 0)].pk)
        annotation_transition(annotation=reopened, to=AnnotationStatus.REJECTED, actor=lead, comment="again")
    review_reject(annotation_id=answers[(2, 0)].pk, actor=lead, comment="no")
    # Gold answers are scored and re-scored, and count nowhere in the rollup.
    expert = make_user("expert", Role.ANNOTATOR)
    project.memberships.create(user=expert)
    (gold,) = gold_traces(project, traces_of(project, 1, start=10), expert=expert, lead=lead)
    quality.quality_settings_save(project=project, user=lead, fields={"gold_every": 1})
    gold_answer, _ = services.lease_next_trace(user=others[0], project=project)
    assert gold_answer.trace_id == gold.trace_id
    hand_in(gold_answer, others[0], **error_fields(4))
    quality.gold_mark_answer(
        annotation_id=reference_of(gold.trace, annotator=others[1], lead=lead, tau=4).pk, user=lead
    )
    (second_gold,) = gold_traces(project, traces_of(project, 1, start=11), expert=expert, lead=lead)
    another, _ = services.lease_next_trace(user=annotator, project=project)
    assert another.trace_id in (gold.trace_id, second_gold.trace_id)
    hand_in(another, annotator, **error_fields(3))
    assert GoldRollup.objects.filter(project=project, n__gt=0).exists()
    quality.gold_remove(gold=second_gold, user=lead)
    # A trace deleted takes its answers off.
    trace_delete(trace=traces[3], user=lead, reason="duplicate")
    kept = _kept(project)
    assert kept["days"] and kept["gold_days"] and len(kept["pairs"]) == 4  # three traces, the gold trace's references
    quality_rollup_rebuild(project_ids=[project.pk])
    assert _kept(project) == kept


def test_the_median_of_buckets_is_exact_below_fifteen_seconds_and_within_its_bucket_above():
    assert median_of_buckets({}) is None
    assert median_of_buckets({4: 2, 9: 1}) == 4
    assert median_of_buckets({4: 1, 9: 1}) == 6.5
    # Three answers in the bucket of 40 to 50 s: the middle one placed in the bucket's middle.
    assert median_of_buckets({40: 3}) == 45
    assert 40 <= median_of_buckets({5: 1, 40: 2, 600: 1}) < 50
