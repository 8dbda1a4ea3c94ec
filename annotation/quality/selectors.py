"""Reads of quality control, for the pages, the API, the hand-out and the exports.

For the pages (their contract; each answers JSON-ready dicts):

- ``quality_settings(project)`` / ``quality_settings_json(settings)``: the project's settings, with each setting's
  meaning (``SETTING_HELP``) for the settings form;
- ``quality_dashboard(project, period)``: each annotator's figures and flags (``DashboardFlags``), the project's own
  figures beside them, the latest gold changes, and ``csv`` (header and rows of the dashboard's CSV);
- ``gold_list(project)`` / ``gold_json(gold)`` / ``gold_detail(gold)``: the gold traces and the scores each gave;
- ``answer_feedback(annotation, reader=)``: the part-by-part comparison of a scored answer with its reference (the
  qualification's feedback; ``feedback_refusal`` says why an annotator may not see it yet);
- ``qualification_state(user=, project=)``: whether the real queue is open to a member and, if not, why and what
  to do (the queue page shows it instead of an empty queue); ``queue_with_quality(user)``: the queue page's rows
  (``annotation.selectors.queue_for_user``) each with its ``qualification``; ``qualification_overview(project)``:
  every member's attempts with their answers (leads);
- ``gold_state(annotation)``: the review page's gold control (is the trace gold, is this the reference, and
  ``refusal``, why this answer cannot be made one: ``reference_refusal``, the rule ``gold_mark`` refuses with).

The hand-out's refusal is ``quality.services.QueueClosed`` (a Conflict, 409) with ``gate``: ``paused``,
``qualification_failed`` or ``qualification_unavailable``; its ``detail`` is the sentence to show. Writes for the
pages: ``quality.services`` ``gold_mark_answer``, ``gold_mark_rows`` (+ ``gold_file_read``), ``gold_remove``,
``quality_settings_save``, ``annotator_pause_set``, ``qualification_allow_retry``. Access: ``gold.manage`` (mark,
remove, the gold list), ``quality.view`` (the dashboard), ``quality.manage`` (settings, pause, retry),
``qualification.view`` (a member's own standing), ``gold.feedback`` (a scored answer's comparison).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.utils.translation import gettext, gettext_noop

from annotation.models import (
    AgreementPair,
    Annotation,
    AnnotationKind,
    AnnotationStatus,
    GoldEvent,
    GoldScore,
    GoldTrace,
    QualificationAttempt,
    QualificationStatus,
    QualitySettings,
    QueuePause,
    QueueTally,
    Verdict,
)
from annotation.quality import rollup, scoring
from annotation.selectors import target_box_of, verdict_words
from studio.errors import Invalid
from studio.words import in_words
from traces.models import Step, Trace

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from annotation.dashboards import DateRange
    from annotation.models import AgreementPair
    from traces.models import Project

# The settings' meanings, in English in the API (pages translate them: page_selectors.settings_rows).
SETTING_HELP = {
    "gold_every": gettext_noop("One trace in this many of each annotator's queue is a gold trace (0: no gold traces)."),
    "point_tolerance": gettext_noop(
        "A point outside the reference's element box still counts within this share of the screen."
    ),
    "qualification_size": gettext_noop(
        "Gold traces a new member answers, with feedback, before the real queue opens (0: none)."
    ),
    "qualification_pass_mark": gettext_noop("Share of the qualification's answers that must be right to pass."),
    "min_gold_accuracy": gettext_noop("Flag an annotator whose gold accuracy is below this share."),
    "min_gold_answers": gettext_noop("Gold answers an annotator needs before their accuracy is judged."),
    "min_median_seconds": gettext_noop("Flag an annotator whose median time per trace is below this many seconds."),
    "max_no_error_streak": gettext_noop("Flag an annotator whose latest answers are this many 'no error' in a row."),
}
SETTING_NAMES = tuple(SETTING_HELP)


def quality_settings(project: Project) -> QualitySettings:
    """The project's settings (the defaults, unsaved, for a project that never changed them)."""
    return QualitySettings.objects.filter(project_id=project.pk).first() or QualitySettings(project_id=project.pk)


