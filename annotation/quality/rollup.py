"""The quality dashboard's rollup: per project, annotator and day the counts of their handed-in production answers
(``AnswerRollup``, each answer's share kept as its ``AnswerRollupEntry``), and per double-annotated trace the pair
agreement compares (``AgreementPair``).

Writes: ``answer_rollup_update`` in the transaction of every status change (``annotation_transition``: submit,
resubmit, accept, reject, reopen) and of every lead's edit of an answer; a draft save never calls it, so an answer
counts as it was at its last status change (a rejected answer its annotator is reworking: as it was handed in, until
it is handed in again). ``trace_rollup_forget`` takes a trace's answers off before the trace is deleted (a project's
rows go with the project). ``quality_rollup_rebuild`` recounts from the answers themselves, set-based
(``manage.py quality_rollup_rebuild``; the migration that made the tables ran it once).

Reads (for ``quality.selectors.quality_dashboard``): ``rollup_figures`` and ``agreement_pairs``; ``median_of_buckets``
is the median of a seconds histogram (exact below 15 s, interpolated within its bucket above)."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict
from typing import Any

from django.db import connection, transaction
from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, F, OuterRef, Q, Sum, Window
from django.db.models.functions import RowNumber, TruncDate
from django.utils import timezone

from annotation.models import (
    DONE_STATUSES,
    SECONDS_BUCKET_STARTS,
    AgreementPair,
    Annotation,
    AnnotationKind,
    AnswerRollup,
    AnswerRollupEntry,
    GoldRollup,
    GoldScore,
    Verdict,
    seconds_bucket_field,
)
from annotation.quality.scoring import PARTS
from annotation.workflow import STANDING
from traces.models import Step, Trace

VERDICT_COLUMNS: dict[str, str] = {Verdict.ERROR: "error", Verdict.NO_ERROR: "no_error", Verdict.UNUSABLE: "unusable"}
COUNT_COLUMNS = ("answers", "error", "no_error", "unusable", "corrections", "identical_corrections")
SECONDS_COLUMNS = tuple(seconds_bucket_field(start) for start in SECONDS_BUCKET_STARTS)
ENTRY_FIGURES = ("day", "verdict", "seconds", "correction", "identical_correction")
PAIR_BATCH = 5_000
# Each bucket's width in seconds (0: the last, open-ended).
BUCKET_WIDTHS = {
    start: (end - start if end is not None else 0)
    for start, end in zip(SECONDS_BUCKET_STARTS, [*SECONDS_BUCKET_STARTS[1:], None], strict=True)
}


def seconds_bucket(seconds: int) -> int:
    """Where the bucket holding ``seconds`` starts."""
    return SECONDS_BUCKET_STARTS[bisect_right(SECONDS_BUCKET_STARTS, max(0, seconds)) - 1]


def answers_agree(verdict_a: str, tau_a: int | None, verdict_b: str, tau_b: int | None) -> tuple[bool, bool]:
    """(exact, within one step): two answers as agreement compares them (the verdict, and τ of a first error)."""
    a = ("error", tau_a) if verdict_a == Verdict.ERROR else (verdict_a or "undecided", None)
    b = ("error", tau_b) if verdict_b == Verdict.ERROR else (verdict_b or "undecided", None)
    exact = a == b
    within = exact or (a[0] == b[0] == "error" and a[1] is not None and b[1] is not None and abs(a[1] - b[1]) <= 1)
    return exact, within


# --- Writes --------------------------------------------------------------------------------------------------------


def _entry_of(annotation: Annotation) -> AnswerRollupEntry | None:
    """What ``annotation`` adds to the rollup as it is now (None: it is no work done: a draft, not production)."""
    if (
        annotation.kind != AnnotationKind.PRODUCTION
        or annotation.status not in DONE_STATUSES
        or annotation.submitted_at is None
    ):
        return None
    correction = (
        annotation.status in STANDING and annotation.verdict == Verdict.ERROR and annotation.corrected_action != ""
    )
    identical = (
        correction
        and annotation.tau is not None
        and Step.objects.filter(
            trace_id=annotation.trace_id, index=annotation.tau, action_text=annotation.corrected_action
        ).exists()
    )
    return AnswerRollupEntry(
        annotation_id=annotation.pk,
        project_id=annotation.project_id,
        annotator_id=annotation.annotator_id,
        day=timezone.localdate(annotation.submitted_at),
        verdict=annotation.verdict,
        seconds=annotation.time_spent_s,
        correction=correction,
        identical_correction=identical,
    )


def _entry_counts(entry: AnswerRollupEntry) -> Counter:
    counts = Counter({"answers": 1, seconds_bucket_field(seconds_bucket(entry.seconds)): 1})
    if entry.verdict in VERDICT_COLUMNS:
        counts[VERDICT_COLUMNS[entry.verdict]] += 1
    counts["corrections"] += entry.correction
    counts["identical_corrections"] += entry.identical_correction
    return counts


def _rollup_add(
    *,
    project_id: int,
    annotator_id: int,
    day,
    counts: Counter,
    sign: int,
    model: Any = AnswerRollup,
) -> None:
    """Add (``sign`` 1) or take off (-1) ``counts`` on one day's row of ``model``, made when missing: each column
    moves in the database (``F``), so two transactions on one row never lose each other's counts."""
    moves = {name: F(name) + sign * n for name, n in counts.items() if n}
    if not moves:
        return
    row = model.objects.filter(project_id=project_id, annotator_id=annotator_id, day=day)
    if not row.update(**moves):
        model.objects.bulk_create(
            [model(project_id=project_id, annotator_id=annotator_id, day=day)], ignore_conflicts=True
        )
        row.update(**moves)


