"""Reads for projects, traces and steps, always scoped to what the user may see."""

from __future__ import annotations

from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet

from studio.errors import Invalid
from traces.access import traces_for
from traces.models import Project, Round, Step, Trace

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


def traces_for_user(
    user, *, project: Project | None = None, search: str = "", state: str = "", round: Round | None = None
) -> QuerySet[Trace]:
    """The traces ``user`` may see, each marked ``awaiting_instruction``; ``state`` keeps one of TRACE_STATES,
    ``round`` the traces of one round."""
    traces = (
        traces_for(user, "trace.view")
        .select_related("project", "round")
        .annotate(awaiting_instruction=ExpressionWrapper(AWAITING_INSTRUCTION, output_field=BooleanField()))
    )
    if project is not None:
        traces = traces.filter(project=project)
    if round is not None:
        traces = traces.filter(round=round)
    if state == "awaiting-instruction":
        traces = traces.filter(AWAITING_INSTRUCTION)
    if search:
        traces = traces.filter(Q(instruction__icontains=search) | Q(external_id__icontains=search))
    return traces.order_by("id")


def trace_steps(trace: Trace) -> QuerySet[Step]:
    return trace.steps.select_related("screenshot").order_by("index")


def rounds_of(project: Project) -> QuerySet[Round]:
    """A project's rounds, oldest run first (the order the round dashboard compares them in), each with
    ``trace_count``."""
    return Round.objects.filter(project=project).annotate(trace_count=Count("traces")).order_by("ran_at", "id")


def round_resolve(project: Project, ref) -> Round | None:
    """The round ``ref`` names in ``project``: its exact name, else its id (digits); None for an empty ``ref``.
    Invalid, naming ``ref`` and the rounds there are, when the project has no such round."""
    if ref is None or (isinstance(ref, str) and not ref.strip()):
        return None
    text = str(ref).strip()
    found = Round.objects.filter(project=project, name=text).first()
    if found is None and text.isdigit():
        found = Round.objects.filter(project=project, pk=int(text)).first()
    if found is None:
        names = list(
            Round.objects.filter(project=project).order_by("-ran_at", "-id").values_list("name", flat=True)[:10]
        )
        raise Invalid(
            f"round: {project.name} has no round {text!r}"
            + (f" (its rounds: {', '.join(names)})" if names else " (it has no rounds yet; create one first)"),
            field="round",
        )
    return found
