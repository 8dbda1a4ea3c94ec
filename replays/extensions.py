"""The trace page's replays: each correction's replay requests and their branches beside the trace from τ on."""

from __future__ import annotations

from replays import selectors
from replays.services import replay_policy_of
from studio.access import can
from traces.extensions import (
    ProjectSettingsSection,
    TracePanel,
    project_settings_section_register,
    trace_panel_register,
)


def _replays_panel(user, trace) -> dict | None:
    requests = selectors.replays_of_trace(trace)
    if not requests:
        return None
    standing = selectors.verifications({r.annotation_id for r in requests})
    return {
        "replays": [
            {
                **selectors.branch_view(r),
                "verification": standing.get(r.annotation_id),
                "verification_words": selectors.VERIFICATION_WORDS.get(standing.get(r.annotation_id) or "", ""),
            }
            for r in requests
        ]
    }


trace_panel_register(
    TracePanel(
        name="replays",
        template="replays/_trace_replays.html",
        context=lambda user, trace: _replays_panel(user, trace) or {},
        order=60,
        on_review=True,
    )
)


def _policy_section(user, project) -> dict | None:
    """The settings page's replay section: the project's rule and clocks, for those who may ask for replays."""
    if not can(user, "replay.request", project):
        return None
    return {"policy": replay_policy_of(project), "counts": selectors.verification_counts_by_round(project)}


project_settings_section_register(
    ProjectSettingsSection(name="replays", template="replays/_settings_replays.html", context=_policy_section)
)
