"""Who reaches which slice or cluster: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from insights.models import Cluster, ClusterRun, Slice
from studio.access import access, scoped


def access_slice(user, pk, action: str) -> Slice:
    return access(user, Slice.objects.select_related("project"), pk, action)


def slices_for(user, action: str = "slice.view") -> QuerySet[Slice]:
    return scoped(user, Slice.objects.select_related("project"), action)


def access_cluster(user, pk, action: str) -> Cluster:
    return access(user, Cluster.objects.select_related("run", "run__project"), pk, action)


def access_cluster_run(user, pk, action: str) -> ClusterRun:
    return access(user, ClusterRun.objects.select_related("project"), pk, action)
