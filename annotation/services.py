"""Writes for annotations. Every status change goes through ``annotation_transition`` and every edit
through ``annotation_record_edit``, so the audit trail is written in the same transaction as the change."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.models import Annotation, AnnotationStatus, AuditEvent
from annotation.workflow import check_transition


def annotation_transition(*, annotation: Annotation, to: str, actor, comment: str = "", changes: dict | None = None) -> Annotation:
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
    AuditEvent.objects.create(
        annotation=annotation, actor=actor, kind="transition", from_status=from_status, to_status=to,
        changes=changes or {}, comment=comment,
    )
    return annotation


def annotation_record_edit(*, annotation: Annotation, actor, changes: dict) -> None:
    """Audit an edit: ``changes`` maps field -> [before, after]. Empty changes write nothing."""
    if changes:
        AuditEvent.objects.create(
            annotation=annotation, actor=actor, kind="edit", from_status=annotation.status,
            to_status=annotation.status, changes=changes,
        )
