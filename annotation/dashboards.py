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
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction
from django.db.models import Count, Exists, OuterRef
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.translation import gettext

from annotation.agreement import agreement_report
from annotation.models import DONE_STATUSES, Annotation, AnnotationKind, AnnotationStatus, AuditEvent, Verdict
from annotation.workflow import STANDING
from prescoring.models import TraceSuggestion
from studio.errors import Invalid
from studio.words import in_words
from traces.models import Project

# Work handed in (throughput, time): a rejected annotation was still done. Categories and positions count only
# the answers that stand (workflow.STANDING).
DONE = DONE_STATUSES
POSITION_BUCKETS = 10
# The first error's step number is charted for steps 1 .. 9 one by one and 10 or later together.
FIRST_ERROR_STEPS_SHOWN = 10
# The round dashboard's group: an annotation's round is its trace's (None: a trace in no round).
ROUND = "trace__round_id"
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
                raise Invalid(
                    gettext("Bad date range: %(day)s is outside the days a dashboard covers (%(first)s to %(last)s)")
                    % {"day": day, "first": EARLIEST_DAY, "last": LATEST_DAY}
                )
        last_day = last_day or timezone.now().date()
        first_day = first_day or last_day - timedelta(days=DEFAULT_RANGE_DAYS - 1)
        if first_day > last_day:
            raise Invalid(
                gettext("Bad date range: the range starts (%(first)s) after it ends (%(last)s)")
                % {"first": first_day, "last": last_day}
            )
        tz = timezone.get_current_timezone()
        since = datetime.combine(first_day, time.min, tzinfo=tz)
        until = datetime.combine(last_day + timedelta(days=1), time.min, tzinfo=tz)
        return cls(since=since, until=until, first_day=first_day, last_day=last_day)

    @classmethod
    def from_query(cls, first: str | None, last: str | None) -> DateRange:
        """The range a page or API query asks for (``from`` / ``to`` as 2025-01-31, either may be left out);
        an Invalid names the bad value. The dashboard page and its API read dates only through here."""
        return cls.from_days(_query_day(first, "from"), _query_day(last, "to"))


def _query_day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise Invalid(
            gettext("Bad date range: %(name)s must be a date like 2025-01-31, not %(value)s")
            % {"name": name, "value": repr(value)}
        ) from None


def _done(project: Project, period: DateRange | None, statuses=DONE):
    # Production answers only: gold and qualification answers are scored apart (annotation.quality), never work.
    done = Annotation.objects.filter(project=project, status__in=statuses, kind=AnnotationKind.PRODUCTION)
    if period is None:  # all time (the round dashboard: rounds, not dates, divide the work)
        return done
    return done.filter(submitted_at__gte=period.since, submitted_at__lt=period.until)


def _group_fields(by: str | None) -> list[str]:
    """The scans' leading GROUP BY column: ``by`` (e.g. ROUND) splits one scan's figures per group; None keeps one
    group, keyed None."""
    return [by] if by else []


def _group_of(row: tuple, by: str | None) -> tuple[Any, tuple]:
    return (row[0], row[1:]) if by else (None, row)


def work_done(project: Project, period: DateRange) -> tuple[list[dict], dict]:
    """Traces done per annotator per day, and the range's verdict counts, from one grouped scan."""
    return work_done_by(project, period).get(None) or _work_fold(Counter(), Counter())


def work_done_by(
    project: Project, period: DateRange | None, by: str | None = None, statuses=DONE, *, per_day: bool = True
) -> dict[Any, tuple[list[dict], dict]]:
    """``work_done`` per value of ``by`` (one scan for every group), over the answers in ``statuses``. Without
    ``per_day`` only the verdicts are counted (the day × annotator rows multiply the rows read by a hundred, measured
    on bench/dashboard.py's world, for figures the round dashboard does not show)."""
    detail = ["day", "annotator_id"] if per_day else []
    rows = (
        _done(project, period, statuses)
        .annotate(day=TruncDate("submitted_at"))
        .values_list(*_group_fields(by), *detail, "verdict")
        .annotate(n=Count("id"))
        .order_by()
    )
    done: dict[Any, Counter] = defaultdict(Counter)
    verdicts: dict[Any, Counter] = defaultdict(Counter)
    for row in rows:
        group, rest = _group_of(row, by)
        *when_who, verdict, n = rest
        if per_day:
            done[group][tuple(when_who)] += n
        verdicts[group][verdict] += n
    return {group: _work_fold(done[group], verdicts[group]) for group in verdicts}


def _work_fold(per_day: Counter, verdicts: Counter) -> tuple[list[dict], dict]:
    done = [
        {"day": day.isoformat(), "annotator_id": annotator_id, "done": n} for (day, annotator_id), n in per_day.items()
    ]
    counts: dict[str, int] = {
        "done": sum(verdicts.values()),
        **{v: verdicts.get(v, 0) for v in (Verdict.ERROR, Verdict.NO_ERROR, Verdict.UNUSABLE)},
    }
    return done, counts


