"""Double annotation: which traces of a project go to several annotators (the agreement figures read their answers).

One rule, read by the lease hand-out (who may still take a trace), by the leads' list of traces waiting for another
answer and by the demo seed: the project's share, plus the extra answers a lead requested for a trace
(``QueueRequest``: a slice sent back to the queue)."""

from __future__ import annotations

import hashlib

from django.db.models import IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def project_quota(*, trace_id: int, project) -> int:
    """How many distinct annotators the project's overlap gives a trace: ``double_annotation_annotators`` for a
    stable share (``double_annotation_share``) of its traces, chosen by a hash of the trace's id (the same traces
    whoever asks, and a raised share keeps the traces shared before), else 1."""
    share = project.double_annotation_share
    if share <= 0:
        return 1
    bucket = int(hashlib.sha256(f"trace:{trace_id}".encode()).hexdigest()[:8], 16) / 2**32
    return max(2, project.double_annotation_annotators) if bucket < share else 1


def trace_annotation_quota(*, trace_id: int, project) -> int:
    """How many distinct annotators a trace needs: the project's overlap plus the extra answers a lead requested."""
    from annotation.models import QueueRequest

    extra = QueueRequest.objects.filter(trace_id=trace_id).values_list("extra_answers", flat=True).first() or 0
    return project_quota(trace_id=trace_id, project=project) + extra


def project_max_quota(project) -> int:
    """The most annotators the project's overlap gives any trace (without requested extras)."""
    return max(2, project.double_annotation_annotators) if project.double_annotation_share > 0 else 1


def quota_bound(project):
    """An upper bound of each trace's quota as an SQL expression over a Trace queryset's rows (the hand-out's first
    filter; ``trace_annotation_quota`` decides exactly after the row lock): the project's most plus the trace's
    requested extra answers."""
    from annotation.models import QueueRequest

    extra = Subquery(QueueRequest.objects.filter(trace=OuterRef("pk")).values("extra_answers")[:1])
    return Value(project_max_quota(project)) + Coalesce(extra, Value(0), output_field=IntegerField())


def quota_needed_for_one_more(*, trace_id: int, project, answers: int) -> int:
    """The extra answers a trace needs so that one more annotator than the ``answers`` it has may take it."""
    return max(0, answers + 1 - project_quota(trace_id=trace_id, project=project))
