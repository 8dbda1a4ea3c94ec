"""The replays' page actions (the panel on the trace page posts here); thin: the services do the work."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from replays import services
from replays.access import access_replay
from studio.errors import Invalid
from studio.inputs import form_number
from traces.access import access_project


@require_POST
def replay_policy(request, project_id: int):
    """Save the project's replay rule and clocks (the settings page's replay section); back to the settings page."""
    project = access_project(request.user, project_id, "replay.request")
    try:
        services.replay_policy_set(
            project=project,
            every_accepted_correction=request.POST.get("every_accepted_correction") == "on",
            deadline_s=form_number(request.POST, "deadline_s", int, None),
            lease_s=form_number(request.POST, "lease_s", int, None),
        )
    except Invalid as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Replay settings saved.")
    return redirect("project-settings", project.pk)


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
