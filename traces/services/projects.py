"""Writes for projects: create one, its members, its settings, its deletion with everything it holds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils.translation import gettext

from studio.db import atomic_with_retry
from studio.errors import Conflict, Invalid
from studio.jobs import job_delete
from studio.words import counted
from traces.extensions import category_refusal
from traces.models import Membership, Project, Trace
from traces.selectors import project_jobs

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def project_create(*, name: str, members: Iterable[User] = (), **fields: Any) -> Project:
    project = Project.objects.create(name=name, **fields)
    for user in members:
        membership_add(project=project, user=user)
    return project


def membership_add(*, project: Project, user: User) -> Membership:
    membership, _ = Membership.objects.get_or_create(project=project, user=user)
    return membership


class ProjectRefused(Invalid):
    """A project set-up that cannot be saved as asked: ``field`` is the form field it concerns (also in the
    answer's body), the message says why."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)
        self.field = field


# Settings a lead may choose; the rest (prompt template, pixel budget, leases) stay with their defaults or the admin.
PROJECT_SETTINGS = (
    "name",
    "description",
    "platform",
    "coordinate_convention",
    "history_window",
    "history_full_images",
    "history_max_pixels",
    "error_categories",
    "double_annotation_share",
    "double_annotation_annotators",
    "text_language",
)


@atomic_with_retry
def project_save(
    *, actor: User | None, fields: dict, members: Iterable[User] | None = None, project: Project | None = None
) -> Project:
    """Create a project (``project`` None) or change its settings, and set its members when ``members`` is given.

    Refused: changing the coordinate convention once traces are stored (their points were read in the old one;
    a new project takes the new convention), and dropping an error category that another app's rows name
    (``traces.extensions``' category guards: annotation's annotations). A lead who
    creates or manages a project stays one of its members (else the page would lock them out of it)."""
    unknown = set(fields) - set(PROJECT_SETTINGS)
    if unknown:
        raise ProjectRefused(
            sorted(unknown)[0],
            gettext("not a project setting: %(settings)s") % {"settings": ", ".join(sorted(unknown))},
        )
    if project is not None:
        project = Project.objects.select_for_update().get(pk=project.pk)
        convention = fields.get("coordinate_convention", project.coordinate_convention)
        stored = project.traces.count() if convention != project.coordinate_convention else 0
        if stored:
            raise ProjectRefused(
                "coordinate_convention",
                gettext(
                    "This project already holds %(traces)s whose points are read in %(convention)s; changing the "
                    "convention would move every point. Create a new project with %(new)s instead."
                )
                % {"traces": counted(stored, Trace), "convention": project.coordinate_convention, "new": convention},
            )
        dropped = [
            c for c in project.error_categories if c not in fields.get("error_categories", project.error_categories)
        ]
        refusal = category_refusal(project, dropped) if dropped else ""  # rows of other apps that name them
        if refusal:
            raise ProjectRefused("error_categories", refusal)
    else:
        project = Project()
    for name, value in fields.items():
        setattr(project, name, value)
    project.save()
    if members is not None:
        wanted = {user.pk for user in members}
        if not getattr(actor, "is_superuser", False) and actor is not None:
            wanted.add(actor.pk)
        project.memberships.exclude(user_id__in=wanted).delete()
        for user_id in wanted - set(project.memberships.values_list("user_id", flat=True)):
            Membership.objects.create(project=project, user_id=user_id)
    elif actor is not None and not getattr(actor, "is_superuser", False):
        membership_add(project=project, user=actor)
    return project


class ProjectDeleteRefused(Conflict):
    """A project cannot be deleted now: a job of it is still queued or running (its worker would write into rows
    that are going away); the message names the jobs."""


# Traces deleted per transaction: each batch's cascade (steps, annotations, their events and suggestions) is read
# into memory by Django's collector, so the batch bounds the memory and the lock time, whatever the project's size.
PROJECT_DELETE_BATCH = 500


def project_delete(*, project: Project, batch: int = PROJECT_DELETE_BATCH) -> dict[str, int]:
    """Delete a project with everything it holds: traces in batches of ``batch`` (a million-trace project is never
    loaded at once: ``project.delete()`` read every dependent row into memory, over 1.5 GB at a million pairs), its
    jobs and their shards, then the files only its jobs own (export bundles and their parts, import uploads and
    parts). Screenshots stay: they are stored once by content and other projects may show them.

    Refused while a job of the project is queued or running. Each batch commits on its own, so an interrupted
    deletion (a restart, a timeout) leaves a smaller project that the next call finishes. Returns what it removed."""
    jobs = project_jobs(project)
    unfinished = [job for job in jobs if not job.is_finished]
    if unfinished:
        named = ", ".join(f"{job._meta.verbose_name} {job.pk} ({job.status})" for job in unfinished[:5])
        more = gettext(" and %(count)s more") % {"count": len(unfinished) - 5} if len(unfinished) > 5 else ""
        raise ProjectDeleteRefused(
            gettext(
                "The project %(project)s has jobs that have not ended: %(jobs)s%(more)s. "
                "Cancel them or let them end, then delete the project."
            )
            % {"project": repr(project.name), "jobs": named, "more": more}
        )
    removed = {"traces": 0, "jobs": len(jobs)}
    while ids := list(project.traces.order_by("pk").values_list("pk", flat=True)[: max(1, batch)]):
        with transaction.atomic():
            Trace.objects.filter(pk__in=ids).delete()
        removed["traces"] += len(ids)
    for job in jobs:
        job_delete(job)  # with its shards (no foreign key: they would outlive it) and then its files
    project.delete()
    return removed
