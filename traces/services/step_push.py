"""Runners push a trace step by step: step 1 makes the trace, receiving steps; each next index appends; the end
settles its identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext, ngettext

from studio.db import atomic_with_retry
from studio.errors import Conflict, Invalid, NotFound
from studio.inputs import input_problem
from traces.importers import TraceReadError
from traces.importers.base import parse_json_bytes
from traces.importers.native import metadata_with_platform, step_from_document
from traces.languages import trace_language
from traces.models import CoordinateConvention, Outcome, Project, Round, Screenshot, Step, Trace
from traces.services.screenshots import ScreenshotProblem, screenshots_store
from traces.services.steps import step_build
from traces.services.trace_import import _imported_step_fields, trace_stored_content

if TYPE_CHECKING:
    from django.core.files.uploadedfile import UploadedFile


@dataclass
class StepPushResult:
    trace: Trace
    step: Step
    created: bool  # False: the same step was stored already (a retried push)


def _pushed_image(upload: bytes | bytearray | UploadedFile, label: str) -> Screenshot:
    """An uploaded screenshot kept by content hash like an import's; Invalid naming ``label`` when unusable."""
    data = upload if isinstance(upload, bytes | bytearray) else b"".join(upload.chunks())
    try:
        [shot], _ = screenshots_store(images=[(bytes(data), getattr(upload, "name", "") or label)], decode=False)
    except ScreenshotProblem as exc:
        raise Invalid(f"{label}: {exc.message}", field=label) from None
    return shot


def _pushed_trace(project: Project, external_id: str) -> Trace | None:
    return Trace.objects.select_for_update().filter(project=project, external_id=external_id).first()


# What makes a pushed step the same step (with its screenshot's hash); raw_response last: it is made of the others
# and named only when nothing else tells the difference (reflection, action_summary).
STEP_PUSH_COMPARED = ("thought", "action_text", "human_edited_response", "context", "raw_response")


