"""Writes of quality control: a project's settings, gold traces (marked one by one, from a file, removed), the score
of each gold answer at submit and again when its reference changes, qualification attempts, paused queues, and what
the lease hand-out asks of them (``queue_gate``, ``gold_slot_due``, ``gold_trace_pick``, ``queue_tally_bump``).

The hand-out (``annotation.services.leases.lease_next_trace``) and the submit (``annotation.services.drafts.
annotation_submit``) call in here; nothing here calls back into ``annotation.services``."""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext

from annotation import events
from annotation.models import (
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
from annotation.quality.selectors import (
    gold_answer_of,
    gold_screen,
    quality_settings,
    reference_choice,
    reference_refusal,
    unseen_gold,
)
from studio.access import can
from studio.db import atomic_with_retry
from studio.errors import Conflict, Invalid, NotFound
from traces.models import Trace

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.models import Project

log = logging.getLogger(__name__)

# Users for whom ``quality.manage`` holds (leads, admins) write references and set the bar: no qualification gates
# their queue.
EXEMPT_ACTION = "quality.manage"


class GoldRefused(Invalid):
    """An answer that cannot be a reference (a draft, rejected, unusable, a gold answer itself), said why."""


class QueueClosed(Conflict):
    """The hand-out gives this member nothing now, for a reason the page shows (``gate``): ``paused`` (a lead paused
    their queue), ``qualification_failed`` (the qualification was not passed; a lead may allow another attempt),
    ``qualification_unavailable`` (too few gold traces left for the qualification)."""


# --- Settings -------------------------------------------------------------------------------------------------

SETTING_RULES: dict[str, tuple[type, float, float | None]] = {
    # name: (type, lowest, highest or None)
    "gold_every": (int, 0, 1000),
    "point_tolerance": (float, 0, 1),
    "qualification_size": (int, 0, 500),
    "qualification_pass_mark": (float, 0, 1),
    "min_gold_accuracy": (float, 0, 1),
    "min_gold_answers": (int, 1, 100_000),
    "min_median_seconds": (int, 0, 86_400),
    "max_no_error_streak": (int, 1, 100_000),
}


def _setting_value(name: str, value: Any) -> Any:
    kind, low, high = SETTING_RULES[name]
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or (kind is int and value != int(value))
    ):
        said = (
            gettext("%(name)s must be a whole number, not %(value)s")
            if kind is int
            else gettext("%(name)s must be a number, not %(value)s")
        )
        raise Invalid(said % {"name": name, "value": repr(value)}, field=name)
    if value < low or (high is not None and value > high):
        raise Invalid(
            gettext("%(name)s must lie in %(low)s..%(high)s, not %(value)s")
            % {"name": name, "low": f"{low:g}", "high": f"{high:g}", "value": repr(value)},
            field=name,
        )
    return kind(value)


@atomic_with_retry
def quality_settings_save(*, project: Project, user: User, fields: dict) -> QualitySettings:
    """Change some of a project's quality settings (``SETTING_RULES`` names them and their bounds); an Invalid names
    the field. A qualification set larger than the project's gold traces is refused: nobody could finish it."""
    unknown = sorted(set(fields) - set(SETTING_RULES))
    if unknown:
        raise Invalid(
            gettext("unknown quality setting(s): %(names)s") % {"names": ", ".join(unknown)}, field=unknown[0]
        )
    values = {name: _setting_value(name, value) for name, value in fields.items()}
    row = QualitySettings.objects.select_for_update().filter(project=project).first() or QualitySettings(
        project=project
    )
    size = values.get("qualification_size", row.qualification_size)
    if size and "qualification_size" in values:
        gold = GoldTrace.objects.filter(project=project).count()
        if size > gold:
            raise Invalid(
                gettext(
                    "A qualification set of %(size)s gold traces is larger than this project's %(gold)s: mark more gold "
                    "traces first, or ask for at most %(gold)s."
                )
                % {"size": size, "gold": gold},
                field="qualification_size",
            )
    for name, value in values.items():
        setattr(row, name, value)
    row.updated_by = user
    row.save()
    return row


# --- Gold traces ----------------------------------------------------------------------------------------------