def quality_settings_json(settings: QualitySettings) -> dict:
    return {
        "settings": {name: getattr(settings, name) for name in SETTING_NAMES},
        "help": SETTING_HELP,
        "gold_traces": GoldTrace.objects.filter(project_id=settings.project_id).count(),
    }


# --- What scoring reads ------------------------------------------------------------------------------------------


def gold_answer_of(annotation: Annotation, *, project: Project) -> scoring.GoldAnswer:
    """An annotation as scoring reads it (the corrected target's box only when drawn for the stored action)."""
    return scoring.GoldAnswer(
        verdict=annotation.verdict,
        tau=annotation.tau,
        error_category=annotation.error_category,
        corrected_action=annotation.corrected_action,
        target_box=target_box_of(
            annotation.editor_state, annotation.corrected_action, "corrected", box_tokens=project.box_tokens
        ),
        reflection_action=annotation.reflection_action,
    )


def gold_screen(*, trace: Trace, tau: int | None, project: Project) -> scoring.Screen:
    """The reference's o_τ as a point needs it: the project's convention and the screenshot's size."""
    size = None
    if tau is not None:
        size = (
            Step.objects.filter(trace_id=trace.pk, index=tau, screenshot__isnull=False)
            .values_list("screenshot__width", "screenshot__height")
            .first()
        )
    width, height = size or (None, None)
    return scoring.Screen(
        convention=project.coordinate_convention, width=width, height=height, max_pixels=project.max_pixels
    )


def reference_choice(*, trace: Trace, annotator: str = "") -> Annotation:
    """The answer a file's row names as ``trace``'s reference: ``annotator``'s, else the accepted production answer
    an export takes (adjudicated first, then the latest reviewed), else the latest answer (which ``gold_mark`` then
    refuses, saying why). An Invalid when there is no such answer."""
    answers = Annotation.objects.filter(trace=trace, kind=AnnotationKind.PRODUCTION).select_related("trace__project")
    if annotator:
        chosen = answers.filter(annotator__username=annotator).first()
        if chosen is None:
            raise Invalid(
                gettext("%(user)s has no answer on trace %(trace)s") % {"user": annotator, "trace": trace.external_id}
            )
        return chosen
    chosen = (
        answers.filter(status=AnnotationStatus.ACCEPTED).order_by("-is_adjudicated", "-reviewed_at", "-id").first()
        or answers.order_by("-updated_at", "-id").first()
    )
    if chosen is None:
        raise Invalid(
            gettext("trace %(trace)s has no answer yet; a gold trace needs an accepted answer")
            % {"trace": trace.external_id}
        )
    return chosen


def reference_refusal(annotation: Annotation) -> str:
    """Why ``annotation`` cannot be its trace's reference ("" when it can): the one rule of ``gold_mark`` (which
    refuses with it, a 400) and of the page's "make gold" button (which shows it instead)."""
    if annotation.kind != AnnotationKind.PRODUCTION:
        return gettext("it is itself a gold or qualification answer; a reference is an accepted production answer")
    if annotation.status != AnnotationStatus.ACCEPTED:
        state = {
            "draft": gettext("a draft"),
            "submitted": gettext("not reviewed yet"),
            "rejected": gettext("rejected"),
        }.get(annotation.status, annotation.status)
        return gettext("it is %(state)s; only an accepted answer can be a reference") % {"state": state}
    if annotation.verdict == Verdict.UNUSABLE:
        return gettext("it judges the trace unusable; a gold trace needs an answer to score against")
    if not annotation.verdict:
        return gettext("it has no verdict")
    return ""


def gold_state(annotation: Annotation) -> dict:
    """What the review page's gold control shows for ``annotation``: whether its trace is gold (``gold_id``), whether
    this answer is the reference, and why it cannot be made one (``refusal``, "" when it can)."""
    gold = GoldTrace.objects.filter(trace_id=annotation.trace_id).values_list("pk", "reference_id").first()
    return {
        "gold_id": gold[0] if gold else None,
        "is_reference": gold is not None and gold[1] == annotation.pk,
        "refusal": reference_refusal(annotation),
    }