def trace_step_push(
    *,
    project: Project,
    external_id: str,
    index: Any,
    step: Any,
    screenshot: bytes | UploadedFile | None = None,
    instruction: str = "",
    round: Round | None = None,
    coordinates: str = "",
    source: str = "",
    metadata: Any = None,
    platform: str = "",
    parent: Trace | None = None,
    branch_at: Any = None,
) -> StepPushResult:
    """Store step ``index`` (1-based) of a trace its runner sends while it runs: ``step`` is one step object of the
    native format (docs/formats.md §1, JSON), ``screenshot`` its image (an uploaded file or bytes). Step 1 makes
    the trace, receiving steps (``instruction``, ``round``, ``coordinates``, ``source``, ``metadata``, a JSON
    object as text or a dict, and ``platform``, copied into ``metadata.platform``, as an import's trace has them, are
    read then); each next index appends.

    The same index again with the same content (screenshot and texts) answers the stored step (``created`` False: a
    retried push, also after the trace was ended). Conflict for other content at a stored index, for a gap (naming
    the missing step), for a new step of an ended trace and for a trace of another round; Invalid for what cannot be
    read.

    A branch (``parent``, a trace of the project, and ``branch_at`` = τ, one of its steps) starts at index τ: that
    push makes the trace with the parent's steps 1..τ-1 as its own (rows naming the parent's stored screenshots) and
    the parent's instruction, metadata, convention and round unless sent. Invalid for a τ the parent does not have;
    Conflict for another first index, or for a trace stored already that is not that branch."""
    external_id = (external_id or "").strip()
    problem = input_problem(external_id, name="external_id") if external_id else None
    if not external_id or len(external_id) > 255 or problem:
        raise Invalid(problem or gettext("external_id must be 1 to 255 characters"), field="external_id")
    try:
        number = int(str(index).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise Invalid(
            gettext("index: the step's 1-based position in the trace, not %(value)s")
            % {"value": repr(str(index)[:40])},
            field="index",
        )
    if coordinates and coordinates not in CoordinateConvention.values:
        raise Invalid(
            gettext("coordinates: one of %(conventions)s, not %(value)s")
            % {"conventions": ", ".join(CoordinateConvention.values), "value": repr(coordinates[:40])},
            field="coordinates",
        )
    problem = input_problem(instruction or "", name="instruction")
    if problem:
        raise Invalid(problem, field="instruction")
    source, metadata = pushed_source_and_metadata(source, metadata)
    platform = (platform or "").strip()
    problem = input_problem(platform, name="platform")
    if problem:
        raise Invalid(problem, field="platform")
    metadata = metadata_with_platform(metadata, platform)
    if isinstance(step, str):
        step = step.encode("utf-8")
    where = f"step {number}"
    try:
        document = parse_json_bytes(step or b"", where)
        # The screenshot travels apart (stored below), not by the path a trace folder would give.
        imported = step_from_document(document, where=where, screenshot=None)
    except TraceReadError as exc:
        raise Invalid(str(exc), field="step") from None
    problem = input_problem(_imported_step_fields(imported), name=where)
    if problem:
        raise Invalid(problem, field="step")
    # The image first, outside the transaction: content-addressed, so a retry or a refused push reuses it.
    shot = _pushed_image(screenshot, "screenshot") if screenshot is not None else None
    if round is not None and round.project_id != project.pk:
        raise Invalid(
            gettext("round: %(round)s is a round of another project") % {"round": repr(round.name)}, field="round"
        )
    tau = _branch_point(project, parent, branch_at, coordinates)
    first_own = tau or 1

    @atomic_with_retry
    def save() -> StepPushResult:
        trace = _pushed_trace(project, external_id)
        if trace is None and number == first_own:
            trace = _pushed_trace_new(
                project,
                external_id,
                instruction=instruction,
                source=source,
                metadata=metadata,
                coordinates=coordinates,
                round=round,
                parent=parent,
                tau=tau,
            )
            try:
                with transaction.atomic():
                    trace.save()
                    if parent is not None and tau is not None:
                        _branch_prefix_copy(parent, trace, tau)
            except IntegrityError:  # the same first step pushed twice at once: the other request made it
                trace = _pushed_trace(project, external_id)
        if parent is not None:
            _branch_trace_check(trace, external_id, parent=parent, tau=tau)
        count = trace.step_count if trace is not None else 0
        if trace is not None and round is not None and trace.round_id != round.pk:
            held = trace.round.name if trace.round is not None else gettext("no round")
            raise Conflict(
                gettext("trace %(trace)s is in %(held)s, not in %(round)s")
                % {"trace": repr(external_id), "held": held, "round": round.name},
                trace=trace.pk,
            )
        if number > count + 1:
            raise Conflict(
                ngettext(
                    "step %(number)s of %(trace)s cannot come yet: step %(next)s is missing (the trace has %(count)s "
                    "step)",
                    "step %(number)s of %(trace)s cannot come yet: step %(next)s is missing (the trace has %(count)s "
                    "steps)",
                    count,
                )
                % {"number": number, "trace": repr(external_id), "next": count + 1, "count": count},
                step_count=count,
            )
        assert trace is not None  # number <= count + 1 with no trace means number == 1, which made it
        built = step_build(
            index=number, imported=imported, screenshot=shot, convention=trace.coordinate_convention, project=project
        )
        built.trace = trace
        if number <= count:
            stored = trace.steps.select_related("screenshot").get(index=number)
            differs = _pushed_step_differences(stored, built)
            if differs:
                raise Conflict(
                    gettext(
                        "step %(number)s of %(trace)s is stored already with another %(differs)s; the next step is %(next)s"
                    )
                    % {"number": number, "trace": repr(external_id), "differs": ", ".join(differs), "next": count + 1},
                    step_count=count,
                )
            return StepPushResult(trace, stored, created=False)
        if not trace.receiving:
            raise Conflict(
                gettext("trace %(trace)s was ended (it has %(count)s steps): it takes no more steps")
                % {"trace": repr(external_id), "count": count},
                trace=trace.pk,
            )
        built.save()
        trace.step_count = number
        trace.save(update_fields=["step_count"])
        return StepPushResult(trace, built, created=True)

    return save()


def _pushed_trace_new(
    project: Project,
    external_id: str,
    *,
    instruction: str,
    source: str,
    metadata: dict,
    coordinates: str,
    round: Round | None,
    parent: Trace | None,
    tau: int | None,
) -> Trace:
    """The trace a first push makes (unsaved): a branch takes what was not sent from its parent."""
    if parent is not None:
        return Trace(
            project=project,
            external_id=external_id,
            instruction=instruction or parent.instruction,
            source=source or parent.source,
            metadata={**parent.metadata, **metadata},
            coordinate_convention=parent.coordinate_convention,
            round=round or parent.round,
            receiving=True,
            parent=parent,
            branch_at=tau,
            held_from_queue=True,
            language=parent.language,
        )
    return Trace(
        project=project,
        external_id=external_id,
        instruction=instruction or "",
        source=source or "native",
        metadata=metadata,
        coordinate_convention=coordinates or project.coordinate_convention,
        round=round,
        receiving=True,
        language=trace_language(said="", project_language=project.text_language, instruction=instruction or ""),
    )


def _branch_trace_check(trace: Trace | None, external_id: str, *, parent: Trace, tau: int | None) -> None:
    """Conflict unless ``trace`` is the branch of ``parent`` at ``tau`` (None: its first push has not come)."""
    if trace is None:
        raise Conflict(
            gettext("branch %(branch)s of %(parent)s starts at step %(step)s: push that step first")
            % {"branch": repr(external_id), "parent": repr(parent.external_id), "step": tau},
            step_count=0,
        )
    if trace.parent_id != parent.pk or trace.branch_at != tau:
        raise Conflict(
            gettext("trace %(trace)s is stored already and is not the branch of %(parent)s at step %(step)s")
            % {"trace": repr(external_id), "parent": repr(parent.external_id), "step": tau},
            trace=trace.pk,
        )


def _pushed_step_differences(stored: Step, built: Step) -> list[str]:
    """The fields in which a step pushed again differs from the stored one; the raw response alone never makes a
    difference when something else does (it is named only when it is all that differs)."""
    differs = [name for name in STEP_PUSH_COMPARED if getattr(stored, name) != getattr(built, name)]
    if stored.screenshot_id != built.screenshot_id:
        differs.insert(0, "screenshot")
    if len(differs) > 1 and differs[-1] == "raw_response":
        differs.pop()
    return differs


def _branch_point(project: Project, parent: Trace | None, branch_at: Any, coordinates: str) -> int | None:
    """τ for a branch push (None for a plain one), checked against its parent; Invalid naming the field."""
    if parent is None:
        if branch_at not in (None, ""):
            raise Invalid(gettext("branch_at: only with parent, the trace the branch leaves"), field="branch_at")
        return None
    if parent.project_id != project.pk:
        raise Invalid(
            gettext("parent: %(parent)s is a trace of another project") % {"parent": repr(parent.external_id)},
            field="parent",
        )
    try:
        tau = int(str(branch_at).strip())
    except ValueError:
        tau = 0
    if tau < 1 or tau > parent.step_count:
        raise Invalid(
            gettext("branch_at: %(parent)s has steps 1 to %(count)s, no step %(step)s")
            % {"parent": repr(parent.external_id), "count": parent.step_count, "step": str(branch_at)[:40]},
            field="branch_at",
        )
    if coordinates and coordinates != parent.coordinate_convention:
        raise Invalid(
            gettext("coordinates: a branch keeps its parent's convention, %(convention)s")
            % {"convention": parent.coordinate_convention},
            field="coordinates",
        )
    return tau


# A step's own content, copied into a branch's shared prefix (the row's id and trace are the branch's).
_STEP_COPIED = tuple(f.attname for f in Step._meta.concrete_fields if f.name not in ("id", "trace"))


def _branch_prefix_copy(parent: Trace, branch: Trace, tau: int) -> None:
    """The parent's steps before τ as the branch's: new rows naming the same stored screenshots."""
    prefix = [
        Step(trace=branch, **{name: getattr(step, name) for name in _STEP_COPIED})
        for step in parent.steps.filter(index__lt=tau).order_by("index")
    ]
    Step.objects.bulk_create(prefix)
    branch.step_count = len(prefix)
    branch.save(update_fields=["step_count"])


SOURCE_MAX: int = Trace._meta.get_field("source").max_length or 0


def pushed_source_and_metadata(source: str | None, metadata: Any) -> tuple[str, dict]:
    """A runner's ``source`` (the agent or format its trace comes from, as an importer names it) and ``metadata``
    (a JSON object, as text or parsed) for a pushed trace, checked as an import's are; Invalid naming the field."""
    source = (source or "").strip()
    problem = input_problem(source, name="source")
    if problem or len(source) > SOURCE_MAX:
        raise Invalid(problem or gettext("source: at most %(max)s characters") % {"max": SOURCE_MAX}, field="source")
    if isinstance(metadata, bytes | bytearray):
        metadata = metadata.decode("utf-8", "replace")
    if isinstance(metadata, str):
        try:
            metadata = parse_json_bytes(metadata.encode("utf-8", "surrogatepass"), "metadata") if metadata else {}
        except TraceReadError as exc:
            raise Invalid(str(exc), field="metadata") from None
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise Invalid(
            gettext("metadata: a JSON object, not %(type)s") % {"type": type(metadata).__name__}, field="metadata"
        )
    problem = input_problem(metadata, name="metadata")
    if problem:
        raise Invalid(problem, field="metadata")
    return source, metadata


def trace_end(
    *, project: Project, external_id: str, final_screenshot: bytes | UploadedFile | None = None, outcome: str = ""
) -> Trace:
    """The runner is done: the trace stops receiving steps and joins the annotation queue and pre-scoring, with its
    ``final_screenshot`` (the screen after the last action) and ``outcome`` when sent. Ending an ended trace again
    answers it as it is; Conflict when that asks for another outcome or final screenshot than the stored ones."""
    if outcome and outcome not in Outcome.values:
        raise Invalid(
            gettext("outcome: one of %(outcomes)s, not %(value)s")
            % {"outcomes": ", ".join(Outcome.values), "value": repr(outcome[:40])},
            field="outcome",
        )
    shot = _pushed_image(final_screenshot, "final_screenshot") if final_screenshot is not None else None

    @atomic_with_retry
    def save() -> Trace:
        trace = _pushed_trace(project, (external_id or "").strip())
        if trace is None:
            raise NotFound(
                gettext("%(project)s has no trace %(trace)s: push its step 1 first")
                % {"project": project.name, "trace": repr(external_id[:255])}
            )
        if not trace.receiving:
            differs = [
                name
                for name, asked, stored in (
                    ("outcome", outcome, trace.outcome),
                    ("final_screenshot", shot.pk if shot else None, trace.final_screenshot_id),
                )
                if asked and asked != stored
            ]
            if differs:
                raise Conflict(
                    gettext("trace %(trace)s was ended already with another %(differs)s")
                    % {"trace": repr(trace.external_id), "differs": ", ".join(differs)},
                    trace=trace.pk,
                )
            return trace
        trace.receiving = False
        trace.outcome = outcome or trace.outcome
        trace.final_screenshot = shot or trace.final_screenshot
        # Its identity is settled now that its steps are (traces/identity.py); a copy of a trace the project holds
        # is listed by the trace_duplicates command.
        trace.content_hash = trace_stored_content(trace).hash
        trace.save(update_fields=["receiving", "outcome", "final_screenshot", "content_hash"])
        return trace

    return save()
