"""Quality dashboard reads for one project and date range.

The database does the counting (GROUP BY); Python only folds the few grouped rows into figures. The figures
share their scans: one over the range's finished work (throughput and verdicts), one histogram of seconds
spent (exact medians on both databases), one over the standing error answers (categories, τ position and the
model-suggestion match), one over review decisions, plus agreement's pairs. Annotators are grouped by id and
named by one small lookup at the end, so no scan joins the user table. The sections are independent reads, so
they run at once, each on its own connection (see ``_read_at_once``).

The range is half-open [since, until) on the time the figure is about: submission for work done, the review
decision for acceptance rates.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction
from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, When
from django.db.models.functions import TruncDate
from django.utils import timezone

from annotation.agreement import agreement_report
from annotation.models import Annotation, AnnotationStatus, AuditEvent, Verdict
from annotation.workflow import STANDING
from traces.models import Project, TraceSuggestion

# Work handed in (throughput, time): a rejected annotation was still done. Categories and positions count only
# the answers that stand (workflow.STANDING).
DONE = (AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED)
POSITION_BUCKETS = 10
# Reads in flight at once: enough to keep the database busy while Python folds results; more only made them
# queue for the same cores (bench/dashboard.py).
READS_AT_ONCE = 3
DEFAULT_RANGE_DAYS = 30
EARLIEST_DAY = date.min + timedelta(days=DEFAULT_RANGE_DAYS)
LATEST_DAY = date.max - timedelta(days=1)


@dataclass(frozen=True)
class DateRange:
    since: datetime
    until: datetime
    first_day: date
    last_day: date

    @classmethod
    def from_days(cls, first_day: date | None, last_day: date | None) -> DateRange:
        """Whole days in UTC, both ends included; defaults to the last 30 days up to today."""
        for day in (first_day, last_day):
            # The half-open range needs the day after the last one, and the default range the 30 days before it.
            if day is not None and not EARLIEST_DAY <= day <= LATEST_DAY:
                raise ValueError(f"{day} is outside the days a dashboard covers ({EARLIEST_DAY} to {LATEST_DAY})")
        last_day = last_day or timezone.now().date()
        first_day = first_day or last_day - timedelta(days=DEFAULT_RANGE_DAYS - 1)
        if first_day > last_day:
            raise ValueError(f"the range starts ({first_day}) after it ends ({last_day})")
        tz = timezone.get_current_timezone()
        since = datetime.combine(first_day, time.min, tzinfo=tz)
        until = datetime.combine(last_day + timedelta(days=1), time.min, tzinfo=tz)
        return cls(since=since, until=until, first_day=first_day, last_day=last_day)

    @classmethod
    def from_query(cls, first: str | None, last: str | None) -> DateRange:
        """The range a page or API query asks for (``from`` / ``to`` as 2025-01-31, either may be left out);
        ValueError names the bad value. The dashboard page and its API read dates only through here."""
        return cls.from_days(_query_day(first, "from"), _query_day(last, "to"))


def _query_day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name} must be a date like 2025-01-31, not {value!r}") from None


def _done(project: Project, period: DateRange, statuses=DONE):
    return Annotation.objects.filter(
        project=project, status__in=statuses, submitted_at__gte=period.since, submitted_at__lt=period.until
    )


def work_done(project: Project, period: DateRange) -> tuple[list[dict], dict]:
    """Traces done per annotator per day, and the range's verdict counts, from one grouped scan."""
    rows = (
        _done(project, period)
        .annotate(day=TruncDate("submitted_at"))
        .values_list("day", "annotator_id", "verdict")
        .annotate(n=Count("id"))
        .order_by()
    )
    per_day: Counter = Counter()
    verdicts: Counter = Counter()
    for day, annotator_id, verdict, n in rows:
        per_day[(day, annotator_id)] += n
        verdicts[verdict] += n
    done = [
        {"day": day.isoformat(), "annotator_id": annotator_id, "done": n} for (day, annotator_id), n in per_day.items()
    ]
    counts = {
        "done": sum(verdicts.values()),
        **{v: verdicts.get(v, 0) for v in (Verdict.ERROR, Verdict.NO_ERROR, Verdict.UNUSABLE)},
    }
    return done, counts