def unseen_gold(*, user: User, project: Project) -> QuerySet[GoldTrace]:
    """The project's gold traces ``user`` never met (no answer of theirs on the trace, of any kind, draft or skipped
    included) and whose reference they did not write, of references still accepted."""
    met = Annotation.objects.filter(trace_id=OuterRef("trace_id"), annotator=user)
    # A reference a lead sent back (reopened) stops handing its trace out until it is accepted again.
    return (
        GoldTrace.objects.filter(project_id=project.pk, reference__status=AnnotationStatus.ACCEPTED)
        .exclude(reference__annotator=user)
        .exclude(Exists(met))
    )


# --- Gold traces --------------------------------------------------------------------------------------------------


def gold_json(gold: GoldTrace) -> dict:
    reference = gold.reference
    return {
        "id": gold.pk,
        "trace_id": gold.trace_id,
        "external_id": gold.trace.external_id,
        "reference": {
            "id": reference.pk,
            "annotator": reference.annotator.username,
            "version": gold.reference_version,
            "answer": verdict_words(reference.verdict, reference.tau),
            "error_category": reference.error_category,
            "corrected_action": reference.corrected_action,
            "reflection_action": reference.reflection_action,
        },
        "marked_by": gold.marked_by.username if gold.marked_by else None,
        "marked_at": gold.marked_at.isoformat(),
    }


def gold_list(project: Project, *, limit: int = 500) -> dict:
    """The project's gold traces (the first ``limit`` by id) with how many scored answers each gave."""
    golds = list(
        GoldTrace.objects.filter(project_id=project.pk)
        .select_related("trace", "reference__annotator", "marked_by")
        .annotate(scored=Count("scores"))
        .order_by("id")[:limit]
    )
    total = GoldTrace.objects.filter(project_id=project.pk).count()
    return {
        "count": total,
        "count_words": in_words(total, "gold trace", "gold traces"),
        "results": [{**gold_json(g), "scored": g.scored} for g in golds],
    }


def _score_json(score: GoldScore) -> dict:
    return {
        "id": score.pk,
        "annotation_id": score.annotation_id,
        "annotator": score.annotator.username,
        "kind": score.kind,
        "correct": score.correct,
        "parts": {part: getattr(score, f"{part}_ok") for part in scoring.PARTS},
        "submitted_at": score.submitted_at.isoformat(),
        "rescored_at": score.rescored_at.isoformat() if score.rescored_at else None,
        "gold_removed": score.gold_id is None or score.gold_removed_at is not None,
    }


def gold_detail(gold: GoldTrace) -> dict:
    scores = GoldScore.objects.filter(gold=gold).select_related("annotator").order_by("submitted_at", "id")
    return {**gold_json(gold), "scores": [_score_json(s) for s in scores]}


# --- Feedback -----------------------------------------------------------------------------------------------------


def feedback_refusal(annotation: Annotation, user: User) -> str:
    """Why ``user`` may not see ``annotation``'s comparison with its reference now ("" when they may). The annotator
    sees it for a qualification answer once it is submitted; a gold answer in the real queue stays unmarked to them
    (a gold trace looks like any other). Leads see every scored answer's."""
    from studio.access import can

    if annotation.annotator_id == user.pk and not can(user, "quality.view", annotation.trace.project):
        if annotation.kind != AnnotationKind.QUALIFICATION:
            return gettext("There is no feedback for this answer.")
        if annotation.status == AnnotationStatus.DRAFT:
            return gettext("Feedback comes once you submit this answer.")
    if annotation.kind == AnnotationKind.PRODUCTION:
        return gettext("There is no feedback for this answer.")
    if not GoldScore.objects.filter(annotation=annotation).exists():
        return gettext("This answer has not been scored (it is not submitted, or its gold trace was removed first).")
    return ""


def answer_feedback(annotation: Annotation, *, reader: User) -> dict:
    """The stored comparison of a scored answer with its reference (``scoring.Comparison.as_dict``: the parts, the
    differences in words, both answers), with the qualification attempt's progress for a qualification answer. The
    differences' words follow ``reader``: "You said…" for the answer's annotator, their name for anybody else."""
    score = GoldScore.objects.select_related("attempt").get(annotation=annotation)
    named = None if reader.pk == annotation.annotator_id else annotation.annotator.username
    comparison = {
        **score.comparison,
        "differences": [
            {**d, "words": scoring.difference_words(d["template"], named)} if "template" in d else d
            for d in score.comparison.get("differences", [])
        ],
    }
    data = {
        "annotation_id": annotation.pk,
        "kind": score.kind,
        "comparison": comparison,
        "correct": score.correct,
        "rescored_at": score.rescored_at.isoformat() if score.rescored_at else None,
        "gold_removed": score.gold_id is None or score.gold_removed_at is not None,
        "answer_words": verdict_words(annotation.verdict, annotation.tau),
        "reference_words": verdict_words(
            score.comparison.get("reference", {}).get("verdict", ""), score.comparison.get("reference", {}).get("tau")
        ),
    }
    if score.attempt is not None:
        data["attempt"] = attempt_json(score.attempt)
    return data


