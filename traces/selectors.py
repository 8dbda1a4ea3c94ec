"""Reads for projects, traces and steps, always scoped to what the user may see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import BooleanField, Count, ExpressionWrapper, Q, QuerySet
from django.utils.translation import gettext, ngettext

from studio.errors import Invalid
from studio.inputs import id_from_text
from traces import grammar
from traces.access import traces_for
from traces.models import ImportJob, Project, Round, Step, Trace

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

# A trace whose instruction is blank waits for a lead to write it (the trace page's instruction form) before anyone
# annotates it: without the task, neither the annotator's judgement nor a training prompt means anything. The same
# rule as a query (AWAITING_INSTRUCTION) and for one trace (awaits_instruction); blank = empty or only whitespace.
AWAITING_INSTRUCTION = Q(instruction__regex=r"^\s*$")


def awaits_instruction(trace: Trace) -> bool:
    return not trace.instruction.strip()


def traces_awaiting_instruction(traces: QuerySet[Trace]) -> QuerySet[Trace]:
    return traces.filter(AWAITING_INSTRUCTION)


def traces_ready_to_annotate(traces: QuerySet[Trace]) -> QuerySet[Trace]:
    """Traces an annotator may be given: with an instruction, no longer receiving steps from their runner (an
    incomplete trace cannot be judged; docs/rounds.md), and not a branch held from the queue (docs/runners.md)."""
    return traces.exclude(AWAITING_INSTRUCTION).exclude(receiving=True).exclude(held_from_queue=True)


TRACE_STATES = ("awaiting-instruction",)


def double_annotation_words(project: Project) -> str:
    """A project's double annotation in words, as the command line and the pages say it."""
    share = project.double_annotation_share
    if share <= 0:
        return "double annotation off"
    return f"double annotation: {share:.0%} of traces to {project.double_annotation_annotators} annotators each"