def answer_rollup_update(*, annotation: Annotation) -> None:
    """Bring the rollup in line with ``annotation`` as it is now (its status changed, or a lead edited it; the
    caller holds its row lock and a transaction): its old share taken off, its new one added, and its trace's
    agreement pair found again. Gold and qualification answers are no work and count nowhere here."""
    if annotation.kind != AnnotationKind.PRODUCTION:
        return
    old = AnswerRollupEntry.objects.filter(annotation_id=annotation.pk).first()
    new = _entry_of(annotation)
    unchanged = (old is None and new is None) or (
        old is not None and new is not None and all(getattr(old, f) == getattr(new, f) for f in ENTRY_FIGURES)
    )
    if not unchanged:
        for entry, sign in ((old, -1), (new, 1)):
            if entry is not None:
                _rollup_add(
                    project_id=entry.project_id,
                    annotator_id=entry.annotator_id,
                    day=entry.day,
                    counts=_entry_counts(entry),
                    sign=sign,
                )
        if new is not None:
            new.save()
        elif old is not None:
            old.delete()
    agreement_pair_update(trace_id=annotation.trace_id, project_id=annotation.project_id)


def agreement_pair_update(*, trace_id: int, project_id: int) -> None:
    """Find ``trace_id``'s first two standing production answers again and keep them as its pair (none: no pair).
    The trace's row is locked first, so two answers handed in on one trace at once find the pair in turn."""
    list(Trace.objects.select_for_update().filter(pk=trace_id).values_list("pk"))
    first_two = list(
        Annotation.objects.filter(trace_id=trace_id, kind=AnnotationKind.PRODUCTION, status__in=STANDING)
        .order_by("id")
        .values_list("pk", "annotator_id", "verdict", "tau", "submitted_at")[:2]
    )
    if len(first_two) < 2:
        AgreementPair.objects.filter(trace_id=trace_id).delete()
        return
    (a_id, a_who, a_verdict, a_tau, a_at), (b_id, b_who, b_verdict, b_tau, b_at) = first_two
    exact, within = answers_agree(a_verdict, a_tau, b_verdict, b_tau)
    values = {
        "project_id": project_id,
        "first_id": a_id,
        "second_id": b_id,
        "first_annotator_id": a_who,
        "second_annotator_id": b_who,
        "first_submitted_at": a_at,
        "second_submitted_at": b_at,
        "exact": exact,
        "within_one": within,
    }
    if not AgreementPair.objects.filter(trace_id=trace_id).update(**values):
        AgreementPair.objects.create(trace_id=trace_id, **values)


