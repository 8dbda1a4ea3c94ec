"""Pages: the annotator's queue (and the leads' lease list) and the workspace. Thin over selectors/services."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation import selectors, services
from annotation.access import access_annotation, annotations_for
from annotation.models import AnnotationKind, AnnotationStatus, Verdict
from annotation.quality import selectors as quality_selectors
from annotation.quality import services as quality_services
from annotation.quality.services import QueueClosed
from annotation.workflow import EDITABLE_BY_ANNOTATOR
from studio.inputs import id_from_text
from traces.access import access_project
from traces.selectors import awaits_instruction

# The session remembers whether the annotator last asked for the most doubtful traces first.
DOUBTFUL_FIRST_KEY = "annotation.doubtful_first"


def queue(request):
    # After a skip the workspace comes here naming the annotation, so the page can confirm what happened.
    skipped = None
    skipped_id = id_from_text(request.GET.get("skipped", ""))
    if skipped_id is not None:
        skipped = annotations_for(request.user, "annotation.work").filter(pk=skipped_id).first()
    return render(
        request,
        "annotation/queue.html",
        {
            # Each row says where the member stands with the project's qualification and whether a lead paused their
            # queue, with what to do, instead of offering a queue that would give nothing.
            "rows": quality_selectors.queue_with_quality(request.user),
            "skipped": skipped,
            "doubtful_first": request.session.get(DOUBTFUL_FIRST_KEY, False),
        },
    )


@require_POST
def next_trace(request, project_id: int):
    project = access_project(request.user, project_id, "annotation.work")
    doubtful_first = request.POST.get("order") == "suspicion"
    request.session[DOUBTFUL_FIRST_KEY] = doubtful_first  # the queue offers the annotator's last choice again
    try:
        claim = services.lease_next_trace(user=request.user, project=project, most_doubtful_first=doubtful_first)
    except QueueClosed as exc:
        # Paused, a failed qualification, too few gold traces to qualify: the qualification page says where the
        # member stands and what to do, never an empty queue.
        messages.info(request, exc.detail)
        return redirect("qualification", project_id=project.pk)
    if claim is None:
        messages.info(request, f"No trace of {project.name} is open to you right now.")
        return redirect("annotation-queue")
    # The order chosen in the queue goes with the trace, so the workspace's own "Next trace" hands out in it too.
    workspace_url = reverse("annotation-workspace", args=[claim[0].pk])
    return redirect(f"{workspace_url}?order=suspicion" if doubtful_first else workspace_url)


@require_POST
def lease_release(request, lease_id: int):
    """A lead frees a trace from the queue page's lease list (an already released lease: the same answer)."""
    lease = services.lease_release_by(actor=request.user, lease_id=lease_id, action="lease.manage")
    messages.success(request, f"Released {lease.user.username}'s lease on {lease.trace.external_id}.")
    return redirect("annotation-queue")


def workspace(request, annotation_id: int):
    annotation = access_annotation(request.user, annotation_id, "annotation.work")
    lease = None
    if annotation.status in EDITABLE_BY_ANNOTATOR:
        lease = services.lease_take_for_annotation(annotation=annotation, user=request.user, page=secrets.token_hex(8))
    payload = selectors.workspace_payload(annotation=annotation, lease=lease)
    # The fields each verdict keeps empty: the page empties them when a verdict is chosen (and names them in its
    # undo banner) by the server's own rule.
    payload["verdict_answers"] = {verdict: services.answer_for_verdict(verdict) for verdict in Verdict.values}
    return render(
        request,
        "annotation/workspace.html",
        {
            "annotation": annotation,
            "trace": annotation.trace,
            "project": annotation.trace.project,
            "payload": payload,
            "editable": annotation.status in EDITABLE_BY_ANNOTATOR,
            "lease": lease,
            "awaits_instruction": awaits_instruction(annotation.trace),
            # The lead's reason for sending it back, shown at the top until the annotator submits again.
            "returned_comment": annotation.review_comment if annotation.status == AnnotationStatus.REJECTED else "",
            "order": "suspicion" if request.GET.get("order") == "suspicion" else "",
            # A qualification answer goes on to its feedback once submitted (a gold answer of the real queue looks
            # like any other: no sign of it here).
            "qualification": _qualification_of(annotation),
            # Skip is offered where the server takes it (a qualification trace is answered, never skipped).
            "skip_refusal": quality_services.skip_refusal(annotation),
        },
    )


def _qualification_of(annotation) -> dict | None:
    """For a qualification answer: its feedback page and the attempt's progress (the workspace's header says it)."""
    if annotation.kind != AnnotationKind.QUALIFICATION:
        return None
    state = quality_selectors.qualification_state(user=annotation.annotator, project=annotation.trace.project)
    attempt = state["attempts"][-1] if state["attempts"] else None
    return {"feedback_url": reverse("annotation-feedback", args=[annotation.pk]), "attempt": attempt}
