"""Queue requests: a lead sends traces back to the queue for one more answer each, first in line (a slice of
corrections read again: agreement on exactly the mistakes under study), and takes such a request back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import transaction

from annotation.models import Annotation, AnnotationStatus, QueueRequest
from annotation.overlap import quota_needed_for_one_more
from traces.models import Trace

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.models import Project


def queue_request_create(*, project: Project, trace_ids: Iterable[int], user: User, reason: str = "") -> dict:
    """Ask for one more answer on each trace of ``project`` in ``trace_ids`` than it has now, first in line.
    Idempotent while nobody answers: sending the same traces twice asks once. Returns what was asked and left."""
    traces = list(Trace.objects.filter(project=project, pk__in=list(trace_ids)).values_list("pk", flat=True))
    answers: dict[int, int] = {}
    for trace_id in (
        Annotation.objects.filter(trace_id__in=traces)
        .exclude(status=AnnotationStatus.DRAFT)
        .values_list("trace_id", flat=True)
    ):
        answers[trace_id] = answers.get(trace_id, 0) + 1
    asked = 0
    with transaction.atomic():
        existing = {r.trace_id: r for r in QueueRequest.objects.select_for_update().filter(trace_id__in=traces)}
        for trace_id in traces:
            extra = quota_needed_for_one_more(trace_id=trace_id, project=project, answers=answers.get(trace_id, 0))
            request = existing.get(trace_id)
            if request is None:
                QueueRequest.objects.create(
                    trace_id=trace_id, project=project, extra_answers=extra, reason=reason[:200], requested_by=user
                )
                asked += 1
            elif request.extra_answers < extra:
                request.extra_answers, request.reason, request.requested_by = extra, reason[:200], user
                request.save(update_fields=["extra_answers", "reason", "requested_by"])
                asked += 1
    return {"requested": asked, "already_requested": len(traces) - asked, "traces": len(traces)}


def queue_request_withdraw(*, project: Project, trace_ids: Iterable[int]) -> dict:
    """Take the requests on these traces back: answers already given stay; the traces leave the front of the queue
    and need only what the project's overlap gives them."""
    deleted, _ = QueueRequest.objects.filter(project=project, trace_id__in=list(trace_ids)).delete()
    return {"withdrawn": deleted}