def gold_score_counts(score: GoldScore) -> Counter:
    """What one score adds to its day's ``GoldRollup`` (nothing for a qualification's score)."""
    if score.kind != AnnotationKind.GOLD:
        return Counter()
    counts = Counter(
        n=1,
        right=int(bool(score.correct)),
        removed=int(score.gold_id is None or score.gold_removed_at is not None),
        rescored=int(score.rescored_at is not None),
    )
    for part in PARTS:
        value = getattr(score, f"{part}_ok")
        counts[f"{part}_n"] += value is not None
        counts[f"{part}_right"] += value is True
    return counts


def gold_score_changed(*, before: GoldScore | None, after: GoldScore | None) -> None:
    """Move the gold rollup from ``before`` (the score as it was: a copy taken before the change; None when new)
    to ``after`` (as it is now), in the caller's transaction: scoring, re-scoring, a removed gold trace."""
    for score, sign in ((before, -1), (after, 1)):
        if score is not None:
            _rollup_add(
                project_id=score.project_id,
                annotator_id=score.annotator_id,
                day=timezone.localdate(score.submitted_at),
                counts=gold_score_counts(score),
                sign=sign,
                model=GoldRollup,
            )


def gold_scores_removed(*, scores) -> None:
    """Count ``scores`` (a queryset, about to be marked removed, none of them yet) as removed in the gold rollup:
    one move per annotator and day."""
    grouped = (
        scores.filter(kind=AnnotationKind.GOLD, gold_removed_at__isnull=True, gold__isnull=False)
        .values_list("project_id", "annotator_id", TruncDate("submitted_at"))
        .annotate(n=Count("*"))
        .order_by()
    )
    for project_id, annotator_id, day, n in grouped:
        _rollup_add(
            project_id=project_id,
            annotator_id=annotator_id,
            day=day,
            counts=Counter(removed=n),
            sign=1,
            model=GoldRollup,
        )


def trace_rollup_forget(*, trace_id: int) -> None:
    """Take a trace's answers off the rollup (before the trace and its answers are deleted)."""
    per_day: dict[tuple, Counter] = defaultdict(Counter)
    entries = AnswerRollupEntry.objects.filter(annotation__trace_id=trace_id)
    for entry in entries:
        per_day[(entry.project_id, entry.annotator_id, entry.day)].update(_entry_counts(entry))
    for (project_id, annotator_id, day), counts in per_day.items():
        _rollup_add(project_id=project_id, annotator_id=annotator_id, day=day, counts=counts, sign=-1)
    entries.delete()
    AgreementPair.objects.filter(trace_id=trace_id).delete()