def _event(*, gold: GoldTrace | None, trace: Trace, actor: User | None, kind: str, detail: dict) -> GoldEvent:
    return GoldEvent.objects.create(
        project_id=trace.project_id,
        gold=gold,
        trace_id_kept=trace.pk,
        external_id=trace.external_id or "",
        actor=actor,
        kind=kind,
        detail=detail,
    )


def gold_mark(*, annotation: Annotation, user: User) -> tuple[GoldTrace, str]:
    """Make the accepted ``annotation`` its trace's reference; the caller holds a transaction. Returns the gold trace
    and what happened: ``marked``, ``unchanged`` (already the reference at this version) or ``reference_changed``
    (another answer, or this one changed since: every gold answer of the trace is scored again, audited). A draft,
    rejected, not yet reviewed or unusable answer, or a gold answer itself, is refused (GoldRefused, 400) naming why."""
    problem = reference_refusal(annotation)
    trace = annotation.trace
    if problem:
        raise GoldRefused(
            gettext("Answer %(answer)s of trace %(trace)s cannot be gold: %(problem)s.")
            % {"answer": annotation.pk, "trace": trace.external_id or trace.pk, "problem": problem},
            field="annotation",
        )
    gold = GoldTrace.objects.select_for_update().filter(trace=trace).first()
    if gold is None:
        gold = GoldTrace.objects.create(
            trace=trace,
            project_id=trace.project_id,
            reference=annotation,
            reference_version=annotation.version,
            marked_by=user,
        )
        _event(gold=gold, trace=trace, actor=user, kind="marked", detail={"reference": annotation.pk})
        return gold, "marked"
    if gold.reference_id == annotation.pk and gold.reference_version == annotation.version:
        return gold, "unchanged"
    before = {"reference": gold.reference_id, "version": gold.reference_version}
    gold.reference, gold.reference_version, gold.marked_by = annotation, annotation.version, user
    gold.save(update_fields=["reference", "reference_version", "marked_by"])
    counts = gold_rescore(gold=gold)
    _event(
        gold=gold,
        trace=trace,
        actor=user,
        kind="reference_changed",
        detail={"before": before, "after": {"reference": annotation.pk, "version": annotation.version}, **counts},
    )
    return gold, "reference_changed"


@atomic_with_retry
def gold_mark_answer(*, annotation_id: int, user: User) -> tuple[GoldTrace, str]:
    """``gold_mark`` of one answer by id (the API and page): a lead of its project (``gold.manage``)."""
    from annotation.access import access_annotation

    annotation = access_annotation(user, annotation_id, "gold.manage", lock=True)
    return gold_mark(annotation=annotation, user=user)


@dataclass(frozen=True)
class GoldRow:
    line: int
    external_id: str
    annotator: str = ""  # whose accepted answer is the reference ("": the one an export would take)
    problem: str = ""


GOLD_FILE_MAX_ROWS = 20_000


