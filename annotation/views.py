"""Pages: the annotator's queue (and the leads' lease list) and the workspace. Thin over selectors/services."""

from __future__ import annotations

import secrets

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation import selectors, services
from annotation.models import AnnotationStatus, Lease
from annotation.workflow import EDITABLE_BY_ANNOTATOR
from studio.permissions import has_permission
from traces.selectors import awaits_instruction, projects_for_user


@login_required
def queue(request):
    # After a skip the workspace comes here naming the annotation, so the page can confirm what happened.
    skipped = None
    if request.GET.get("skipped", "").isdigit():
        skipped = (
            selectors.own_annotations(request.user)
            .select_related("trace")
            .filter(pk=int(request.GET["skipped"]))
            .first()
        )
    return render(
        request, "annotation/queue.html", {"rows": selectors.queue_for_user(request.user), "skipped": skipped}
    )


@login_required
@require_POST
def next_trace(request, project_id: int):
    project = get_object_or_404(projects_for_user(request.user), pk=project_id)
    if not has_permission(request.user, "annotation.work", project):
        raise PermissionDenied("Your role does not annotate in this project.")
    claim = services.lease_next_trace(
        user=request.user, project=project, most_doubtful_first=request.POST.get("order") == "suspicion"
    )
    if claim is None:
        messages.info(request, f"No trace of {project.name} is open to you right now.")
        return redirect("annotation-queue")
    return redirect("annotation-workspace", annotation_id=claim[0].pk)


@login_required
@require_POST
def lease_release(request, lease_id: int):
    lease = get_object_or_404(
        Lease.objects.select_related("trace__project"), pk=lease_id, trace__project__in=projects_for_user(request.user)
    )
    if not has_permission(request.user, "lease.manage", lease.trace.project):
        raise PermissionDenied("Only leads of this project release leases.")
    services.lease_release(lease_id=lease.pk, actor=request.user, reason="released-by-lead")
    messages.success(request, f"Released {lease.user.username}'s lease on {lease.trace.external_id}.")
    return redirect("annotation-queue")


@login_required
def workspace(request, annotation_id: int):
    annotation = get_object_or_404(selectors.own_annotations(request.user), pk=annotation_id)
    if not has_permission(request.user, "annotation.work", annotation.trace.project):
        raise PermissionDenied("Your role does not annotate in this project.")
    lease = None
    if annotation.status in EDITABLE_BY_ANNOTATOR:
        lease = services.lease_take_for_annotation(annotation=annotation, user=request.user, page=secrets.token_hex(8))
    payload = selectors.workspace_payload(annotation=annotation, lease=lease)
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
        },
    )
