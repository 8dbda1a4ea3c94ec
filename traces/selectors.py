"""Reads for projects, traces and steps, always scoped to what the user may see."""

from __future__ import annotations

from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet

from traces.access import traces_for
from traces.models import Project, Step, Trace

# A trace whose instruction is blank waits for a lead to write it (the trace page's instruction form) before anyone
# annotates it: without the task, neither the annotator's judgement nor a training prompt means anything. The same
# rule as a query (AWAITING_INSTRUCTION) and for one trace (awaits_instruction); blank = empty or only whitespace.
AWAITING_INSTRUCTION = Q(instruction__regex=r"^\s*$")


def awaits_instruction(trace: Trace) -> bool:
    return not trace.instruction.strip()


def traces_awaiting_instruction(traces: QuerySet[Trace]) -> QuerySet[Trace]:
    return traces.filter(AWAITING_INSTRUCTION)


def traces_ready_to_annotate(traces: QuerySet[Trace]) -> QuerySet[Trace]:
    return traces.exclude(AWAITING_INSTRUCTION)


TRACE_STATES = ("awaiting-instruction",)


def traces_for_user(user, *, project: Project | None = None, search: str = "", state: str = "") -> QuerySet[Trace]:
    """The traces ``user`` may see, each marked ``awaiting_instruction``; ``state`` keeps one of TRACE_STATES."""
    traces = (
        traces_for(user, "trace.view")
        .select_related("project")
        .annotate(awaiting_instruction=ExpressionWrapper(AWAITING_INSTRUCTION, output_field=BooleanField()))
    )
    if project is not None:
        traces = traces.filter(project=project)
    if state == "awaiting-instruction":
        traces = traces.filter(AWAITING_INSTRUCTION)
    if search:
        traces = traces.filter(Q(instruction__icontains=search) | Q(external_id__icontains=search))
    return traces.order_by("id")


def trace_steps(trace: Trace) -> QuerySet[Step]:
    return trace.steps.select_related("screenshot").order_by("index")