def gold_file_read(data: bytes, *, name: str = "") -> list[GoldRow]:
    """The rows of a gold file: CSV with the header ``external_id`` (and optionally ``annotator``), or JSONL objects
    with those keys, one trace a row. An Invalid names what makes the whole file unreadable; a row that cannot be
    read is kept as its line's problem."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Invalid(
            gettext("The gold file is not UTF-8 text: save it as UTF-8 CSV or JSONL."), field="file"
        ) from None
    if "\x00" in text:
        raise Invalid(gettext("The gold file holds NUL characters: it is not a text file."), field="file")
    rows: list[GoldRow] = []
    as_jsonl = name.lower().endswith((".jsonl", ".json")) or text.lstrip().startswith("{")
    if as_jsonl:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                rows.append(GoldRow(number, "", problem="not a JSON object"))
                continue
            if not isinstance(item, dict) or not isinstance(item.get("external_id"), str):
                rows.append(GoldRow(number, "", problem="needs an external_id (text)"))
                continue
            rows.append(GoldRow(number, item["external_id"].strip(), str(item.get("annotator") or "").strip()))
    else:
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames or "external_id" not in [f.strip() for f in reader.fieldnames]:
            raise Invalid(
                gettext("The gold file's CSV needs a header line with external_id (and optionally annotator).")
            )
        for row in reader:
            clean = {(k or "").strip(): (v or "").strip() for k, v in row.items() if isinstance(v, str)}
            rows.append(GoldRow(reader.line_num, clean.get("external_id", ""), clean.get("annotator", "")))
    if not rows:
        raise Invalid(gettext("The gold file has no rows: one line per trace, its external_id."), field="file")
    if len(rows) > GOLD_FILE_MAX_ROWS:
        raise Invalid(
            gettext("The gold file has %(rows)s rows; send at most %(most)s at once.")
            % {"rows": len(rows), "most": GOLD_FILE_MAX_ROWS},
            field="file",
        )
    return rows


def gold_mark_rows(*, project: Project, user: User, rows: list[GoldRow]) -> dict:
    """Mark each row's trace gold (its accepted answer as the reference: the named annotator's, else the one an
    export takes); each row on its own, so one refused row (said with its line) leaves the others marked. Returns
    ``{"marked", "unchanged", "reference_changed", "refused": [{"line", "external_id", "reason"}]}``."""
    report: dict = {"marked": 0, "unchanged": 0, "reference_changed": 0, "refused": []}
    seen: set[str] = set()
    for row in rows:
        reason = row.problem
        if not reason and not row.external_id:
            reason = "no external_id"
        if not reason and row.external_id in seen:
            reason = "this trace is named twice in the file"
        seen.add(row.external_id)
        if not reason:
            try:
                with transaction.atomic():
                    trace = Trace.objects.filter(project=project, external_id=row.external_id).first()
                    if trace is None:
                        raise NotFound(
                            gettext("no trace %(trace)s in %(project)s")
                            % {"trace": repr(row.external_id), "project": project.name}
                        )
                    annotation = reference_choice(trace=trace, annotator=row.annotator)
                    _, outcome = gold_mark(annotation=annotation, user=user)
                    report[outcome] += 1
                    continue
            except (Invalid, NotFound) as exc:
                reason = exc.detail
        report["refused"].append({"line": row.line, "external_id": row.external_id, "reason": reason})
    return report


@atomic_with_retry
def gold_remove(*, gold: GoldTrace, user: User) -> dict:
    """The trace is gold no more: nobody is handed it as gold again, and the scores it gave stay, marked as removed
    (``gold_removed_at``; the quality figures count them and say so). Audited."""
    gold = GoldTrace.objects.select_for_update().select_related("trace").get(pk=gold.pk)
    now = timezone.now()
    rollup.gold_scores_removed(scores=GoldScore.objects.filter(gold=gold))
    kept = GoldScore.objects.filter(gold=gold).update(gold_removed_at=now)
    _event(gold=None, trace=gold.trace, actor=user, kind="removed", detail={"scores_kept": kept})
    gold.delete()
    return {"scores_kept": kept}


# --- Scores ---------------------------------------------------------------------------------------------------


# A skipped gold answer is scored as an answer that says nothing: every part that applies is wrong.
SKIPPED = scoring.GoldAnswer(verdict="")


def _comparison(
    *, annotation: Annotation, gold: GoldTrace, settings: QualitySettings, skipped: bool = False
) -> scoring.Comparison:
    project = gold.trace.project
    reference = gold.reference
    return scoring.compare(
        SKIPPED if skipped else gold_answer_of(annotation, project=project),
        gold_answer_of(reference, project=project),
        screen=gold_screen(trace=gold.trace, tau=reference.tau, project=project),
        tolerance=settings.point_tolerance,
    )


def _comparison_json(comparison: scoring.Comparison, *, skipped: bool) -> dict:
    return {**comparison.as_dict(), "skipped": True} if skipped else comparison.as_dict()


def _was_skipped(score: GoldScore | None) -> bool:
    return score is not None and bool((score.comparison or {}).get("skipped"))


def skip_refusal(annotation: Annotation) -> str:
    """Why ``annotation`` may not be skipped, or "" (the skip service refuses with it; the workspace offers no Skip
    then). A qualification answer is answered, never skipped: skipping the hard ones would pass on the easy ones
    ("unusable" is the answer to a trace that cannot be judged). A gold answer of the real queue skips as any other
    trace (it must look like one), and its skip counts as a wrong answer (``gold_answer_skipped``)."""
    if annotation.kind == AnnotationKind.QUALIFICATION:
        return gettext(
            'A qualification trace cannot be skipped: answer it ("Unusable" is an answer, for a trace that cannot '
            "be judged)."
        )
    return ""


def gold_answer_skipped(*, annotation: Annotation) -> GoldScore | None:
    """A gold answer of the real queue skipped (``annotation_skip`` calls it in its transaction): scored as an answer
    that says nothing, so skipping a trace until one comes that is not gold gains nothing. The draft stays the
    annotator's as any skipped draft; its skip's score stands when it is handed in later (``gold_answer_score``).
    None for a production answer, or a trace that is gold no more."""
    if annotation.kind != AnnotationKind.GOLD:
        return None
    return gold_answer_score(annotation=annotation, skipped=True)


def _parts_fields(comparison: scoring.Comparison) -> dict:
    return {f"{part}_ok": comparison.parts[part] for part in scoring.PARTS} | {"correct": comparison.correct}


def gold_answer_score(
    *, annotation: Annotation, count_in_attempt: bool = True, skipped: bool = False
) -> GoldScore | None:
    """Score a submitted (or ``skipped``) gold or qualification answer against its trace's reference (the submit
    and the skip call it in their transaction); a qualification answer also counts in its attempt, which ends passed
    or failed with its last answer. An answer whose skip was scored keeps that score. None when the trace is gold no
    more (its gold was removed while the answer was open)."""
    gold = GoldTrace.objects.select_related("trace__project", "reference").filter(trace_id=annotation.trace_id).first()
    if gold is None:
        return None
    existing = GoldScore.objects.filter(annotation=annotation).first()
    if _was_skipped(existing):
        return existing
    settings = quality_settings(gold.trace.project)
    comparison = _comparison(annotation=annotation, gold=gold, settings=settings, skipped=skipped)
    attempt = None
    if annotation.kind == AnnotationKind.QUALIFICATION and count_in_attempt:
        attempt = (
            QualificationAttempt.objects.select_for_update()
            .filter(project_id=annotation.project_id, annotator_id=annotation.annotator_id, status="open")
            .first()
        )
    score, _ = GoldScore.objects.update_or_create(
        annotation=annotation,
        defaults={
            "gold": gold,
            "project_id": annotation.project_id,
            "annotator_id": annotation.annotator_id,
            "kind": annotation.kind,
            "attempt": attempt,
            "trace_id_kept": annotation.trace_id,
            "external_id": gold.trace.external_id or "",
            "reference_id_kept": gold.reference_id,
            "reference_version": gold.reference_version,
            "comparison": _comparison_json(comparison, skipped=skipped),
            "submitted_at": annotation.submitted_at or timezone.now(),
            **_parts_fields(comparison),
        },
    )
    rollup.gold_score_changed(before=existing, after=score)
    if attempt is not None:
        attempt.answered += 1
        attempt.correct += int(comparison.correct)
        if attempt.answered >= attempt.size:
            passed = attempt.correct >= attempt.pass_mark * attempt.size - 1e-9
            attempt.status = QualificationStatus.PASSED if passed else QualificationStatus.FAILED
            attempt.ended_at = timezone.now()
        attempt.save(update_fields=["answered", "correct", "status", "ended_at"])
    events.quality_changed(project_id=annotation.project_id, annotator=annotation.annotator.username)
    return score


def _streak_count(*, annotation: Annotation) -> None:
    """A production answer handed in: the annotator's "no error" run grows, or ends."""
    from django.db.models import F, Value
    from django.db.models.functions import Greatest

    no_error = annotation.verdict == Verdict.NO_ERROR
    tallies = QueueTally.objects.filter(project_id=annotation.project_id, annotator_id=annotation.annotator_id)
    if no_error:
        updated = tallies.update(
            no_error_streak=F("no_error_streak") + 1,
            longest_no_error_streak=Greatest(F("longest_no_error_streak"), F("no_error_streak") + 1),
        )
    else:
        updated = tallies.update(no_error_streak=Value(0))
    if not updated:
        QueueTally.objects.get_or_create(
            project_id=annotation.project_id,
            annotator_id=annotation.annotator_id,
            defaults={"no_error_streak": int(no_error), "longest_no_error_streak": int(no_error)},
        )