# --- Qualification ------------------------------------------------------------------------------------------------


def attempt_json(attempt: QualificationAttempt) -> dict:
    return {
        "number": attempt.number,
        "status": attempt.status,
        "status_display": attempt.get_status_display(),
        "size": attempt.size,
        "pass_mark": attempt.pass_mark,
        "answered": attempt.answered,
        "correct": attempt.correct,
        "progress_words": f"{attempt.answered} of {attempt.size} answered, {attempt.correct} right",
        "allowed_by": attempt.allowed_by.username if attempt.allowed_by else None,
        "started_at": attempt.started_at.isoformat(),
        "ended_at": attempt.ended_at.isoformat() if attempt.ended_at else None,
    }


def qualification_state(*, user: User, project: Project) -> dict:
    """Where ``user`` stands with ``project``'s qualification and queue: ``status`` is ``not_required`` (no
    qualification, or the user writes references), ``not_started``, ``open`` (answering it: the hand-out gives its
    gold traces first), ``passed``, ``failed`` (the queue stays closed until a lead allows another attempt);
    ``paused`` with ``pause_reason`` when a lead paused their queue; ``queue_open`` whether the real queue gives them
    traces; ``words``: what the page says."""
    from studio.access import can

    settings = quality_settings(project)
    pause = QueuePause.objects.filter(project_id=project.pk, annotator_id=user.pk).first()
    attempts = list(
        QualificationAttempt.objects.filter(project_id=project.pk, annotator_id=user.pk)
        .select_related("allowed_by")
        .order_by("number")
    )
    required = bool(settings.qualification_size) and not can(user, "quality.manage", project)
    statuses = {a.status for a in attempts}
    if not required:
        status = "not_required"
    elif QualificationStatus.PASSED in statuses:
        status = "passed"
    elif QualificationStatus.OPEN in statuses:
        status = "open"
    elif attempts:
        status = "failed"
    else:
        status = "not_started"
    words = {
        "not_required": "",
        "passed": "You passed the qualification.",
        "open": "Answer the qualification's gold traces first: after each you see the reference beside your answer.",
        "failed": "You did not pass the qualification. A lead can allow another attempt.",
        "not_started": (
            f"Before the real queue opens, answer {settings.qualification_size} qualification traces; after each you "
            f"see the reference beside your answer. {round(settings.qualification_pass_mark * 100)} % right passes."
        ),
    }[status]
    if pause is not None:
        words = f"A lead paused your queue{': ' + pause.reason if pause.reason else ''}."
    answers = attempt_answers(a.pk for a in attempts)
    return {
        "required": required,
        "status": status,
        "size": settings.qualification_size,
        "pass_mark": settings.qualification_pass_mark,
        "attempts": [{**attempt_json(a), "answers": answers.get(a.pk, [])} for a in attempts],
        "paused": pause is not None,
        "pause_reason": pause.reason if pause else "",
        "queue_open": pause is None and status in ("not_required", "passed"),
        "words": words,
    }


def attempt_answers(attempt_ids: Iterable[int]) -> dict[int, list[dict]]:
    """The scored answers of qualification attempts (kept with each attempt): attempt id -> answers in the order
    they were submitted, each with its trace, whether it was right, and its feedback's address."""
    from django.urls import reverse

    out: dict[int, list[dict]] = defaultdict(list)
    for score in GoldScore.objects.filter(attempt_id__in=list(attempt_ids)).order_by("submitted_at", "id"):
        assert score.attempt_id is not None  # filtered on it
        out[score.attempt_id].append(
            {
                "annotation_id": score.annotation_id,
                "trace_id": score.trace_id_kept,
                "external_id": score.external_id,
                "correct": score.correct,
                "submitted_at": score.submitted_at.isoformat(),
                "feedback_url": reverse("api-annotation-feedback", args=[score.annotation_id])
                if score.annotation_id
                else None,
            }
        )
    return out


