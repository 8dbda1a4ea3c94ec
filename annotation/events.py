"""The one place that broadcasts live events to the project groups of the channel layer.

Services call these inside their transaction: the send is registered with ``transaction.on_commit``, so a
client never hears of a change that was rolled back, and hears of it only once it can read it back.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

# The consumer method that relays a group message to its socket (Channels maps "studio.event" -> studio_event).
RELAY_TYPE = "studio.event"


def project_group(project_id: int) -> str:
    return f"project.{project_id}"


def _send_now(project_id: int, event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(project_group(project_id), {"type": RELAY_TYPE, "event": event})
    except Exception:  # the change is committed; a lost live event only delays a screen until its next reload
        log.exception("could not broadcast %s to project %s", event.get("type"), project_id)


def broadcast(*, project_id: int, event: dict) -> None:
    """Send ``event`` to every socket of the project once the current transaction commits."""
    transaction.on_commit(lambda: _send_now(project_id, event))


def annotation_changed(*, annotation, verb: str) -> None:
    """An annotation was submitted, reviewed or adjudicated (``verb`` names which)."""
    broadcast(
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
    broadcast(project_id=project_id, event={"type": "quality", "project_id": project_id, "annotator": annotator})