def answer_submitted(*, annotation: Annotation) -> GoldScore | None:
    """What quality control does when an answer is handed in (``annotation_submit`` calls it in its transaction): a
    gold or qualification answer is scored (``gold_answer_score``); a production answer counts in the "no error"
    streak, and the dashboard hears of it. In a savepoint: a failure here is logged and the answer stays submitted
    (``gold_rescore`` scores a gold answer later); the submit is never lost to it."""
    try:
        with transaction.atomic():
            if annotation.kind == AnnotationKind.PRODUCTION:
                _streak_count(annotation=annotation)
                events.quality_changed(project_id=annotation.project_id, annotator=annotation.annotator.username)
                return None
            return gold_answer_score(annotation=annotation)
    except Exception:  # noqa: BLE001 - any bug in scoring must not cost the annotator their submitted work
        log.exception("could not score answer %s for quality control", annotation.pk)
        return None


def gold_rescore(*, gold: GoldTrace) -> dict:
    """Score every gold answer of ``gold``'s trace again against its reference as it is now (the caller holds a
    transaction and audits it): each score keeps the comparison it had (``previous``) and ``rescored_at``. Scores of
    submitted answers missing a score are made. Returns ``{"rescored", "changed"}``."""
    gold = GoldTrace.objects.select_related("trace__project", "reference").get(pk=gold.pk)
    settings = quality_settings(gold.trace.project)
    now = timezone.now()
    rescored = changed = 0
    answers = Annotation.objects.filter(
        trace_id=gold.trace_id, kind__in=(AnnotationKind.GOLD, AnnotationKind.QUALIFICATION)
    )
    scored_skips = GoldScore.objects.filter(annotation__in=answers, comparison__skipped=True).values("annotation")
    # Submitted answers, and drafts whose skip was scored.
    scored = answers.filter(~Q(status=AnnotationStatus.DRAFT) | Q(pk__in=scored_skips))
    for annotation in scored.select_related("annotator"):
        score = GoldScore.objects.filter(annotation=annotation).first()
        if score is None:  # its submit's scoring failed: scored now, apart from its attempt (which went on without it)
            gold_answer_score(annotation=annotation, count_in_attempt=False)
            rescored += 1
            continue
        skipped = _was_skipped(score)
        comparison = _comparison(annotation=annotation, gold=gold, settings=settings, skipped=skipped)
        fields = _parts_fields(comparison)
        changed += any(getattr(score, name) != value for name, value in fields.items())
        before = copy.copy(score)
        score.previous = score.comparison
        score.comparison = _comparison_json(comparison, skipped=skipped)
        for name, value in fields.items():
            setattr(score, name, value)
        score.reference_id_kept, score.reference_version, score.rescored_at = (
            gold.reference_id,
            gold.reference_version,
            now,
        )
        score.save()
        rollup.gold_score_changed(before=before, after=score)
        rescored += 1
    if rescored:
        events.quality_changed(project_id=gold.project_id, annotator="")
    return {"rescored": rescored, "changed": changed}


