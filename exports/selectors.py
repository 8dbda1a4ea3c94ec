"""Reads for exports, scoped to what the user may see."""

from __future__ import annotations

from django.db.models import QuerySet

from exports.access import export_jobs_for
from exports.models import ExportJob


def export_jobs_for_user(user, *, project=None) -> QuerySet[ExportJob]:
    """The exports ``user`` sees (export.view: engineers, leads, admins, in their projects), newest first."""
    jobs = export_jobs_for(user, "export.view")
    if project is not None:
        jobs = jobs.filter(project=project)
    return jobs.order_by("-created_at", "-id")