def traces_for_user(
    user: User | AnonymousUser,
    *,
    project: Project | None = None,
    search: str = "",
    state: str = "",
    round: Round | None = None,
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


def round_resolve(project: Project, ref: str | int | None) -> Round | None:
    """The round ``ref`` names in ``project``: its exact name, else its id (digits); None for an empty ``ref``.
    Invalid, naming ``ref`` and the rounds there are, when the project has no such round."""
    if ref is None or (isinstance(ref, str) and not ref.strip()):
        return None
    text = str(ref).strip()
    found = Round.objects.filter(project=project, name=text).first()
    round_id = id_from_text(text)
    if found is None and round_id is not None:
        found = Round.objects.filter(project=project, pk=round_id).first()
    if found is None:
        names = list(
            Round.objects.filter(project=project).order_by("-ran_at", "-id").values_list("name", flat=True)[:10]
        )
        said = (
            gettext("round: %(project)s has no round %(round)s (its rounds: %(rounds)s)")
            if names
            else gettext("round: %(project)s has no round %(round)s (it has no rounds yet; create one first)")
        )
        raise Invalid(said % {"project": project.name, "round": repr(text), "rounds": ", ".join(names)}, field="round")
    return found


def branch_parent(project: Project, ref: str | int | None) -> Trace | None:
    """The trace a pushed branch leaves: ``ref`` its external id in ``project``; None for an empty ``ref``. Invalid
    naming it when the project has no such trace."""
    text = str(ref or "").strip()
    if not text:
        return None
    found = Trace.objects.filter(project=project, external_id=text).first()
    if found is None:
        raise Invalid(
            gettext("parent: %(project)s has no trace %(trace)s to branch from")
            % {"project": project.name, "trace": repr(text[:255])},
            field="parent",
        )
    return found


def step_element_boxes(step: Step) -> list[tuple]:
    """The element boxes the source recorded on the step's screen, in the trace's convention ([] = none)."""
    from traces.importers.base import ELEMENTS

    boxes = []
    for element in (step.context or {}).get(ELEMENTS) or []:
        try:
            boxes.append(grammar.box_of(element.get("box")))
        except (TypeError, ValueError, AttributeError):
            continue  # stored by an older importer in another shape: not offered
    return boxes


def step_elements_json(step: Step, *, convention: str, project: Project) -> list[dict]:
    """The step's recorded elements for the workspace's snap targets: ``{"box", "label"}`` with the box in the
    project's convention (converted from the trace's ``convention`` by the step's screenshot size, as points are)."""
    from traces.importers.base import ELEMENTS

    elements = (step.context or {}).get(ELEMENTS) or []
    if not elements:
        return []
    shot = step.screenshot
    out = []
    for element in elements:
        try:
            box: Sequence[float] = grammar.box_of(element.get("box"))
            if convention != project.coordinate_convention:
                if shot is None:
                    return []
                box = grammar.convert_box(
                    box,
                    src=convention,
                    dst=project.coordinate_convention,
                    width=shot.width,
                    height=shot.height,
                    max_pixels=project.max_pixels,
                )
        except (TypeError, ValueError, AttributeError):
            continue
        out.append({"box": list(box), "label": str(element.get("label") or "")})
    return out


def project_jobs(project: Project) -> list:
    """Every job of the project, of every job kind that works on it (imports, exports, pre-scoring, evaluation,
    alternatives). A webhook delivery's job is not one: it goes with its endpoint when the project is deleted
    (cascade), and a receiver that keeps failing never holds the project's deletion."""
    from studio.jobs import job_models

    jobs: list = []
    for model in job_models():
        names = {f.name for f in model._meta.fields}
        if "project" in names:
            path = "project"
        elif "annotation" in names:
            path = "annotation__project"
        else:
            continue
        jobs.extend(model.objects.filter(**{path: project}).order_by("pk"))
    return jobs


# The kinds of an import job's entries (ImportJob.errors) that are notes on a trace the job kept: it needs
# attention (a lead writes its instruction, annotators see its steps flagged) but nothing was lost. Every other entry
# is a problem: a trace that failed (not stored) or a file of the upload refused.
INSTRUCTION_MISSING = "awaiting-instruction"
OFF_SCREEN_POINT = "off-screen-point"
# Identity by content (traces/identity.py): a trace stored under a distinct external_id because its own names other
# content, and one not stored because the project holds its content under another name.
STORED_UNDER_DISTINCT_ID = "distinct-id"
ALREADY_PRESENT = "already-present"
IMPORT_NOTE_KINDS = frozenset({INSTRUCTION_MISSING, OFF_SCREEN_POINT, STORED_UNDER_DISTINCT_ID, ALREADY_PRESENT})


@dataclass(frozen=True)
class ImportReport:
    """What a lead reads on an import job: the problems apart from the notes, the one line that says what was
    lost ("5 of 6 traces failed; 1 file refused"; empty when nothing was) and how far the reading went."""

    problems: list[dict]
    notes: list[dict]
    attention: str
    progress: str


def import_job_report(job: ImportJob) -> ImportReport:
    entries = job.errors or []
    problems = [entry for entry in entries if entry.get("kind") not in IMPORT_NOTE_KINDS]
    notes = [entry for entry in entries if entry.get("kind") in IMPORT_NOTE_KINDS]
    # Each failed trace has one entry; the other problems are files the unpacking refused.
    files_refused = max(0, len(problems) - job.traces_failed)
    read = job.traces_imported + job.traces_skipped + job.traces_failed
    lost = []
    if job.traces_failed:
        lost.append(
            ngettext("%(failed)s of %(count)s trace failed", "%(failed)s of %(count)s traces failed", read)
            % {"failed": job.traces_failed, "count": read}
        )
    if files_refused:
        lost.append(
            ngettext("%(count)s file refused", "%(count)s files refused", files_refused) % {"count": files_refused}
        )
    attention = gettext("; ").join(lost)
    return ImportReport(problems=problems, notes=notes, attention=attention, progress=import_job_progress(job))


def import_job_progress(job: ImportJob) -> str:
    """How far the job read, in the words its page shows both at first and while it follows the job ("2 of 4
    traces read"); the total is known once the upload is unpacked, before that only the count is."""
    if job.progress_total:
        return ngettext("%(done)s of %(count)s trace read", "%(done)s of %(count)s traces read", job.progress_total) % {
            "done": job.progress_done,
            "count": job.progress_total,
        }
    return ngettext("%(count)s trace read", "%(count)s traces read", job.progress_done) % {"count": job.progress_done}


# --- identity by content (traces/identity.py) -----------------------------------------------------


def traces_with_same_content(trace: Trace) -> QuerySet[Trace]:
    """The project's other traces with ``trace``'s content (none while it is receiving steps and has no hash)."""
    if not trace.content_hash:
        return Trace.objects.none()
    return Trace.objects.filter(project_id=trace.project_id, content_hash=trace.content_hash).exclude(pk=trace.pk)


@dataclass(frozen=True)
class DuplicateGroup:
    """Traces of one project with the same content, oldest first, each with its annotations (``annotations_of``)."""

    content_hash: str
    traces: list[Trace]


def trace_duplicate_groups(project: Project) -> list[DuplicateGroup]:
    """Every content the project holds more than once (stored before identity by content, or ended by a runner
    after the same content came another way): the traces, oldest first, with their annotations, for a lead to
    merge or delete. Read through the (project, content_hash) index."""
    repeated = (
        Trace.objects.filter(project=project)
        .exclude(content_hash="")
        .values("content_hash")
        .annotate(copies=Count("id"))
        .filter(copies__gt=1)
        .order_by("content_hash")
        .values_list("content_hash", flat=True)
    )
    hashes = list(repeated)
    traces = (
        Trace.objects.filter(project=project, content_hash__in=hashes)
        .select_related("round", "import_job")
        .prefetch_related("annotations__annotator")
        .order_by("created_at", "id")
    )
    groups: dict[str, list[Trace]] = {content: [] for content in hashes}
    for trace in traces:
        groups[trace.content_hash].append(trace)
    return [DuplicateGroup(content, members) for content, members in groups.items()]