def qualification_overview(project: Project) -> list[dict]:
    """Every member's attempts with their answers (the leads' view of the qualification), by user name."""
    attempts = list(
        QualificationAttempt.objects.filter(project_id=project.pk)
        .select_related("annotator", "allowed_by")
        .order_by("annotator__username", "number")
    )
    answers = attempt_answers(a.pk for a in attempts)
    by_user: dict[str, list] = defaultdict(list)
    for attempt in attempts:
        by_user[attempt.annotator.username].append({**attempt_json(attempt), "answers": answers.get(attempt.pk, [])})
    return [{"annotator": name, "attempts": attempts} for name, attempts in by_user.items()]


def queue_with_quality(user: User) -> list[dict]:
    """The annotator's queue rows (``annotation.selectors.queue_for_user``), each with ``qualification``: where the
    user stands (``qualification_state``), so the page says why the queue is closed instead of showing it empty."""
    from annotation.selectors import queue_for_user

    rows = queue_for_user(user)
    for row in rows:
        row["qualification"] = qualification_state(user=user, project=row["project"])
    return rows


# --- Accuracy, for the dashboard and the exports --------------------------------------------------------------


def gold_accuracy_by_annotator(
    project: Project, *, first_day: date | None = None, last_day: date | None = None
) -> dict[int, dict]:
    """Per annotator id: their gold answers (production-queue gold, not qualification) submitted in the days (UTC,
    both ends included; all when not given), right overall and part by part, from the gold rollup's days
    (``rollup.gold_rollup_figures``)."""
    return rollup.gold_rollup_figures(project, first_day=first_day, last_day=last_day)


def _share_json(right: int, n: int) -> dict:
    interval = scoring.wilson_interval(right, n)
    return {
        "right": right,
        "n": n,
        "share": right / n if n else None,
        "interval": [round(interval[0], 4), round(interval[1], 4)] if interval else None,
    }


def gold_figures(row: dict | None) -> dict:
    """A grouped row of ``gold_accuracy_by_annotator`` as the page shows it: the accuracy (every part right) and
    each part, each with its n and 95 % Wilson interval."""
    row = row or {}
    return {
        **_share_json(row.get("right", 0), row.get("n", 0)),
        "parts": [
            {
                "part": part,
                "label": scoring.PART_LABELS[part],
                **_share_json(row.get(f"{part}__right", 0), row.get(f"{part}__n", 0)),
            }
            for part in scoring.PARTS
        ],
        "removed": row.get("removed", 0),
        "rescored": row.get("rescored", 0),
    }


def annotators_below_gold_bar(project: Project, bar: float) -> dict[int, dict]:
    """Annotators whose gold accuracy (all their gold answers) is below ``bar``: id -> {"username", "right", "n",
    "share"}. An annotator without gold answers has no accuracy and is not below it."""
    rows = gold_accuracy_by_annotator(project)
    below = {k: v for k, v in rows.items() if v["n"] and v["right"] / v["n"] < bar}
    names = dict(get_user_model().objects.filter(pk__in=list(below)).values_list("pk", "username"))
    return {
        k: {"username": names.get(k, str(k)), "right": v["right"], "n": v["n"], "share": v["right"] / v["n"]}
        for k, v in below.items()
    }


# --- The quality dashboard -----------------------------------------------------------------------------------------

FLAG_WORDS = {
    "too_fast": "Too fast: median {value:g} s per trace, below {bound:g} s.",
    "no_error_streak": "'No error' {value} times in a row (the bound is {bound}).",
    "low_gold_accuracy": "Gold accuracy {value:.0%} over {n} gold answers, below {bound:.0%}.",
}