def _insert_select(table: str, columns: list[str], queryset) -> int:
    """INSERT the rows ``queryset`` selects into ``table`` in one statement (the ORM compiles the SELECT)."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        names = ", ".join(connection.ops.quote_name(column) for column in columns)
        cursor.execute(f"INSERT INTO {table} ({names}) {sql}", params)  # noqa: S608 (names from the models)
        return cursor.rowcount


@transaction.atomic
def quality_rollup_rebuild(*, project_ids: list[int] | None = None) -> dict:
    """Recount the rollup of ``project_ids`` (all projects: None) from their answers, set-based: each done
    production answer's entry as it is now, each day's counts from the entries, each trace's pair. Returns how
    many of each were made."""
    scope = {} if project_ids is None else {"project_id__in": list(project_ids)}
    for model in (AnswerRollupEntry, AnswerRollup, AgreementPair, GoldRollup):
        model.objects.filter(**scope).delete()
    standing_correction = Q(status__in=STANDING, verdict=Verdict.ERROR) & ~Q(corrected_action="")
    recorded = Step.objects.filter(
        trace_id=OuterRef("trace_id"), index=OuterRef("tau"), action_text=OuterRef("corrected_action")
    )
    done = (
        Annotation.objects.filter(
            kind=AnnotationKind.PRODUCTION, status__in=DONE_STATUSES, submitted_at__isnull=False, **scope
        )
        .annotate(
            rollup_day=TruncDate("submitted_at"),
            rollup_correction=ExpressionWrapper(standing_correction, output_field=BooleanField()),
            rollup_identical=ExpressionWrapper(standing_correction & Exists(recorded), output_field=BooleanField()),
        )
        .values_list(
            "pk", "project_id", "annotator_id", "rollup_day", "verdict", "time_spent_s", "rollup_correction",
            "rollup_identical",
        )
        .order_by()
    )  # fmt: skip
    entries = _insert_select(
        AnswerRollupEntry._meta.db_table,
        [
            "annotation_id", "project_id", "annotator_id", "day", "verdict", "seconds", "correction",
            "identical_correction",
        ],
        done,
    )  # fmt: skip
    sums = {
        "answers": Count("pk"),
        **{column: Count("pk", filter=Q(verdict=verdict)) for verdict, column in VERDICT_COLUMNS.items()},
        "corrections": Count("pk", filter=Q(correction=True)),
        "identical_corrections": Count("pk", filter=Q(identical_correction=True)),
    }
    for start, end in zip(SECONDS_BUCKET_STARTS, [*SECONDS_BUCKET_STARTS[1:], None], strict=True):
        bounds = Q(seconds__lt=end) if end is not None else Q()
        sums[seconds_bucket_field(start)] = Count("pk", filter=bounds & Q(seconds__gte=start) if start else bounds)
    days = (
        AnswerRollupEntry.objects.filter(**scope)
        .values("project_id", "annotator_id", "day")
        .annotate(**sums)
        .values_list("project_id", "annotator_id", "day", *sums)
        .order_by()
    )
    rollups = _insert_select(AnswerRollup._meta.db_table, ["project_id", "annotator_id", "day", *sums], days)
    firsts = (
        Annotation.objects.filter(
            kind=AnnotationKind.PRODUCTION, status__in=STANDING, trace__standing_annotations__gte=2, **scope
        )
        .annotate(place=Window(RowNumber(), partition_by=F("trace_id"), order_by=F("id").asc()))
        .filter(place__lte=2)
        .order_by("trace_id", "id")
        .values_list("trace_id", "project_id", "pk", "annotator_id", "verdict", "tau", "submitted_at")
    )
    pairs, previous = 0, None
    batch: list[AgreementPair] = []
    for row in firsts.iterator(chunk_size=PAIR_BATCH):
        if previous is not None and previous[0] == row[0]:
            exact, within = answers_agree(previous[4], previous[5], row[4], row[5])
            batch.append(
                AgreementPair(
                    trace_id=row[0],
                    project_id=row[1],
                    first_id=previous[2],
                    second_id=row[2],
                    first_annotator_id=previous[3],
                    second_annotator_id=row[3],
                    first_submitted_at=previous[6],
                    second_submitted_at=row[6],
                    exact=exact,
                    within_one=within,
                )
            )
            previous = None
        else:
            previous = row
        if len(batch) >= PAIR_BATCH:
            pairs += len(AgreementPair.objects.bulk_create(batch))
            batch = []
    pairs += len(AgreementPair.objects.bulk_create(batch))
    gold_sums = {
        "n": Count("pk"),
        "right": Count("pk", filter=Q(correct=True)),
        "removed": Count("pk", filter=Q(gold__isnull=True) | Q(gold_removed_at__isnull=False)),
        "rescored": Count("pk", filter=Q(rescored_at__isnull=False)),
    }
    for part in PARTS:
        gold_sums[f"{part}_n"] = Count("pk", filter=Q(**{f"{part}_ok__isnull": False}))
        gold_sums[f"{part}_right"] = Count("pk", filter=Q(**{f"{part}_ok": True}))
    gold_days = (
        GoldScore.objects.filter(kind=AnnotationKind.GOLD, **scope)
        .values("project_id", "annotator_id", scored_day=TruncDate("submitted_at"))
        .annotate(**gold_sums)
        .values_list("project_id", "annotator_id", "scored_day", *gold_sums)
        .order_by()
    )
    golds = _insert_select(GoldRollup._meta.db_table, ["project_id", "annotator_id", "day", *gold_sums], gold_days)
    return {"entries": entries, "rollups": rollups, "pairs": pairs, "gold_days": golds}


# --- Reads ---------------------------------------------------------------------------------------------------------


def rollup_figures(project, period) -> dict[int, dict]:
    """Per annotator id, their rollup over ``period``'s days summed: the counts (``COUNT_COLUMNS``) and ``seconds``,
    the histogram (bucket start -> answers). One grouped read of a row per annotator and day."""
    rows = (
        AnswerRollup.objects.filter(project_id=project.pk, day__gte=period.first_day, day__lte=period.last_day)
        .values("annotator_id")
        .annotate(**{column: Sum(column) for column in (*COUNT_COLUMNS, *SECONDS_COLUMNS)})
        .order_by()
    )
    out = {}
    for grouped in rows:
        row: dict = dict(grouped)
        out[row["annotator_id"]] = {
            **{column: row[column] or 0 for column in COUNT_COLUMNS},
            "seconds": {
                start: row[column]
                for start, column in zip(SECONDS_BUCKET_STARTS, SECONDS_COLUMNS, strict=True)
                if row[column]
            },
        }
    return out


def gold_rollup_figures(project, *, first_day=None, last_day=None) -> dict[int, dict]:
    """Per annotator id, their gold rollup over the days (all when not given) summed, keyed as
    ``quality.selectors.gold_accuracy_by_annotator`` reports: ``n``, ``right``, ``<part>__n``, ``<part>__right``,
    ``removed``, ``rescored``."""
    rows = GoldRollup.objects.filter(project_id=project.pk)
    if first_day is not None:
        rows = rows.filter(day__gte=first_day)
    if last_day is not None:
        rows = rows.filter(day__lte=last_day)
    columns = ["n", "right", "removed", "rescored", *(f"{part}_{end}" for part in PARTS for end in ("n", "right"))]
    out = {}
    for grouped in rows.values("annotator_id").annotate(**{c: Sum(c) for c in columns}).order_by():
        row: dict = dict(grouped)
        if not row["n"]:
            continue
        figures = {"n": row["n"], "right": row["right"], "removed": row["removed"], "rescored": row["rescored"]}
        for part in PARTS:
            figures[f"{part}__n"], figures[f"{part}__right"] = row[f"{part}_n"], row[f"{part}_right"]
        out[row["annotator_id"]] = figures
    return out


def median_of_buckets(histogram: dict[int, int]) -> float | None:
    """The median of a seconds histogram (bucket start -> answers): exact where the middle answer's bucket is one
    second wide (below 15 s), else placed within its bucket as if its answers were spread evenly over it (the last
    bucket, open-ended, answers its start)."""
    total = sum(histogram.values())
    if not total:
        return None

    def at(position: int) -> float:
        seen = 0
        for start in sorted(histogram):
            count = histogram[start]
            if position < seen + count:
                width = BUCKET_WIDTHS[start]
                return start if width <= 1 else start + width * (position - seen + 0.5) / count
            seen += count
        raise AssertionError("position beyond the histogram")

    middle = {(total - 1) // 2, total // 2}
    return round(sum(at(p) for p in middle) / len(middle), 1)