def gold_reference_refresh(*, annotation: Annotation, actor: User | None = None) -> dict | None:
    """``annotation`` may be a reference that a lead just changed (an adjudication's edits; the caller holds the
    transaction): when it is one and its version moved, its gold trace's answers are scored again, audited as
    ``reference_changed`` with what changed. None when it is no reference or unchanged."""
    gold = (
        GoldTrace.objects.select_for_update()
        .select_related("trace", "reference")
        .filter(reference_id=annotation.pk)
        .first()
    )
    if gold is None or gold.reference.version == gold.reference_version:
        return None
    if reference_refusal(gold.reference):
        return None  # no longer a usable reference (sent back): the scores stay as they were until a lead re-marks
    before = gold.reference_version
    gold.reference_version = gold.reference.version
    gold.save(update_fields=["reference_version"])
    counts = gold_rescore(gold=gold)
    _event(
        gold=gold,
        trace=gold.trace,
        actor=actor,
        kind="reference_changed",
        detail={
            "before": {"reference": gold.reference_id, "version": before},
            "after": {"reference": gold.reference_id, "version": gold.reference_version},
            **counts,
        },
    )
    return counts


# --- Qualification --------------------------------------------------------------------------------------------


def _attempt_start(
    *, project: Project, annotator: User, settings: QualitySettings, allowed_by: User | None = None
) -> QualificationAttempt:
    number = (
        QualificationAttempt.objects.filter(project=project, annotator=annotator)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
        or 0
    ) + 1
    return QualificationAttempt.objects.create(
        project=project,
        annotator=annotator,
        number=number,
        size=settings.qualification_size,
        pass_mark=settings.qualification_pass_mark,
        allowed_by=allowed_by,
    )


