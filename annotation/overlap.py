"""Double annotation: which traces of a project go to several annotators (the agreement figures read their answers).

One rule, read by the lease hand-out (who may still take a trace), by the leads' list of traces waiting for another
answer and by the demo seed."""

from __future__ import annotations

import hashlib


def trace_annotation_quota(*, trace_id: int, project) -> int:
    """How many distinct annotators a trace needs: the project's ``double_annotation_annotators`` for a stable share
    (``double_annotation_share``) of its traces, chosen by a hash of the trace's id (the same traces whoever asks,
    and a raised share keeps the traces shared before), else 1."""
    share = project.double_annotation_share
    if share <= 0:
        return 1
    bucket = int(hashlib.sha256(f"trace:{trace_id}".encode()).hexdigest()[:8], 16) / 2**32
    return max(2, project.double_annotation_annotators) if bucket < share else 1


def project_max_quota(project) -> int:
    """The most annotators any trace of ``project`` needs (the hand-out's first, SQL, filter)."""
    return max(2, project.double_annotation_annotators) if project.double_annotation_share > 0 else 1
