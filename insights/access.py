"""Who reaches which slice or cluster: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from insights.models import Cluster, ClusterRun, Slice
from studio.access import access, scoped


def access_slice(who, pk, action: str | None = None) -> Slice:
    return access(who, Slice.objects.select_related("project"), pk, action)


def slices_for(user, action: str = "slice.view") -> QuerySet[Slice]:
    return scoped(user, Slice.objects.select_related("project"), action)


def access_cluster(who, pk, action: str | None = None) -> Cluster:
    return access(who, Cluster.objects.select_related("run", "run__project"), pk, action)


def access_cluster_run(who, pk, action: str | None = None) -> ClusterRun:
    return access(who, ClusterRun.objects.select_related("project"), pk, action)
