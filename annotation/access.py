"""Who reaches which annotation, lease and history entry: named entry points to studio.access (the one engine).

Annotating (``annotation.work``) reaches one's own annotations only, a lead's too (reviewing is
``annotation.review``); releasing a lease (``lease.release``) one's own, leads any of their projects'; the history
(``annotation.history``) one's own entries, leads everyone's. studio.permissions.RULES says so once.
"""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Annotation, AuditEvent, GoldTrace, Lease
from studio.access import access, scoped


def access_annotation(who, pk, action: str | None = None, *, lock: bool = False) -> Annotation:
    return access(who, Annotation.objects.select_related("trace__project"), pk, action, lock=lock)


def access_gold(who, pk, action: str | None = None, *, lock: bool = False) -> GoldTrace:
    return access(
        who, GoldTrace.objects.select_related("trace__project", "reference__annotator"), pk, action, lock=lock
    )


def access_lease(who, pk, action: str | None = None, *, lock: bool = False) -> Lease:
    return access(who, Lease.objects.select_related("trace__project", "user"), pk, action, lock=lock)


def annotations_for(user, action: str) -> QuerySet[Annotation]:
    return scoped(user, Annotation.objects.select_related("trace__project"), action)


def leases_for(user, action: str) -> QuerySet[Lease]:
    return scoped(user, Lease.objects.select_related("trace__project", "user"), action)


def history_for(user, events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
    """The audit entries of ``events`` that ``user`` may read (annotation.history)."""
    return scoped(user, events, "annotation.history")