def annotator_flags(*, figures: dict, settings: QualitySettings) -> list[dict]:
    """The flags of one annotator's figures against the lead's bounds (the one rule: the page shows these)."""
    flags = []
    median = figures.get("median_time_s")
    if median is not None and median < settings.min_median_seconds:
        flags.append({"flag": "too_fast", "value": median, "bound": settings.min_median_seconds})
    streak = figures.get("streak", {}).get("current_no_error", 0)
    if streak >= settings.max_no_error_streak:
        flags.append({"flag": "no_error_streak", "value": streak, "bound": settings.max_no_error_streak})
    gold = figures.get("gold", {})
    if gold.get("n", 0) >= settings.min_gold_answers and gold["share"] is not None:
        if gold["share"] < settings.min_gold_accuracy:
            flags.append(
                {
                    "flag": "low_gold_accuracy",
                    "value": gold["share"],
                    "n": gold["n"],
                    "bound": settings.min_gold_accuracy,
                }
            )
    for flag in flags:
        flag["words"] = FLAG_WORDS[flag["flag"]].format(**flag)
    return flags


def _verdicts_times_and_corrections(
    project: Project, period: DateRange
) -> tuple[dict[int, Counter], dict[int, float | None], dict[int, tuple[int, int]]]:
    """Per annotator id, from the rollup's days in the range (one grouped read): their done answers' verdicts
    (``dashboards._done``), their median seconds per trace (exact below 15 s, within its bucket above:
    ``rollup.median_of_buckets``), and (standing error answers with a correction, those whose corrected action is
    the recorded one: the action of step τ)."""
    verdicts: dict[int, Counter] = {}
    medians: dict[int, float | None] = {}
    corrections: dict[int, tuple[int, int]] = {}
    for annotator_id, row in rollup.rollup_figures(project, period).items():
        counted = Counter({verdict: row[column] for verdict, column in rollup.VERDICT_COLUMNS.items()})
        counted[Verdict.UNSET] = row["answers"] - sum(counted.values())
        verdicts[annotator_id] = +counted
        medians[annotator_id] = rollup.median_of_buckets(row["seconds"])
        if row["corrections"]:
            corrections[annotator_id] = (row["corrections"], row["identical_corrections"])
    return verdicts, medians, corrections


def _agreement_by_annotator(project: Project, period: DateRange) -> dict[str, dict]:
    """Per annotator's name: the double-annotated pairs they are in (``agreement.agreement_report``'s pairs: a
    trace's first two standing production answers submitted in the range, by id) and the share whose answers agree
    exactly and within one step. A trace's first two standing answers of all are its ``AgreementPair``; when both
    were submitted in the range they are its pair in the range too, counted per annotator in SQL. Only a trace whose
    kept pair is not in the range but which has a third standing answer may pair two others in it: those traces
    alone are looked up, each by two indexed subqueries."""

    in_range = Q()
    for side in ("first", "second"):
        if period.since is not None:
            in_range &= Q(**{f"{side}_submitted_at__gte": period.since})
        if period.until is not None:
            in_range &= Q(**{f"{side}_submitted_at__lt": period.until})
    kept = AgreementPair.objects.filter(project_id=project.pk)
    per: dict[int, Counter] = defaultdict(Counter)
    for side in ("first", "second"):
        for who, exact, within, n in (
            kept.filter(in_range)
            .values_list(f"{side}_annotator_id", "exact", "within_one")
            .annotate(n=Count("*"))
            .order_by()
        ):
            per[who].update(pairs=n, exact=n if exact else 0, within_one=n if within else 0)
    for (who_a, verdict_a, tau_a), (who_b, verdict_b, tau_b) in _pairs_beside_the_kept(kept, in_range, period):
        exact, within = rollup.answers_agree(verdict_a, tau_a, verdict_b, tau_b)
        for who in (who_a, who_b):
            per[who].update(pairs=1, exact=exact, within_one=within)
    names = dict(get_user_model().objects.filter(pk__in=list(per)).values_list("pk", "username"))
    return {
        names[who]: {
            "pairs": c["pairs"],
            "exact": c["exact"] / c["pairs"],
            "within_one": c["within_one"] / c["pairs"],
        }
        for who, c in per.items()
    }


