"""Reads for exports, scoped to what the user may see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import Count, Q, QuerySet
from django.utils.translation import gettext

from annotation.models import Annotation, AnnotationStatus
from exports import lineage
from exports.access import export_jobs_for
from exports.models import ExportJob
from studio.errors import Invalid
from studio.models import JobStatus
from traces.access import projects_for

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from exports.models import ExportJob
    from traces.models import Project


def export_jobs_for_user(user: User | AnonymousUser, *, project: Project | None = None) -> QuerySet[ExportJob]:
    """The exports ``user`` sees (export.view: engineers, leads, admins, in their projects), newest first."""
    jobs = export_jobs_for(user, "export.view")
    if project is not None:
        jobs = jobs.filter(project=project)
    return jobs.order_by("-created_at", "-id")


def export_projects_for_user(user: User) -> tuple[list, int | None]:
    """The projects ``user`` may export, by name, each with its count of accepted annotations (what a bundle
    holds), and the one the form offers first: the project with the most of them (an engineer of several projects
    should not export an empty one by default), or None when there is none."""
    projects = list(
        projects_for(user, "export.view")
        .annotate(accepted=Count("annotations", filter=Q(annotations__status=AnnotationStatus.ACCEPTED)))
        .order_by("name")
    )
    busiest = max(projects, key=lambda p: p.accepted, default=None)
    return projects, busiest.pk if busiest is not None else None


def export_previous(job: ExportJob) -> ExportJob | None:
    """The finished export of the same project made just before ``job`` (the default to compare it with)."""
    return (
        ExportJob.objects.filter(project_id=job.project_id, status=JobStatus.SUCCEEDED, pk__lt=job.pk)
        .order_by("-pk")
        .first()
    )


def export_diff(older: ExportJob, newer: ExportJob) -> lineage.BundleDiff:
    """Annotations added, removed and changed from ``older``'s bundle to ``newer``'s; raises Invalid naming why two
    exports cannot be compared."""
    if older.project_id != newer.project_id:
        raise Invalid(
            gettext("exports %(older)s and %(newer)s are of different projects; lineage compares one project")
            % {"older": older.pk, "newer": newer.pk}
        )
    for job in (older, newer):
        if job.sources is None:
            said = (
                gettext("export %(id)s has no lineage: it is %(status)s")
                if job.status != JobStatus.SUCCEEDED
                else gettext("export %(id)s was made before bundle lineage was kept")
            )
            raise Invalid(said % {"id": job.pk, "status": job.status})
    base_id = (newer.options or {}).get("since_export")
    held = held_by_base(base_id, older=older.sources or [], newer=newer.sources or [])
    return lineage.bundle_diff(older.sources or [], newer.sources or [], in_base=held)


def held_by_base(base_id: int | None, *, older: list, newer: list) -> list[tuple[int, int]]:
    """The pairs of ``older`` that an incremental bundle ``newer`` (built since export ``base_id``) left out because
    that base holds them at the same version: the base holds the pair, and the annotation is still accepted at that
    version (a version moves with every change, so it was unchanged when ``newer`` was built, which is what the
    export leaves out). Empty for a bundle that is not incremental or whose base is gone."""
    if base_id is None:
        return []
    base = ExportJob.objects.filter(pk=base_id).first()
    if base is None or base.sources is None:
        return []
    before, after, in_base = (
        lineage.sources_pairs(older),
        lineage.sources_pairs(newer),
        lineage.sources_pairs(base.sources),
    )
    candidates = {pk: v for pk, v in before.items() if pk not in after and in_base.get(pk) == v}
    ids = sorted(candidates)
    held = []
    for start in range(0, len(ids), 5000):
        rows = Annotation.objects.filter(pk__in=ids[start : start + 5000], status=AnnotationStatus.ACCEPTED)
        held += [(pk, v) for pk, v in rows.values_list("pk", "version") if candidates[pk] == v]
    return sorted(held)


def export_diff_rows(diff: lineage.BundleDiff) -> dict[str, list[dict]]:
    """The diff's annotations with their trace, for the page (one query)."""
    ids = [pk for pk, _ in diff.added] + [pk for pk, _ in diff.removed] + [pk for pk, _, _ in diff.changed]
    found = {a.pk: a for a in Annotation.objects.filter(pk__in=ids).select_related("trace", "annotator")}

    def row(pk: int, **versions: Any) -> dict:
        annotation = found.get(pk)
        return {
            "annotation_id": pk,
            "exists": annotation is not None,
            "trace_id": annotation.trace_id if annotation else None,
            "trace_name": (annotation.trace.external_id or f"trace {annotation.trace_id}") if annotation else "",
            "status": annotation.status if annotation else "deleted",
            "annotator": annotation.annotator.username if annotation and annotation.annotator else "",
            **versions,
        }

    return {
        "added": [row(pk, version=version) for pk, version in diff.added],
        "removed": [row(pk, version=version) for pk, version in diff.removed],
        "changed": [row(pk, from_version=old, to_version=new) for pk, old, new in diff.changed],
    }
