"""The one place that broadcasts live events to the project groups of the channel layer.

Services call these inside their transaction: the send is registered with ``transaction.on_commit``, so a
client never hears of a change that was rolled back, and hears of it only once it can read it back.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from annotation.models import AnnotationKind, GoldTrace

log = logging.getLogger(__name__)

# The consumer method that relays a group message to its socket (Channels maps "studio.event" -> studio_event).
RELAY_TYPE = "studio.event"


# Who may know which traces are gold (the leads): the events that would tell it go to their sockets only.
GOLD_SEEN_BY = "gold.manage"


def project_group(project_id: int) -> str:
    return f"project.{project_id}"


def gold_group(project_id: int) -> str:
    """The sockets of the project's members who may know which traces are gold (``GOLD_SEEN_BY``)."""
    return f"project.{project_id}.gold"


def member_group(project_id: int, user_id: int) -> str:
    """One member's sockets of a project where they may not know which traces are gold (a socket is in this group or
    in the gold group, never both): they hear of their own gold answers and leases as of any other."""
    return f"project.{project_id}.member.{user_id}"


def _send_now(groups: list[str], event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, {"type": RELAY_TYPE, "event": event})
        except Exception:  # the change is committed; a lost live event only delays a screen until its next reload
            log.exception("could not broadcast %s to %s", event.get("type"), group)


def broadcast(*, project_id: int, event: dict, tells_gold: bool = False, owner_id: int | None = None) -> None:
    """Send ``event`` to every socket of the project once the current transaction commits. An event that
    ``tells_gold`` (a gold or qualification answer's, a gold trace's lease, quality figures) goes only to the sockets
    of those who may know which traces are gold and to those of the member it is about (``owner_id``): an annotator
    hearing every submit of a trace handed to everyone, or quality figures moving right after their own submit,
    would know it was gold, and one hearing nothing of their own submit too."""
    groups = [project_group(project_id)]
    if tells_gold:
        groups = [gold_group(project_id)] + ([member_group(project_id, owner_id)] if owner_id is not None else [])
    transaction.on_commit(lambda: _send_now(groups, event))


def _is_gold_trace(trace_id: int) -> bool:
    return GoldTrace.objects.filter(trace_id=trace_id).exists()


def annotation_changed(*, annotation, verb: str) -> None:
    """An annotation was submitted, reviewed or adjudicated (``verb`` names which)."""
    broadcast(
        tells_gold=annotation.kind != AnnotationKind.PRODUCTION,
        owner_id=annotation.annotator_id,
        project_id=annotation.trace.project_id,
        event={
            "type": "annotation",
            "verb": verb,
            "annotation_id": annotation.pk,
            "project_id": annotation.trace.project_id,
            "trace_id": annotation.trace_id,
            "status": annotation.status,
            "annotator": annotation.annotator.username,
            "is_adjudicated": annotation.is_adjudicated,
        },
    )


def lease_changed(*, lease, state: str) -> None:
    """A lease was taken (``state`` "open") or released ("released"): the presence lists follow it."""
    broadcast(
        tells_gold=_is_gold_trace(lease.trace_id),
        owner_id=lease.user_id,
        project_id=lease.trace.project_id,
        event={
            "type": "lease",
            "state": state,
            "lease_id": lease.pk,
            "trace_id": lease.trace_id,
            "user": lease.user.username,
            "reason": lease.release_reason,
        },
    )


def presence_event(*, trace_id: int, user: str, state: str) -> dict:
    """A page opened ("open") or closed ("closed") a trace; the consumer sends it (no transaction involved)."""
    return {"type": "presence", "state": state, "trace_id": trace_id, "user": user}


def quality_changed(*, project_id: int, annotator: str) -> None:
    """An annotator's quality figures moved (a gold answer scored, answers re-scored — ``annotator`` "" —, a queue
    paused or resumed): the quality dashboard reads its figures and flags again."""
    broadcast(
        tells_gold=True,
        project_id=project_id,
        event={"type": "quality", "project_id": project_id, "annotator": annotator},
    )
