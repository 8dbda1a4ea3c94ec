"""Quality dashboard reads for one project and date range. Every figure is aggregated by the database
(GROUP BY, PERCENTILE_CONT on PostgreSQL, a window function on SQLite); Python only shapes the few result rows.

The range is half-open [since, until) on the time the figure is about: submission for work done, the review
decision for acceptance rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.apps import apps
from django.db import connection
from django.db.models import Aggregate, Count, F, FloatField, Q, Value, Window
from django.db.models.functions import RowNumber, TruncDate
from django.utils import timezone

from annotation.agreement import agreement_report
from annotation.models import Annotation, AnnotationStatus, AuditEvent, Verdict
from traces.models import Project

# Work handed in (throughput, time): a rejected annotation was still done. Answers that stand (categories,
# positions): submitted or accepted only.
DONE = (AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED)
STANDING = (AnnotationStatus.SUBMITTED, AnnotationStatus.ACCEPTED)
POSITION_BUCKETS = 10
DEFAULT_RANGE_DAYS = 30


class Median(Aggregate):
    """PostgreSQL's ordered-set median (continuous percentile 0.5)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


@dataclass(frozen=True)
class DateRange:
    since: datetime
    until: datetime
    first_day: date
    last_day: date

    @classmethod
    def from_days(cls, first_day: date | None, last_day: date | None) -> "DateRange":
        """Whole days in UTC, both ends included; defaults to the last 30 days up to today."""
        last_day = last_day or timezone.now().date()
        first_day = first_day or last_day - timedelta(days=DEFAULT_RANGE_DAYS - 1)
        if first_day > last_day:
            raise ValueError(f"the range starts ({first_day}) after it ends ({last_day})")
        tz = timezone.get_current_timezone()
        since = datetime.combine(first_day, time.min, tzinfo=tz)
        until = datetime.combine(last_day + timedelta(days=1), time.min, tzinfo=tz)
        return cls(since=since, until=until, first_day=first_day, last_day=last_day)


def _done(project: Project, period: DateRange, statuses=DONE):
    return Annotation.objects.filter(
        trace__project=project, status__in=statuses, submitted_at__gte=period.since, submitted_at__lt=period.until
    )


def traces_done_per_annotator_per_day(project: Project, period: DateRange) -> list[dict]:
    rows = (
        _done(project, period).annotate(day=TruncDate("submitted_at")).values("day", "annotator__username")
        .annotate(done=Count("id")).order_by("day", "annotator__username")
    )
    return [{"day": r["day"].isoformat(), "annotator": r["annotator__username"], "done": r["done"]} for r in rows]


def median_time_per_trace(project: Project, period: DateRange) -> dict:
    """Median seconds spent per finished annotation, overall and per annotator."""
    done = _done(project, period)
    if connection.vendor == "postgresql":
        overall = done.aggregate(m=Median("time_spent_s"))["m"]
        per = {r["annotator__username"]: r["m"] for r in
               done.values("annotator__username").annotate(m=Median("time_spent_s")).order_by()}
    else:
        per = _window_medians(done)
        overall = _window_medians(done, by_annotator=False).get(None)
    return {"overall_s": overall, "per_annotator_s": {k: per[k] for k in sorted(per)}}


def _window_medians(queryset, *, by_annotator: bool = True) -> dict:
    """Median without PERCENTILE_CONT: number the rows in each group by time, keep the middle one or two.
    Keys are usernames (or None for the whole range)."""
    partition = [F("annotator_id")] if by_annotator else None
    ranked = queryset.annotate(
        rank=Window(RowNumber(), partition_by=partition, order_by=[F("time_spent_s").asc(), F("id").asc()]),
        size=Window(Count("id"), partition_by=partition),
        group=F("annotator__username") if by_annotator else Value(""),
    ).annotate(twice_rank=F("rank") * 2)
    # 2·rank in [size, size+2] keeps the middle row of an odd group (and its neighbour) or the two of an even one
    middle = ranked.filter(twice_rank__gte=F("size"), twice_rank__lte=F("size") + 2)
    middles: dict = {}
    for group, seconds, rank, size in middle.values_list("group", "time_spent_s", "rank", "size"):
        if size % 2 == 1 and 2 * rank != size + 1:
            continue  # odd group: only the exact middle row
        middles.setdefault(group if by_annotator else None, []).append(seconds)
    return {k: sum(v) / len(v) for k, v in middles.items()}


