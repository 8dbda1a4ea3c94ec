"""Reads for exports, scoped to what the user may see."""

from __future__ import annotations

from django.db.models import QuerySet

from exports.models import ExportJob
from studio.permissions import has_permission
from traces.selectors import projects_for_user


def export_jobs_for_user(user, *, project=None) -> QuerySet[ExportJob]:
    if not has_permission(user, "export.view"):
        return ExportJob.objects.none()
    jobs = ExportJob.objects.filter(project__in=projects_for_user(user)).select_related("project", "created_by")
    if project is not None:
        jobs = jobs.filter(project=project)
    return jobs.order_by("-created_at", "-id")
