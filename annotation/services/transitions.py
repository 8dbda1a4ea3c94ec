"""Status changes and edits of an annotation. Every status change goes through ``annotation_transition`` and every
edit through ``annotation_record_edit``, so the audit trail is written in the same transaction as the change. An
accept may complete its trace's round: ``round_mark_annotated`` (the rule reads annotations, so it lives here, not in
traces/)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import events
from annotation.models import Annotation, AnnotationStatus, AuditEvent, Verdict
from annotation.quality.rollup import answer_rollup_update
from annotation.workflow import STANDING, check_transition
from studio.db import atomic_with_retry, row_insert
from studio.signals import correction_accepted, round_annotated
from traces.models import Round, Trace

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import QuerySet


def annotation_transition(
    *, annotation: Annotation, to: str, actor: User, comment: str = "", changes: dict | None = None
) -> Annotation:
    """Move an annotation along the state machine and audit it; the caller holds the row lock."""
    assert transaction.get_connection().in_atomic_block, "annotation_transition runs inside the caller's transaction"
    from_status = annotation.status
    check_transition(from_status, to)
    now = timezone.now()
    annotation.status = to
    annotation.version += 1
    if to == AnnotationStatus.SUBMITTED:
        annotation.submitted_at = now
    if to in (AnnotationStatus.ACCEPTED, AnnotationStatus.REJECTED):
        annotation.reviewed_at = now
        annotation.reviewed_by = actor
        annotation.review_comment = comment
    annotation.save()
    standing_change = (to in STANDING) - (from_status in STANDING)
    if standing_change:
        Trace.objects.filter(pk=annotation.trace_id).update(
            standing_annotations=F("standing_annotations") + standing_change
        )
    # The quality dashboard's counts move with the status, in this transaction (a draft save never moves them).
    answer_rollup_update(annotation=annotation)
    _audit_event_create(
        annotation=annotation,
        actor=actor,
        kind="transition",
        from_status=from_status,
        to_status=to,
        changes=changes or {},
        comment=comment,
    )
    events.annotation_changed(annotation=annotation, verb=check_transition(from_status, to))  # sent after commit
    round_id = (
        Trace.objects.filter(pk=annotation.trace_id).values_list("round_id", flat=True).first()
        if to == AnnotationStatus.ACCEPTED
        else None
    )
    if to == AnnotationStatus.ACCEPTED and annotation.verdict == Verdict.ERROR and annotation.corrected_action:
        accepted = annotation
        transaction.on_commit(lambda: correction_accepted.send(sender=Annotation, annotation=accepted, actor=actor))
    if round_id is not None:
        # After the commit, so the round is judged on what is stored (and a rolled-back accept changes nothing).
        transaction.on_commit(lambda: round_mark_annotated(round_id=round_id))
    return annotation


@atomic_with_retry
def round_mark_annotated(*, round_id: int) -> Round | None:
    """Record that every trace of the round has an accepted answer, the first time it is so; returns the round
    then (and sends ``studio.signals.round_annotated`` after the commit), else None. A round with no traces is not
    annotated. Later imports into the round or answers sent back do not send it again: it is the first completion."""
    with transaction.atomic():
        round_ = Round.objects.select_for_update().filter(pk=round_id, annotated_at__isnull=True).first()
        if round_ is None:
            return None
        traces = Trace.objects.filter(round_id=round_id)
        accepted = Annotation.objects.filter(trace__round_id=round_id, status=AnnotationStatus.ACCEPTED)
        if not traces.exists() or traces.exclude(pk__in=accepted.values("trace_id")).exists():
            return None
        round_.annotated_at = timezone.now()
        round_.save(update_fields=["annotated_at"])
        transaction.on_commit(lambda: round_annotated.send(sender=Round, round=round_))
    return round_


def trace_recount_standing_annotations(*, traces: QuerySet[Trace]) -> int:
    """Set ``Trace.standing_annotations`` of ``traces`` (a queryset) from their annotations: for rows written
    around the state machine (bulk loads, repairs). Returns how many traces were updated."""
    standing = (
        Annotation.objects.filter(trace=OuterRef("pk"), status__in=STANDING)
        .order_by()
        .values("trace")
        .annotate(n=Count("id"))
        .values("n")
    )
    return traces.update(standing_annotations=Coalesce(Subquery(standing), 0))


def annotation_record_edit(*, annotation: Annotation, actor: User, changes: dict, comment: str = "") -> None:
    """Audit an edit: ``changes`` maps field -> [before, after]. Empty changes write nothing."""
    if changes:
        _audit_event_create(
            annotation=annotation,
            actor=actor,
            kind="edit",
            from_status=annotation.status,
            to_status=annotation.status,
            changes=changes,
            comment=comment,
        )


def _audit_event_create(*, annotation: Annotation, **fields: Any) -> AuditEvent:
    """The one place audit rows are made, with the annotation's project and annotator copied onto them (an
    INSERT compiled once: the same row and signals as ``objects.create``)."""
    event = AuditEvent(
        annotation=annotation,
        project_id=annotation.project_id,
        annotator_id=annotation.annotator_id,
        version=annotation.version,
        **fields,
    )
    row_insert(event)
    return event


# --- Refusals (studio.errors kinds; the API, pages and sockets give each kind its one answer) ---------------
