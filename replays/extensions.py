"""The trace page's replays: each correction's replay requests and their branches beside the trace from τ on."""

from __future__ import annotations

from replays import selectors
from traces.extensions import TracePanel, trace_panel_register


def _replays_panel(user, trace) -> dict | None:
    requests = selectors.replays_of_trace(trace)
    if not requests:
        return None
    standing = selectors.verifications({r.annotation_id for r in requests})
    return {"replays": [{**selectors.branch_view(r), "verification": standing.get(r.annotation_id)} for r in requests]}


trace_panel_register(
    TracePanel(
        name="replays",
        template="replays/_trace_replays.html",
        context=lambda user, trace: _replays_panel(user, trace) or {},
        order=60,
    )
)