def review_rates(project: Project, period: DateRange) -> dict:
    """Decisions taken in the range, from the audit trail (a rejected-then-accepted annotation counts both)."""
    decisions = AuditEvent.objects.filter(
        annotation__trace__project=project, kind="transition", from_status=AnnotationStatus.SUBMITTED,
        to_status__in=(AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED), at__gte=period.since, at__lt=period.until,
    )
    counts = decisions.aggregate(
        accepted=Count("id", filter=Q(to_status=AnnotationStatus.ACCEPTED)),
        rejected=Count("id", filter=Q(to_status=AnnotationStatus.REJECTED)),
    )
    per = (
        decisions.values("annotation__annotator__username")
        .annotate(accepted=Count("id", filter=Q(to_status=AnnotationStatus.ACCEPTED)),
                  rejected=Count("id", filter=Q(to_status=AnnotationStatus.REJECTED)))
        .order_by("annotation__annotator__username")
    )
    return {
        **_rates(counts["accepted"], counts["rejected"]),
        "per_annotator": [{"annotator": r["annotation__annotator__username"], **_rates(r["accepted"], r["rejected"])} for r in per],
    }


def _rates(accepted: int, rejected: int) -> dict:
    total = accepted + rejected
    return {"accepted": accepted, "rejected": rejected, "acceptance_rate": accepted / total if total else None,
            "rejection_rate": rejected / total if total else None}


def error_category_distribution(project: Project, period: DateRange) -> list[dict]:
    rows = (
        _done(project, period, STANDING).filter(verdict=Verdict.ERROR).values("error_category")
        .annotate(n=Count("id")).order_by("-n", "error_category")
    )
    return [{"category": r["error_category"] or "(none)", "count": r["n"]} for r in rows]


def first_error_position(project: Project, period: DateRange) -> list[dict]:
    """Where τ falls within its trace, as τ/n in tenths: bucket b holds b/10 < τ/n ≤ (b+1)/10."""
    bucket = (F("tau") * POSITION_BUCKETS - 1) / F("trace__step_count")  # integer division on both databases
    rows = dict(
        _done(project, period, STANDING).filter(verdict=Verdict.ERROR, tau__isnull=False, tau__gte=1, trace__step_count__gte=F("tau"))
        .annotate(bucket=bucket).values("bucket").annotate(n=Count("id")).values_list("bucket", "n")
    )
    step = 100 // POSITION_BUCKETS
    return [{"bucket": f"{b * step}–{(b + 1) * step}%", "count": rows.get(b, 0)} for b in range(POSITION_BUCKETS)]


def verdict_counts(project: Project, period: DateRange) -> dict:
    counts = _done(project, period).aggregate(
        done=Count("id"),
        error=Count("id", filter=Q(verdict=Verdict.ERROR)),
        no_error=Count("id", filter=Q(verdict=Verdict.NO_ERROR)),
        unusable=Count("id", filter=Q(verdict=Verdict.UNUSABLE)),
    )
    return counts


def live_counters(project: Project) -> dict:
    """Counts of annotations by status right now (what the live counters show)."""
    rows = dict(Annotation.objects.filter(trace__project=project).values("status").annotate(n=Count("id")).values_list("status", "n"))
    return {status: rows.get(status, 0) for status in AnnotationStatus.values}


def _suggestion_model():
    """Pre-scoring's per-trace suggestion, when that part of the studio is installed."""
    try:
        model = apps.get_model("traces", "TraceSuggestion")
    except LookupError:
        return None, None
    names = {f.name for f in model._meta.get_fields()}
    tau_field = next((n for n in ("suggested_tau", "tau", "first_error_step", "predicted_tau") if n in names), None)
    return (model, tau_field) if tau_field and "trace" in names else (None, None)


def suggestion_match(project: Project, period: DateRange) -> dict | None:
    """How often the model's suggested first error step equals the human τ (None until pre-scoring exists)."""
    model, tau_field = _suggestion_model()
    if model is None:
        return None
    from django.db.models import Exists, OuterRef

    suggestions = model.objects.filter(trace_id=OuterRef("trace_id"))
    matched = suggestions.filter(**{tau_field: OuterRef("tau")})
    counts = (
        _done(project, period, STANDING).filter(verdict=Verdict.ERROR).annotate(has=Exists(suggestions), hit=Exists(matched))
        .aggregate(compared=Count("id", filter=Q(has=True)), matched=Count("id", filter=Q(has=True, hit=True)))
    )
    compared = counts["compared"]
    return {"compared": compared, "matched": counts["matched"], "rate": counts["matched"] / compared if compared else None}


def project_dashboard(project: Project, period: DateRange) -> dict:
    return {
        "project": {"id": project.pk, "name": project.name},
        "range": {"from": period.first_day.isoformat(), "to": period.last_day.isoformat()},
        "counters": live_counters(project),
        "verdicts": verdict_counts(project, period),
        "done_per_day": traces_done_per_annotator_per_day(project, period),
        "median_time": median_time_per_trace(project, period),
        "review": review_rates(project, period),
        "agreement": agreement_report(project, since=period.since, until=period.until).as_dict(),
        "error_categories": error_category_distribution(project, period),
        "first_error_position": first_error_position(project, period),
        "suggestion_match": suggestion_match(project, period),
    }