@atomic_with_retry
def qualification_allow_retry(*, project: Project, annotator: User, actor: User) -> QualificationAttempt:
    """A lead lets ``annotator`` try the qualification again: a new attempt of the project's current size and pass
    mark, of gold traces they have not met. Refused (Conflict) while an attempt is open or after a pass, and when too
    few gold traces are left that they have not met."""
    attempts = QualificationAttempt.objects.select_for_update().filter(project=project, annotator=annotator)
    if attempts.filter(status=QualificationStatus.OPEN).exists():
        raise Conflict(
            gettext("%(user)s has a qualification attempt in progress already.") % {"user": annotator.username}
        )
    if attempts.filter(status=QualificationStatus.PASSED).exists():
        raise Conflict(gettext("%(user)s has passed the qualification already.") % {"user": annotator.username})
    settings = quality_settings(project)
    if not settings.qualification_size:
        raise Conflict(gettext("%(project)s asks for no qualification.") % {"project": project.name})
    left = unseen_gold(user=annotator, project=project).count()
    if left < settings.qualification_size:
        raise Conflict(
            gettext(
                "Only %(left)s gold traces are left that %(user)s has not met; another attempt needs %(size)s. "
                "Mark more gold traces first."
            )
            % {"left": left, "user": annotator.username, "size": settings.qualification_size}
        )
    return _attempt_start(project=project, annotator=annotator, settings=settings, allowed_by=actor)


def queue_gate(*, user: User, project: Project, settings: QualitySettings | None = None) -> QualificationAttempt | None:
    """What the hand-out may give ``user`` in ``project`` before anything else: raises QueueClosed (paused, a failed
    qualification, too few gold traces to qualify); returns the open qualification attempt whose next gold trace
    comes first, or None when the real queue is open to them. Makes the first attempt of a member who needs one.
    The caller holds a transaction."""
    pause = QueuePause.objects.filter(project=project, annotator=user).first()
    if pause is not None:
        said = (
            gettext("A lead paused your queue in %(project)s: %(reason)s. Ask them to resume it.")
            if pause.reason
            else gettext("A lead paused your queue in %(project)s. Ask them to resume it.")
        )
        raise QueueClosed(said % {"project": project.name, "reason": pause.reason}, gate="paused")
    settings = settings or quality_settings(project)
    if not settings.qualification_size or can(user, EXEMPT_ACTION, project):
        return None
    attempts = list(QualificationAttempt.objects.filter(project=project, annotator=user).order_by("-number"))
    if any(a.status == QualificationStatus.PASSED for a in attempts):
        return None
    open_attempt = next((a for a in attempts if a.status == QualificationStatus.OPEN), None)
    if open_attempt is not None:
        return open_attempt
    if attempts:
        last = attempts[0]
        raise QueueClosed(
            gettext(
                "You did not pass the qualification of %(project)s: %(correct)s of %(size)s answers right, "
                "%(needed)s needed. A lead can allow another attempt."
            )
            % {"project": project.name, "correct": last.correct, "size": last.size, "needed": _share(last.pass_mark)},
            gate="qualification_failed",
        )
    if unseen_gold(user=user, project=project).count() < settings.qualification_size:
        raise QueueClosed(
            gettext(
                "%(project)s asks new members to qualify on %(size)s gold traces, and too few are ready for you. "
                "A lead needs to mark more."
            )
            % {"project": project.name, "size": settings.qualification_size},
            gate="qualification_unavailable",
        )
    try:
        with transaction.atomic():
            return _attempt_start(project=project, annotator=user, settings=settings)
    except IntegrityError:  # the same member's other tab started it first
        return QualificationAttempt.objects.get(project=project, annotator=user, status=QualificationStatus.OPEN)


def _share(value: float) -> str:
    return f"{round(value * 100)} %"


