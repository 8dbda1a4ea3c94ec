"""Writes for annotations, in three rooms: ``transitions`` (every status change through ``annotation_transition``,
every edit through ``annotation_record_edit``, each with its audit record in the same transaction), ``leases`` (who
holds which trace now) and ``drafts`` (the annotator's answer: saves, the action check, submit, skip); ``errors``
holds the conflicts they share. Callers import the public names from here."""

from annotation.services.drafts import (
    DRAFT_FIELDS,
    DRAFT_TEXT_FIELDS,
    EDITOR_SLOTS,
    EMPTY_EDITOR,
    ERROR_ANSWER,
    UNUSABLE_ANSWER,
    action_check,
    annotation_save_draft,
    annotation_seed_demo,
    annotation_skip,
    annotation_submit,
    answer_after_tau_move,
    answer_for_verdict,
    answer_write,
    editor_box,
    observation_for,
    submit_problems,
)
from annotation.services.errors import LeaseLost, NotEditable, SkipRefused, StaleVersion, SubmitRejected
from annotation.services.leases import (
    HEARTBEAT_CREDIT_CAP_S,
    lease_heartbeat,
    lease_next_trace,
    lease_release_by,
    lease_take_for_annotation,
    trace_annotation_quota,
)
from annotation.services.requests import queue_request_create, queue_request_withdraw
from annotation.services.transitions import (
    annotation_record_edit,
    annotation_transition,
    round_mark_annotated,
    trace_recount_standing_annotations,
)
from annotation.services.versions import annotation_restore_version, restore_refusal

__all__ = [
    "DRAFT_FIELDS",
    "DRAFT_TEXT_FIELDS",
    "EDITOR_SLOTS",
    "EMPTY_EDITOR",
    "ERROR_ANSWER",
    "HEARTBEAT_CREDIT_CAP_S",
    "UNUSABLE_ANSWER",
    "LeaseLost",
    "NotEditable",
    "StaleVersion",
    "SkipRefused",
    "SubmitRejected",
    "action_check",
    "annotation_record_edit",
    "annotation_restore_version",
    "annotation_save_draft",
    "annotation_seed_demo",
    "annotation_skip",
    "annotation_submit",
    "annotation_transition",
    "answer_after_tau_move",
    "answer_for_verdict",
    "answer_write",
    "editor_box",
    "lease_heartbeat",
    "lease_next_trace",
    "lease_release_by",
    "lease_take_for_annotation",
    "observation_for",
    "restore_refusal",
    "round_mark_annotated",
    "submit_problems",
    "trace_annotation_quota",
    "queue_request_create",
    "queue_request_withdraw",
    "trace_recount_standing_annotations",
]
