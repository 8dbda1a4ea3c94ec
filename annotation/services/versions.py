"""Restoring a saved version of an annotation: its answer written back as a new version, through the draft's write."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.translation import gettext

from annotation.access import access_annotation
from annotation.models import Annotation, AnnotationStatus
from annotation.quality.rollup import answer_rollup_update
from annotation.selectors import RESTORED_PREFIX, annotation_version_values
from annotation.services.drafts import DRAFT_FIELDS, DRAFT_TEXT_FIELDS, EMPTY_EDITOR, answer_write
from annotation.services.errors import NotEditable, _conflict_fields
from annotation.workflow import EDITABLE_BY_ANNOTATOR
from studio.access import can
from studio.db import atomic_with_retry
from studio.errors import NotFound

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def restore_refusal(annotation: Annotation, user: User) -> str:
    """Why ``user`` may not restore a version of ``annotation`` now ("" when they may). Restoring is editing, so it
    follows the rules of editing: the annotator while the answer is theirs to change (draft, rejected), a lead of the
    project while it waits for review (submitted: it stays submitted, for the lead's decision). An accepted answer is
    changed only by adjudication, so no version is restored into it."""
    if annotation.annotator_id == user.pk and annotation.status in EDITABLE_BY_ANNOTATOR:
        return ""
    if annotation.status == AnnotationStatus.SUBMITTED and can(user, "annotation.review", annotation):
        return ""
    if annotation.status == AnnotationStatus.ACCEPTED:
        return gettext(
            "This annotation is accepted; an accepted answer changes only by adjudication, not by a restore."
        )
    if annotation.status == AnnotationStatus.SUBMITTED:
        return gettext(
            "This annotation is submitted and waits for review; a lead may restore a version until it is decided."
        )
    return gettext("This annotation is %(status)s: its annotator restores its versions.") % {
        "status": annotation.get_status_display().lower()
    }


def _restorable(values: dict) -> dict:
    """A version's values as the draft write takes them (rows written before a field existed hold null)."""
    fields = {name: values[name] for name in DRAFT_FIELDS}
    fields["verdict"] = fields["verdict"] or ""
    fields["editor_state"] = {**EMPTY_EDITOR, **(fields["editor_state"] or {})}
    for name in DRAFT_TEXT_FIELDS:
        fields[name] = fields[name] or ""
    return fields


@atomic_with_retry
def annotation_restore_version(*, annotation_id: int, user: User, number: int, base_version: int) -> Annotation:
    """Write version ``number``'s answer back as a new version (audited "Restored version n"), through the draft's
    one write: the same field, verdict and τ rules, and a stale ``base_version`` is refused (409) as a draft is."""
    annotation = access_annotation(user, annotation_id, "annotation.restore", lock=True)
    refusal = restore_refusal(annotation, user)
    if refusal:
        raise NotEditable(refusal, **_conflict_fields(annotation))
    values = annotation_version_values(annotation, number)
    if values is None:
        raise NotFound(
            gettext("Annotation %(id)s has no version %(number)s (its versions go up to %(last)s).")
            % {"id": annotation.pk, "number": number, "last": annotation.version}
        )
    restored = answer_write(
        annotation=annotation,
        user=user,
        base_version=base_version,
        fields=_restorable(values),
        comment=f"{RESTORED_PREFIX}{number}",
    )
    if restored.status not in EDITABLE_BY_ANNOTATOR:
        # A lead's restore into a handed-in answer changes what the quality dashboard counts (an annotator's, into
        # their draft or rejected answer, is a draft save: counted when handed in).
        answer_rollup_update(annotation=restored)
    return restored
