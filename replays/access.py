"""Who reaches which replay request: named entry points to studio.access (the one engine)."""

from __future__ import annotations

from django.db.models import QuerySet

from replays.models import ReplayRequest
from studio.access import access, scoped


def access_replay(who, pk, action: str | None = None, *, lock: bool = False) -> ReplayRequest:
    return access(who, ReplayRequest.objects.select_related("project", "trace"), pk, action, lock=lock)


def replays_for(user, action: str = "replay.view") -> QuerySet[ReplayRequest]:
    return scoped(user, ReplayRequest.objects.select_related("project"), action)