def median_time_per_trace(project: Project, period: DateRange) -> dict:
    """Median seconds spent per finished annotation, overall and per annotator id: exact, from a histogram of
    whole seconds (the middle value, or the mean of the middle two, as PERCENTILE_CONT(0.5) gives)."""
    return median_time_by(project, period).get(None) or {"overall_s": None, "per_annotator_s": {}}


def median_time_by(
    project: Project, period: DateRange | None, by: str | None = None, *, per_annotator: bool = True
) -> dict[Any, dict]:
    """``median_time_per_trace`` per value of ``by``, from one histogram scan (``per_annotator`` False: the overall
    median only, from a histogram without the annotator column)."""
    rows = (
        _done(project, period)
        .values_list(*_group_fields(by), *(["annotator_id"] if per_annotator else []), "time_spent_s")
        .annotate(n=Count("id"))
        .order_by()
    )
    overall: dict[Any, Counter] = defaultdict(Counter)
    per: dict[Any, dict[int, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for row in rows:
        group, rest = _group_of(row, by)
        *who, seconds, n = rest
        overall[group][seconds] += n
        if per_annotator:
            per[group][who[0]][seconds] += n
    return {
        group: {
            "overall_s": _median_of_counts(overall[group]),
            "per_annotator_s": {k: _median_of_counts(v) for k, v in per[group].items()},
        }
        for group in overall
    }


def _median_of_counts(histogram: Counter) -> float | None:
    total = sum(histogram.values())
    if not total:
        return None
    wanted = {(total - 1) // 2, total // 2}  # 0-based positions of the middle one or two
    picked: list[float] = []
    seen = 0
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
    categories; where τ falls within its trace, as τ/n in tenths (bucket b holds b/10 < τ/n ≤ (b+1)/10) and as the
    step number itself; and how often the model's suggested first error step equals the human τ (None when no trace
    of the project has a pre-scoring suggestion)."""
    scored = TraceSuggestion.objects.filter(trace__project=project).exists()
    return standing_errors_by(project, period).get(None) or _standing_fold([], scored)


def standing_errors_by(project: Project, period: DateRange | None, by: str | None = None) -> dict[Any, dict]:
    """``standing_errors`` per value of ``by``, from one grouped scan (groups with no standing error answer are
    left out)."""
    errors = _done(project, period, STANDING).filter(verdict=Verdict.ERROR)
    scored = TraceSuggestion.objects.filter(trace__project=project).exists()
    fields = [*_group_fields(by), "error_category", "tau", "trace__step_count"]
    if scored:
        suggestions = TraceSuggestion.objects.filter(trace_id=OuterRef("trace_id"))
        errors = errors.annotate(
            has_suggestion=Exists(suggestions), suggestion_hit=Exists(suggestions.filter(suggested_tau=OuterRef("tau")))
        )
        fields += ["has_suggestion", "suggestion_hit"]
    grouped: dict[Any, list[tuple]] = defaultdict(list)
    for row in errors.values_list(*fields).annotate(n=Count("id")).order_by():
        group, rest = _group_of(row, by)
        grouped[group].append(rest)
    return {group: _standing_fold(rows, scored) for group, rows in grouped.items()}


def _standing_fold(rows: list[tuple], scored: bool) -> dict:
    categories: Counter = Counter()
    buckets: Counter = Counter()
    steps: Counter = Counter()  # τ -> answers, for τ within its trace
    relative: list[tuple[float, int]] = []  # (τ/n, answers)
    compared = matched = 0
    for row in rows:
        category, tau, step_count, n = row[0], row[1], row[2], row[-1]
        categories[category or "(none)"] += n
        if tau is not None and 1 <= tau <= (step_count or 0):
            buckets[(tau * POSITION_BUCKETS - 1) // step_count] += n
            steps[tau] += n
            relative.append((tau / step_count, n))
        if scored and row[3]:
            compared += n
            matched += n if row[4] else 0
    share = 100 // POSITION_BUCKETS
    placed = sum(steps.values())
    return {
        "error_categories": [
            {"category": c, "count": n} for c, n in sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "first_error_position": [
            {"bucket": f"{b * share}–{(b + 1) * share}%", "count": buckets.get(b, 0)} for b in range(POSITION_BUCKETS)
        ],
        "first_error_step": {
            "answers": placed,
            "median": _median_of_counts(steps),
            "mean": sum(tau * n for tau, n in steps.items()) / placed if placed else None,
            "mean_relative": sum(r * n for r, n in relative) / placed if placed else None,
            "histogram": [{"step": str(tau), "count": steps.get(tau, 0)} for tau in range(1, FIRST_ERROR_STEPS_SHOWN)]
            + [
                {
                    "step": f"{FIRST_ERROR_STEPS_SHOWN}+",
                    "count": sum(n for tau, n in steps.items() if tau >= FIRST_ERROR_STEPS_SHOWN),
                }
            ],
        },
        "suggestion_match": {"compared": compared, "matched": matched, "rate": matched / compared if compared else None}
        if scored
        else None,
    }


def live_counters(project: Project) -> dict:
    """Counts of annotations by status right now (what the live counters show)."""
    rows = dict(
        Annotation.objects.filter(project=project, kind=AnnotationKind.PRODUCTION)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
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
                        # Nor is compiling a grouped scan worth it: JIT took 100 ms of each of the quality
                        # dashboard's reads at a million answers (bench/quality.py), more than it saved.
                        cursor.execute("SET LOCAL jit = off")
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
        # The pairs each agreement figure stands on, in words ("1 pair"): the page shows these, never counts of its own.
        "agreement_words": {
            key: in_words(figures["agreement"][key], "pair", "pairs")
            for key in ("action_type_pairs", "click_pairs", "box_pairs")
        },
        **figures["standing"],
    }


# --- rounds, side by side ---------------------------------------------------------------------------------------

NO_ROUND = {"id": None, "name": "(no round)", "checkpoint": "", "weights_hash": "", "ran_at": None}


def round_dashboard(project: Project) -> dict:
    """Every round of ``project`` side by side, oldest run first, over all time: the same grouped scans as the
    project dashboard, grouped by the traces' round (one scan each for all rounds), so a lead sees whether
    checkpoint n+1 makes fewer or other mistakes than checkpoint n.

    Per round: its traces; the standing answers (submitted or accepted) by verdict, and the shares of them that
    found an error and that judged the trace unusable; where the first error is (step τ, and τ/n); the error
    categories; the median seconds per finished annotation (rejected ones too: the work was done); and how often
    the model's suggested first error matched the human τ. ``change`` is each headline figure's difference from
    the round before (all None for the first round and for "(no round)"). Traces in no round (from before rounds, or imported without one) come first as
    "(no round)" when there are any."""
    from traces.models import Round, Trace

    figures = _read_at_once(
        {
            "traces": lambda: dict(
                Trace.objects.filter(project=project).values_list("round_id").annotate(n=Count("id")).order_by()
            ),
            "verdicts": lambda: work_done_by(project, None, ROUND, STANDING, per_day=False),
            "time": lambda: median_time_by(project, None, ROUND, per_annotator=False),
            "standing": lambda: standing_errors_by(project, None, ROUND),
        }
    )
    scored = TraceSuggestion.objects.filter(trace__project=project).exists()
    rounds: list[Mapping[str, Any]] = list(
        Round.objects.filter(project=project)
        .order_by("ran_at", "id")
        .values("id", "name", "checkpoint", "weights_hash", "ran_at")
    )
    if figures["traces"].get(None):
        rounds.insert(0, dict(NO_ROUND))
    rows, before = [], None
    for meta in rounds:
        key = meta["id"]
        verdicts = (figures["verdicts"].get(key) or _work_fold(Counter(), Counter()))[1]
        answers = verdicts["done"]
        standing = figures["standing"].get(key) or _standing_fold([], scored)
        row = {
            **meta,
            "ran_at": meta["ran_at"].isoformat() if meta["ran_at"] else None,
            "traces": figures["traces"].get(key, 0),
            "answers": answers,
            "verdicts": {v: verdicts[v] for v in (Verdict.ERROR, Verdict.NO_ERROR, Verdict.UNUSABLE)},
            "error_share": verdicts[Verdict.ERROR] / answers if answers else None,
            "unusable_share": verdicts[Verdict.UNUSABLE] / answers if answers else None,
            "median_time_s": (figures["time"].get(key) or {}).get("overall_s"),
            **standing,
        }
        row["change"] = _round_change(row, before)
        rows.append(row)
        if key is not None:  # "(no round)" is no checkpoint: the first round is compared with nothing
            before = row
    return {"project": {"id": project.pk, "name": project.name}, "scored": scored, "rounds": rows}


def _round_change(row: dict, before: dict | None) -> dict:
    """Each headline figure's difference from the round before (None where either side has no value)."""

    def headline(r: dict) -> dict:
        step = r["first_error_step"]
        match = r["suggestion_match"] or {}
        return {
            "error_share": r["error_share"],
            "unusable_share": r["unusable_share"],
            "first_error_step_median": step["median"],
            "first_error_relative_mean": step["mean_relative"],
            "median_time_s": r["median_time_s"],
            "suggestion_match_rate": match.get("rate"),
        }

    now = headline(row)
    if before is None:
        return {name: None for name in now}
    then = headline(before)
    return {name: (now[name] - then[name] if None not in (now[name], then[name]) else None) for name in now}
