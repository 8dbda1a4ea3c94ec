"""The replays' page actions (the panel on the trace page posts here); thin: the services do the work."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from replays import services
from replays.access import access_replay
from studio.errors import Invalid


@require_POST
def replay_queue(request, replay_id: int):
    """Send the replay's failed branch to the annotation queue; back to the original trace's page."""
    replay = access_replay(request.user, replay_id, "replay.request")
    try:
        branch = services.replay_branch_send_to_queue(request=replay, actor=request.user)
    except Invalid as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, f"Branch {branch.external_id} is in the annotation queue.")
    return redirect("trace-detail", replay.trace_id)
