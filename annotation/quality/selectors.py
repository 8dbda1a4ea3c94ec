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

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.utils.translation import gettext, gettext_noop

from annotation.models import (
    STANDING_CORRECTION,
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
from annotation.quality import scoring
from annotation.selectors import target_box_of, verdict_words
from studio.errors import Invalid
from studio.words import in_words
from traces.models import Step, Trace

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


def quality_settings(project) -> QualitySettings:
    """The project's settings (the defaults, unsaved, for a project that never changed them)."""
    return QualitySettings.objects.filter(project_id=project.pk).first() or QualitySettings(project_id=project.pk)


def quality_settings_json(settings: QualitySettings) -> dict:
    return {
        "settings": {name: getattr(settings, name) for name in SETTING_NAMES},
        "help": SETTING_HELP,
        "gold_traces": GoldTrace.objects.filter(project_id=settings.project_id).count(),
    }


# --- What scoring reads ------------------------------------------------------------------------------------------


def gold_answer_of(annotation: Annotation, *, project) -> scoring.GoldAnswer:
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


def gold_screen(*, trace, tau: int | None, project) -> scoring.Screen:
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
            raise Invalid(f"{annotator} has no answer on trace {trace.external_id}")
        return chosen
    chosen = (
        answers.filter(status=AnnotationStatus.ACCEPTED).order_by("-is_adjudicated", "-reviewed_at", "-id").first()
        or answers.order_by("-updated_at", "-id").first()
    )
    if chosen is None:
        raise Invalid(f"trace {trace.external_id} has no answer yet; a gold trace needs an accepted answer")
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
        return "it has no verdict"
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


def unseen_gold(*, user, project) -> QuerySet[GoldTrace]:
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


def gold_list(project, *, limit: int = 500) -> dict:
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


def feedback_refusal(annotation: Annotation, user) -> str:
    """Why ``user`` may not see ``annotation``'s comparison with its reference now ("" when they may). The annotator
    sees it for a qualification answer once it is submitted; a gold answer in the real queue stays unmarked to them
    (a gold trace looks like any other). Leads see every scored answer's."""
    from studio.access import can

    if annotation.annotator_id == user.pk and not can(user, "quality.view", annotation.trace.project):
        if annotation.kind != AnnotationKind.QUALIFICATION:
            return "There is no feedback for this answer."
        if annotation.status == AnnotationStatus.DRAFT:
            return "Feedback comes once you submit this answer."
    if annotation.kind == AnnotationKind.PRODUCTION:
        return "There is no feedback for this answer."
    if not GoldScore.objects.filter(annotation=annotation).exists():
        return "This answer has not been scored (it is not submitted, or its gold trace was removed first)."
    return ""


def answer_feedback(annotation: Annotation, *, reader) -> dict:
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


def qualification_state(*, user, project) -> dict:
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


def attempt_answers(attempt_ids) -> dict[int, list[dict]]:
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


def qualification_overview(project) -> list[dict]:
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


def queue_with_quality(user) -> list[dict]:
    """The annotator's queue rows (``annotation.selectors.queue_for_user``), each with ``qualification``: where the
    user stands (``qualification_state``), so the page says why the queue is closed instead of showing it empty."""
    from annotation.selectors import queue_for_user

    rows = queue_for_user(user)
    for row in rows:
        row["qualification"] = qualification_state(user=user, project=row["project"])
    return rows


# --- Accuracy, for the dashboard and the exports --------------------------------------------------------------


def _part_aggregates() -> dict:
    out = {"n": Count("id"), "right": Count("id", filter=Q(correct=True))}
    for part in scoring.PARTS:
        out[f"{part}__n"] = Count("id", filter=Q(**{f"{part}_ok__isnull": False}))
        out[f"{part}__right"] = Count("id", filter=Q(**{f"{part}_ok": True}))
    out["removed"] = Count("id", filter=Q(gold__isnull=True) | Q(gold_removed_at__isnull=False))
    out["rescored"] = Count("id", filter=Q(rescored_at__isnull=False))
    return out


def gold_accuracy_by_annotator(project, *, since=None, until=None) -> dict[int, dict]:
    """Per annotator id: their gold answers (production-queue gold, not qualification) scored in the range, right
    overall and part by part, from one grouped read of ``GoldScore``."""
    scores = GoldScore.objects.filter(project_id=project.pk, kind=AnnotationKind.GOLD)
    if since is not None:
        scores = scores.filter(submitted_at__gte=since)
    if until is not None:
        scores = scores.filter(submitted_at__lt=until)
    grouped = scores.values("annotator_id").annotate(**_part_aggregates()).order_by()
    return {row["annotator_id"]: {k: v for k, v in row.items() if k != "annotator_id"} for row in grouped}


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


def annotators_below_gold_bar(project, bar: float) -> dict[int, dict]:
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


def _verdicts_and_times(project, period) -> tuple[dict[int, Counter], dict[int, float | None]]:
    """Per annotator id: their done answers' verdicts (``dashboards._done``) and median seconds per trace
    (``dashboards.median_time_by``'s exact median of whole seconds), from one grouped read that the index
    ``annotation_done_day_idx`` answers alone."""
    from annotation.dashboards import _done, _median_of_counts

    # COUNT(*), not of a column the index lacks, so that PostgreSQL reads the index alone.
    rows = _done(project, period).values_list("annotator_id", "verdict", "time_spent_s").annotate(n=Count("*"))
    verdicts: dict[int, Counter] = defaultdict(Counter)
    seconds: dict[int, Counter] = defaultdict(Counter)
    for annotator_id, verdict, spent, n in rows.order_by():
        verdicts[annotator_id][verdict] += n
        seconds[annotator_id][spent] += n
    return verdicts, {annotator_id: _median_of_counts(counts) for annotator_id, counts in seconds.items()}


def _identical_corrections(project, period) -> dict[int, tuple[int, int]]:
    """Per annotator id: (standing error answers with a correction, those whose corrected action is the recorded
    one: the action of step τ). The corrections are counted from the index ``annotation_correction_idx``; the
    identical ones are found from the steps, each step's text's hash looked up in ``annotation_correction_text_idx``
    and the texts then compared, so only the equal corrections are read from the table."""
    from annotation.dashboards import _done
    from annotation.workflow import STANDING

    corrections = _done(project, period, STANDING).filter(STANDING_CORRECTION)
    counted = dict(corrections.values_list("annotator_id").annotate(n=Count("*")).order_by())
    # Steps first: each step's text hashed and looked up among the standing corrections at that step (an expression
    # index), the few with the same hash then compared in full. The same statement runs on SQLite (Django gives it MD5).
    annotation, step, trace = Annotation._meta.db_table, Step._meta.db_table, Trace._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT a.annotator_id, COUNT(*) FROM {step} s
            JOIN {annotation} a ON a.trace_id = s.trace_id AND a.tau = s."index"
                 AND MD5(a.corrected_action) = MD5(s.action_text) AND a.corrected_action = s.action_text
            WHERE s.trace_id IN (SELECT id FROM {trace} WHERE project_id = %s) AND a.kind = %s AND a.status IN (%s, %s) AND a.verdict = %s
              AND NOT (a.corrected_action = '') AND a.submitted_at >= %s AND a.submitted_at < %s
            GROUP BY a.annotator_id
            """,  # noqa: S608  (table names from the models, every value a parameter)
            [
                project.pk,
                AnnotationKind.PRODUCTION,
                *sorted(STANDING),
                Verdict.ERROR,
                period.since,
                period.until,
            ],
        )
        same = cursor.fetchall()
    identical = dict(same)
    return {annotator_id: (n, identical.get(annotator_id, 0)) for annotator_id, n in counted.items()}


PAIR_READ_BATCH = 10_000


def _agreement_by_annotator(project, period) -> dict[str, dict]:
    """Per annotator's name: the double-annotated pairs they are in (``agreement.agreement_report``'s pairs: a
    trace's first two standing production answers submitted in the range, by id) and the share whose answers agree
    exactly and within one step. Reads the two answers per trace only, each by an indexed subquery, instead of every
    standing answer of the project: a trace of a busy project has dozens, and the pairs need two."""
    from annotation.workflow import STANDING

    standing = Annotation.objects.filter(
        trace_id=OuterRef("pk"), status__in=STANDING, kind=AnnotationKind.PRODUCTION
    ).order_by("id")
    if period.since is not None:
        standing = standing.filter(submitted_at__gte=period.since)
    if period.until is not None:
        standing = standing.filter(submitted_at__lt=period.until)
    firsts = (
        Trace.objects.filter(project_id=project.pk, standing_annotations__gte=2)
        .annotate(
            first=Subquery(standing.values("id")[:1]),
            second=Subquery(standing.values("id")[1:2]),
        )
        .filter(second__isnull=False)
        .values_list("first", "second")
    )
    pairs = list(firsts)
    ids = [pk for pair in pairs for pk in pair]
    # Each answer as agreement compares it (``agreement._answer``): the verdict, and τ for a first error only.
    answers: dict[int, tuple[str, str, int | None]] = {}
    for start in range(0, len(ids), PAIR_READ_BATCH):  # SQLite bounds a statement's parameters
        for pk, annotator, verdict, tau in Annotation.objects.filter(
            pk__in=ids[start : start + PAIR_READ_BATCH]
        ).values_list("pk", "annotator__username", "verdict", "tau"):
            error = verdict == Verdict.ERROR
            answers[pk] = (annotator, "error" if error else (verdict or "undecided"), tau if error else None)
    per: dict[str, Counter] = defaultdict(Counter)
    for first, second in pairs:
        (name_a, verdict_a, tau_a), (name_b, verdict_b, tau_b) = answers[first], answers[second]
        exact = (verdict_a, tau_a) == (verdict_b, tau_b)
        within = exact or (
            verdict_a == verdict_b == "error" and tau_a is not None and tau_b is not None and abs(tau_a - tau_b) <= 1
        )
        for name in (name_a, name_b):
            counts = per[name]
            counts["pairs"] += 1
            counts["exact"] += exact
            counts["within_one"] += within
    return {
        name: {
            "pairs": c["pairs"],
            "exact": c["exact"] / c["pairs"],
            "within_one": c["within_one"] / c["pairs"],
        }
        for name, c in per.items()
    }


def gold_changes(project, *, limit: int = 20) -> list[dict]:
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

    def cell(value):
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


def quality_dashboard(project, period) -> dict:
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
            "gold": lambda: gold_accuracy_by_annotator(project, since=period.since, until=period.until),
            "verdicts_and_times": lambda: _verdicts_and_times(project, period),
            "identical": lambda: _identical_corrections(project, period),
            "agreement": lambda: _agreement_by_annotator(project, period),
        }
    )
    figures["verdicts"], median_times = figures.pop("verdicts_and_times")
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
