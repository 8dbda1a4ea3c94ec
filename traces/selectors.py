"""Reads for projects, traces and steps, always scoped to what the user may see."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from studio.permissions import Role, user_roles
from traces.models import ImportJob, Project, Step, Trace


def projects_for_user(user) -> QuerySet[Project]:
    if Role.ADMIN in user_roles(user):
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user)


def traces_for_user(user, *, project: Project | None = None, search: str = "") -> QuerySet[Trace]:
    traces = Trace.objects.filter(project__in=projects_for_user(user)).select_related("project")
    if project is not None:
        traces = traces.filter(project=project)
    if search:
        traces = traces.filter(Q(instruction__icontains=search) | Q(external_id__icontains=search))
    return traces.order_by("id")


def trace_steps(trace: Trace) -> QuerySet[Step]:
    return trace.steps.select_related("screenshot").order_by("index")


def import_jobs_for_user(user) -> QuerySet[ImportJob]:
    return ImportJob.objects.filter(project__in=projects_for_user(user)).select_related("project")