def median_time_per_trace(project: Project, period: DateRange) -> dict:
    """Median seconds spent per finished annotation, overall and per annotator id: exact, from a histogram of
    whole seconds (the middle value, or the mean of the middle two, as PERCENTILE_CONT(0.5) gives)."""
    rows = _done(project, period).values_list("annotator_id", "time_spent_s").annotate(n=Count("id")).order_by()
    overall: Counter = Counter()
    per: dict[int, Counter] = defaultdict(Counter)
    for annotator_id, seconds, n in rows:
        overall[seconds] += n
        per[annotator_id][seconds] += n
    return {
        "overall_s": _median_of_counts(overall),
        "per_annotator_s": {k: _median_of_counts(v) for k, v in per.items()},
    }


def _median_of_counts(histogram: Counter) -> float | None:
    total = sum(histogram.values())
    if not total:
        return None
    wanted = {(total - 1) // 2, total // 2}  # 0-based positions of the middle one or two
    picked, seen = [], 0
    for value in sorted(histogram):
        count = histogram[value]
        picked.extend(value for position in wanted if seen <= position < seen + count)
        seen += count
        if seen > max(wanted):
            break
    return sum(picked) / len(picked)


def review_rates(project: Project, period: DateRange) -> dict:
    """Decisions taken in the range, from the audit trail (a rejected-then-accepted annotation counts both)."""
    rows = (
        AuditEvent.objects.filter(
            project=project,
            kind="transition",
            from_status=AnnotationStatus.SUBMITTED,
            to_status__in=(AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED),
            at__gte=period.since,
            at__lt=period.until,
        )
        .values_list("annotator_id", "to_status")
        .annotate(n=Count("id"))
        .order_by()
    )
    per: dict[int, Counter] = defaultdict(Counter)
    for annotator_id, to_status, n in rows:
        per[annotator_id][to_status] += n
    accepted = sum(c[AnnotationStatus.ACCEPTED] for c in per.values())
    rejected = sum(c[AnnotationStatus.REJECTED] for c in per.values())
    return {
        **_rates(accepted, rejected),
        "per_annotator": [
            {"annotator_id": k, **_rates(c[AnnotationStatus.ACCEPTED], c[AnnotationStatus.REJECTED])}
            for k, c in per.items()
        ],
    }


def _rates(accepted: int, rejected: int) -> dict:
    total = accepted + rejected
    return {
        "accepted": accepted,
        "rejected": rejected,
        "acceptance_rate": accepted / total if total else None,
        "rejection_rate": rejected / total if total else None,
    }


def standing_errors(project: Project, period: DateRange) -> dict:
    """Over the standing error answers (submitted or accepted) of the range, from one grouped scan: the error
    categories; where τ falls within its trace, as τ/n in tenths (bucket b holds b/10 < τ/n ≤ (b+1)/10); and how
    often the model's suggested first error step equals the human τ (None when no trace of the project has a
    pre-scoring suggestion)."""
    errors = _done(project, period, STANDING).filter(verdict=Verdict.ERROR)
    scored = TraceSuggestion.objects.filter(trace__project=project).exists()
    in_trace = Q(tau__isnull=False, tau__gte=1, trace__step_count__gte=F("tau"))
    # integer division on both databases
    errors = errors.annotate(
        bucket=Case(
            When(in_trace, then=(F("tau") * POSITION_BUCKETS - 1) / F("trace__step_count")),
            default=None,
            output_field=IntegerField(),
        )
    )
    fields = ["error_category", "bucket"]
    if scored:
        suggestions = TraceSuggestion.objects.filter(trace_id=OuterRef("trace_id"))
        errors = errors.annotate(
            has_suggestion=Exists(suggestions), suggestion_hit=Exists(suggestions.filter(suggested_tau=OuterRef("tau")))
        )
        fields += ["has_suggestion", "suggestion_hit"]
    categories: Counter = Counter()
    buckets: Counter = Counter()
    compared = matched = 0
    for row in errors.values_list(*fields).annotate(n=Count("id")).order_by():
        category, bucket, n = row[0], row[1], row[-1]
        categories[category or "(none)"] += n
        if bucket is not None:
            buckets[bucket] += n
        if scored and row[2]:
            compared += n
            matched += n if row[3] else 0
    step = 100 // POSITION_BUCKETS
    return {
        "error_categories": [
            {"category": c, "count": n} for c, n in sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "first_error_position": [
            {"bucket": f"{b * step}–{(b + 1) * step}%", "count": buckets.get(b, 0)} for b in range(POSITION_BUCKETS)
        ],
        "suggestion_match": {"compared": compared, "matched": matched, "rate": matched / compared if compared else None}
        if scored
        else None,
    }


def live_counters(project: Project) -> dict:
    """Counts of annotations by status right now (what the live counters show)."""
    rows = dict(Annotation.objects.filter(project=project).values_list("status").annotate(n=Count("id")).order_by())
    return {status: rows.get(status, 0) for status in AnnotationStatus.values}


def _name_annotators(ids) -> dict[int, str]:
    return dict(get_user_model().objects.filter(pk__in=set(ids)).values_list("pk", "username"))


def _read_at_once(reads: dict) -> dict:
    """Run independent reads concurrently, each on its own database connection, so the database's cores
    share the work. Inside a transaction the reads run in turn on the caller's connection instead: another
    connection would not see what that transaction has written."""
    if connection.in_atomic_block:
        return {name: read() for name, read in reads.items()}

    def run(read):
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        # The reads already share the cores between them; PostgreSQL's parallel workers on top
                        # of that would oversubscribe them (measured: a slower dashboard, not a faster one).
                        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
                return read()
        finally:
            connections.close_all()  # this thread's connections (back to the pool where there is one)

    with ThreadPoolExecutor(max_workers=READS_AT_ONCE, thread_name_prefix="dashboard-read") as pool:
        futures = {name: pool.submit(run, read) for name, read in reads.items()}
        return {name: future.result() for name, future in futures.items()}


def project_dashboard(project: Project, period: DateRange) -> dict:
    figures = _read_at_once(
        {
            "counters": lambda: live_counters(project),
            "work": lambda: work_done(project, period),
            "median_time": lambda: median_time_per_trace(project, period),
            "review": lambda: review_rates(project, period),
            "agreement": lambda: agreement_report(project, since=period.since, until=period.until).as_dict(),
            "standing": lambda: standing_errors(project, period),
        }
    )
    done_per_day, verdicts = figures["work"]
    median_time, review = figures["median_time"], figures["review"]
    names = _name_annotators(
        [
            *(r["annotator_id"] for r in done_per_day),
            *median_time["per_annotator_s"],
            *(r["annotator_id"] for r in review["per_annotator"]),
        ]
    )
    for row in (*done_per_day, *review["per_annotator"]):
        row["annotator"] = names[row.pop("annotator_id")]
    done_per_day.sort(key=lambda r: (r["day"], r["annotator"]))
    review["per_annotator"].sort(key=lambda r: r["annotator"])
    median_time["per_annotator_s"] = dict(sorted((names[k], v) for k, v in median_time["per_annotator_s"].items()))
    return {
        "project": {"id": project.pk, "name": project.name},
        "range": {"from": period.first_day.isoformat(), "to": period.last_day.isoformat()},
        "counters": figures["counters"],
        "verdicts": verdicts,
        "done_per_day": done_per_day,
        "median_time": median_time,
        "review": review,
        "agreement": figures["agreement"],
        **figures["standing"],
    }
