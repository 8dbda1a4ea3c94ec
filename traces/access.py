"""Who reaches which project, trace and job: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.access import access, scoped
from traces.models import ImportJob, Project, Round, Trace


def access_project(who, pk, action: str | None = None, *, lock: bool = False) -> Project:
    return access(who, Project, pk, action, lock=lock)


def access_trace(who, pk, action: str | None = None, *, lock: bool = False) -> Trace:
    return access(who, Trace.objects.select_related("project"), pk, action, lock=lock)


def access_round(who, pk, action: str | None = None, *, lock: bool = False) -> Round:
    return access(who, Round.objects.select_related("project"), pk, action, lock=lock)


def access_import_job(who, pk, action: str | None = None, *, lock: bool = False) -> ImportJob:
    return access(who, ImportJob.objects.select_related("project"), pk, action, lock=lock)


def projects_for(user, action: str = "project.view") -> QuerySet[Project]:
    return scoped(user, Project.objects.all(), action)


def traces_for(user, action: str = "trace.view") -> QuerySet[Trace]:
    return scoped(user, Trace.objects.select_related("project"), action)


def import_jobs_for(user, action: str = "job.view") -> QuerySet[ImportJob]:
    return scoped(user, ImportJob.objects.select_related("project"), action)


def rounds_for(user, action: str = "round.view") -> QuerySet[Round]:
    return scoped(user, Round.objects.select_related("project"), action)
