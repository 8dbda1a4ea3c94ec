"""Who reaches which pre-scoring job: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from prescoring.models import PrescoreJob
from studio.access import access, scoped


def access_prescore_job(who, pk, action: str | None = None, *, lock: bool = False) -> PrescoreJob:
    return access(who, PrescoreJob.objects.select_related("project"), pk, action, lock=lock)


def prescore_jobs_for(user, action: str = "job.view") -> QuerySet[PrescoreJob]:
    return scoped(user, PrescoreJob.objects.select_related("project"), action)
