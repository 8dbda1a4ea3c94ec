"""Who reaches which evaluation: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from evaluation.models import EvaluationJob
from studio.access import access, scoped


def access_evaluation_job(who, pk, action: str | None = None, *, lock: bool = False) -> EvaluationJob:
    return access(who, EvaluationJob.objects.select_related("project", "created_by"), pk, action, lock=lock)


def evaluation_jobs_for(user, action: str = "evaluation.view") -> QuerySet[EvaluationJob]:
    return scoped(user, EvaluationJob.objects.select_related("project", "created_by"), action)