# --- The hand-out's gold ----------------------------------------------------------------------------------------


def _offset(*, user_id: int, project_id: int, every: int) -> int:
    """Where in each run of ``every`` traces an annotator's gold trace falls: stable per annotator and project, and
    spread over annotators so that they do not all meet gold at the same count."""
    digest = hashlib.sha256(f"gold:{project_id}:{user_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % every


def gold_position_is_gold(*, position: int, user_id: int, project_id: int, every: int) -> bool:
    """Whether the annotator's ``position``-th new trace (0-based) is a gold one: one in ``every``, deterministic."""
    if every <= 0:
        return False
    return (position + _offset(user_id=user_id, project_id=project_id, every=every)) % every == every - 1


def gold_slot_due(*, user: User, project: Project, settings: QualitySettings | None = None) -> bool:
    """Whether the hand-out's next new trace for ``user`` should be a gold trace (``gold_every``; never for the
    people who write the references)."""
    settings = settings or quality_settings(project)
    if not settings.gold_every or can(user, EXEMPT_ACTION, project):
        return False
    position = (
        QueueTally.objects.filter(project=project, annotator=user).values_list("handed_out", flat=True).first() or 0
    )
    return gold_position_is_gold(position=position, user_id=user.pk, project_id=project.pk, every=settings.gold_every)


def queue_tally_bump(*, user: User, project: Project) -> None:
    """Count one more new trace handed to ``user`` (production or gold)."""
    from django.db.models import F

    if not QueueTally.objects.filter(project=project, annotator=user).update(handed_out=F("handed_out") + 1):
        try:
            with transaction.atomic():
                QueueTally.objects.create(project=project, annotator=user, handed_out=1)
        except IntegrityError:
            QueueTally.objects.filter(project=project, annotator=user).update(handed_out=F("handed_out") + 1)


def gold_trace_pick(*, user: User, project: Project) -> Trace | None:
    """The next gold trace for ``user``: one they never met (no answer of theirs on it, in any kind) and whose
    reference they did not write, lowest id first; None when none is left."""
    gold = unseen_gold(user=user, project=project).order_by("id").values_list("trace_id", flat=True).first()
    if gold is None:
        return None
    return Trace.objects.select_related("project").get(pk=gold)


def own_first_draft(*, user: User, project: Project) -> Annotation | None:
    """The user's unfinished answer in ``project`` that the hand-out resumes first (a draft they did not skip): a gold
    or qualification one before a production one, then the oldest; None when they have none. One read."""
    from django.db.models import Case, IntegerField, Value, When

    from annotation.models import Lease

    skipped = Lease.objects.filter(user=user, trace=OuterRef("trace"), release_reason="skipped")
    production_last = Case(
        When(kind=AnnotationKind.PRODUCTION, then=Value(1)), default=Value(0), output_field=IntegerField()
    )
    return (
        Annotation.objects.filter(annotator=user, project=project, status=AnnotationStatus.DRAFT)
        .exclude(Exists(skipped))
        .select_related("trace__project")
        .order_by(production_last, "id")
        .first()
    )


# --- Paused queues --------------------------------------------------------------------------------------------


@atomic_with_retry
def annotator_pause_set(*, project: Project, annotator: User, actor: User, paused: bool, reason: str = "") -> dict:
    """Pause (or resume) ``annotator``'s queue in ``project``: while paused the hand-out gives them nothing and says
    why (QueueClosed, ``gate`` "paused"); the traces they hold stay theirs. Answers ``{"annotator", "paused",
    "reason"}``."""
    from traces.models import Membership

    if not Membership.objects.filter(project=project, user=annotator).exists():
        raise Invalid(
            gettext("%(user)s is no member of %(project)s.") % {"user": annotator.username, "project": project.name},
            field="annotator",
        )
    if paused:
        QueuePause.objects.update_or_create(
            project=project, annotator=annotator, defaults={"paused_by": actor, "reason": reason[:200]}
        )
    else:
        QueuePause.objects.filter(project=project, annotator=annotator).delete()
    events.quality_changed(project_id=project.pk, annotator=annotator.username)
    return {"annotator": annotator.username, "paused": paused, "reason": reason[:200] if paused else ""}
