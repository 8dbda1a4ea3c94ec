"""Who reaches which export: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from exports.models import ExportJob
from studio.access import access, scoped


def access_export_job(who, pk, action: str | None = None, *, lock: bool = False) -> ExportJob:
    return access(who, ExportJob.objects.select_related("project", "created_by"), pk, action, lock=lock)


def export_jobs_for(user, action: str = "export.view") -> QuerySet[ExportJob]:
    return scoped(user, ExportJob.objects.select_related("project", "created_by"), action)