def _pairs_beside_the_kept(kept: QuerySet[AgreementPair], in_range: Q, period: DateRange) -> list[tuple[tuple, tuple]]:
    """The range's pairs of the traces whose kept pair is not in the range but which have a third standing answer:
    each trace's first two standing production answers submitted in the range, as (annotator id, verdict, τ)."""
    from annotation.workflow import STANDING

    standing = Annotation.objects.filter(
        trace_id=OuterRef("pk"), status__in=STANDING, kind=AnnotationKind.PRODUCTION
    ).order_by("id")
    if period.since is not None:
        standing = standing.filter(submitted_at__gte=period.since)
    if period.until is not None:
        standing = standing.filter(submitted_at__lt=period.until)
    others = list(
        Trace.objects.filter(
            pk__in=kept.exclude(in_range).filter(trace__standing_annotations__gte=3).values("trace_id")
        )
        .annotate(first=Subquery(standing.values("id")[:1]), second=Subquery(standing.values("id")[1:2]))
        .filter(second__isnull=False)
        .values_list("first", "second")
    )
    ids = [pk for pair in others for pk in pair]
    answers: dict[int, tuple[int, str, int | None]] = {}
    for start in range(0, len(ids), PAIR_READ_BATCH):  # SQLite bounds a statement's parameters
        for pk, annotator_id, verdict, tau in Annotation.objects.filter(
            pk__in=ids[start : start + PAIR_READ_BATCH]
        ).values_list("pk", "annotator_id", "verdict", "tau"):
            answers[pk] = (annotator_id, verdict, tau)
    return [(answers[first], answers[second]) for first, second in others]


PAIR_READ_BATCH = 10_000


def gold_changes(project: Project, *, limit: int = 20) -> list[dict]:
    """The latest gold events (marked, reference changed with what the re-score changed, removed), newest first."""
    words = {
        "marked": "marked gold",
        "reference_changed": "reference changed: {rescored} answers re-scored, {changed} changed",
        "removed": "gold removed: {scores_kept} scores kept, marked as removed",
    }
    out = []
    for event in GoldEvent.objects.filter(project_id=project.pk).select_related("actor")[:limit]:
        detail = {"rescored": 0, "changed": 0, "scores_kept": 0, **(event.detail or {})}
        out.append(
            {
                "at": event.at.isoformat(),
                "kind": event.kind,
                "trace_id": event.trace_id_kept,
                "external_id": event.external_id,
                "actor": event.actor.username if event.actor else None,
                "detail": event.detail,
                "words": f"{event.external_id or event.trace_id_kept}: "
                + words.get(event.kind, event.kind).format(**detail),
            }
        )
    return out


CSV_HEADER = [
    "annotator",
    "answers",
    "no_error_rate",
    "project_no_error_rate",
    "median_time_s",
    "identical_corrections",
    "corrections",
    "agreement_pairs",
    "agreement_exact",
    "current_no_error_streak",
    "longest_no_error_streak",
    "gold_n",
    "gold_accuracy",
    "gold_accuracy_low",
    "gold_accuracy_high",
    *(f"gold_{part}" for part in scoring.PARTS),
    *(f"gold_{part}_n" for part in scoring.PARTS),
    "qualification",
    "paused",
    "flags",
]


def quality_csv_rows(report: dict) -> list[list]:
    """The dashboard's CSV: ``CSV_HEADER`` then one row per annotator (shares as fractions, empty when unknown)."""

    def cell(value: Any) -> Any:
        return "" if value is None else (round(value, 4) if isinstance(value, float) else value)

    rows: list[list] = [CSV_HEADER]
    for a in report["annotators"]:
        gold = a["gold"]
        parts = {p["part"]: p for p in gold["parts"]}
        interval = gold["interval"] or [None, None]
        rows.append(
            [
                a["annotator"],
                a["answers"],
                cell(a["no_error_rate"]),
                cell(report["project_figures"]["no_error_rate"]),
                cell(a["median_time_s"]),
                a["identical_corrections"]["identical"],
                a["identical_corrections"]["n"],
                a["agreement"]["pairs"],
                cell(a["agreement"]["exact"]),
                a["streak"]["current_no_error"],
                a["streak"]["longest_no_error"],
                gold["n"],
                cell(gold["share"]),
                cell(interval[0]),
                cell(interval[1]),
                *(cell(parts[p]["share"]) for p in scoring.PARTS),
                *(parts[p]["n"] for p in scoring.PARTS),
                a["qualification"] or "",
                "yes" if a["paused"] else "",
                "; ".join(f["flag"] for f in a["flags"]),
            ]
        )
    return rows


def quality_dashboard(project: Project, period: DateRange) -> dict:
    """Each annotator's quality over ``period`` (an ``annotation.dashboards.DateRange``): gold accuracy overall and
    per part (n, 95 % Wilson interval; gold answers of the real queue, not the qualification's), agreement with peers
    (the double-annotated pairs they are in: exact and ±1), median seconds per trace, the "no error" rate beside the
    project's, the share of corrections identical to the recorded action, the current and longest "no error" streak
    (all time), the qualification, whether their queue is paused, and the flags (``annotator_flags``). Production
    answers only; the reads run at once, as the project dashboard's."""
    from annotation.dashboards import _read_at_once

    settings = quality_settings(project)
    figures = _read_at_once(
        {
            "gold": lambda: gold_accuracy_by_annotator(project, first_day=period.first_day, last_day=period.last_day),
            "rollup": lambda: _verdicts_times_and_corrections(project, period),
            "agreement": lambda: _agreement_by_annotator(project, period),
        }
    )
    figures["verdicts"], median_times, figures["identical"] = figures.pop("rollup")
    tallies = {
        t.annotator_id: t
        for t in QueueTally.objects.filter(project_id=project.pk).only(
            "annotator_id", "no_error_streak", "longest_no_error_streak"
        )
    }
    pauses = {p.annotator_id: p for p in QueuePause.objects.filter(project_id=project.pk)}
    attempts: dict[int, str] = {}
    for annotator_id, status in (
        QualificationAttempt.objects.filter(project_id=project.pk)
        .order_by("number")
        .values_list("annotator_id", "status")
    ):
        if attempts.get(annotator_id) != QualificationStatus.PASSED:
            attempts[annotator_id] = status
    from traces.models import Membership

    members = set(
        Membership.objects.filter(project_id=project.pk, user__groups__name="annotator").values_list(
            "user_id", flat=True
        )
    )
    ids = members | set(figures["gold"]) | set(figures["verdicts"]) | set(tallies) | set(pauses)
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    total: Counter = Counter()
    for counts in figures["verdicts"].values():
        total.update(counts)
    answers_all = sum(total.values())
    annotators = []
    for annotator_id in sorted(ids, key=lambda k: names.get(k, "")):
        verdicts = figures["verdicts"].get(annotator_id, Counter())
        answers = sum(verdicts.values())
        corrections, identical = figures["identical"].get(annotator_id, (0, 0))
        tally = tallies.get(annotator_id)
        name = names.get(annotator_id, str(annotator_id))
        row = {
            "annotator": name,
            "annotator_id": annotator_id,
            "answers": answers,
            "no_error_rate": verdicts[Verdict.NO_ERROR] / answers if answers else None,
            "median_time_s": median_times.get(annotator_id),
            "identical_corrections": {
                "n": corrections,
                "identical": identical,
                "share": identical / corrections if corrections else None,
            },
            "agreement": figures["agreement"].get(name, {"pairs": 0, "exact": None, "within_one": None}),
            "streak": {
                "current_no_error": tally.no_error_streak if tally else 0,
                "longest_no_error": tally.longest_no_error_streak if tally else 0,
            },
            "gold": gold_figures(figures["gold"].get(annotator_id)),
            "qualification": attempts.get(annotator_id),
            "paused": annotator_id in pauses,
            "pause_reason": pauses[annotator_id].reason if annotator_id in pauses else "",
        }
        row["flags"] = annotator_flags(figures=row, settings=settings)
        annotators.append(row)
    gold_all: Counter = Counter()
    for row in figures["gold"].values():
        gold_all.update(row)
    report = {
        "project": {"id": project.pk, "name": project.name},
        "range": {"from": period.first_day.isoformat(), "to": period.last_day.isoformat()},
        "settings": quality_settings_json(settings)["settings"],
        "project_figures": {
            "answers": answers_all,
            "no_error_rate": total[Verdict.NO_ERROR] / answers_all if answers_all else None,
            "gold": gold_figures(dict(gold_all)),
        },
        "annotators": annotators,
        "flagged": sum(1 for a in annotators if a["flags"]),
        "gold_changes": gold_changes(project),
    }
    report["csv"] = quality_csv_rows(report)
    return report
