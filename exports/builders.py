"""Training samples from accepted annotations (what each sample kind holds: docs/architecture.md, exports/).

For an accepted annotation with its first error at τ:

* ``error_correction`` SFT: prompt s_τ, completion ``t*_τ a*_τ``;
* ``post_reflection`` SFT: prompt s_{τ+1} of the original trace (the wrong ``(t_τ, a_τ)`` stays in the
  history, untrained) with o_{τ+1}; completion ``t*_{τ+1} a*_{τ+1}``;
* ``dpo`` pair: prompt s_τ, chosen ``t*_τ a*_τ``, rejected the recorded ``t_τ a_τ``;
* ``dpo_on_policy`` pairs: prompt s_τ, chosen ``t*_τ a*_τ``, rejected each alternative the annotator marked wrong
  (sampled at s_τ from a checkpoint, annotation.alternatives), rendered by the grammar; the sample names the
  checkpoint (``Sample.on_policy``).

Options add ``valid_prefix`` (steps 1..τ-1 as recorded) and ``error_free`` (every step of a trace
judged ``no_error``) as plain SFT samples. Every prompt comes from :mod:`traces.prompting`.

Two more sample sets read the same annotations (a format picks its set, ``SAMPLE_SETS``):

* ``process`` (the ``prm`` format): one ``prm`` sample per trace, steps 1..τ as recorded with a label each
  (correct before τ, wrong at τ; every step of a ``no_error`` trace correct);
* ``rl`` (the ``verl`` format): the ``error_correction`` and ``post_reflection`` samples above, whose target
  (the annotated action, ``Sample.target``) is a reward's ground truth.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

from django.db.models import Count, QuerySet
from django.db.models.fields.json import KeyTransform
from django.utils.translation import gettext

from annotation.models import AlternativeMark, Annotation, AnnotationKind, AnnotationStatus, Verdict
from annotation.selectors import ACTION_FIELD_OF_SLOT, steps_dropped_before, target_box_of
from studio.errors import Invalid
from traces import grammar, prompting
from traces.models import Project, Screenshot, Step, Trace

SCHEMA_VERSION = 1
SFT_KINDS = ("error_correction", "post_reflection", "valid_prefix", "error_free", "replay_branch")
DPO_KINDS = ("dpo", "dpo_on_policy")
PRM_KINDS = ("prm",)
RL_KINDS = ("error_correction", "post_reflection")
SPLITS = ("train", "validation")
BATCH = 500


class OptionsError(Invalid):
    """An export option that is unknown or out of its range; the message names it."""


# What to do with a sample whose history holds a recorded step that did not parse (e.g. a web agent's
# "Click [16]"): "skip" the sample (the default: nothing unreadable reaches training), or render the step
# "verbatim" as it was recorded (the bundle's README and manifest say so).
UNPARSED_HISTORY = ("skip", "verbatim")

# Why an annotation (or part of one) gave no sample, by code; the manifest counts skips by these.
SKIP_UNPARSED_TARGET = "unparsed_target"  # the recorded step would be the SFT target
SKIP_UNPARSED_REJECTED = "unparsed_rejected"  # the recorded wrong step would be the DPO rejected side
SKIP_UNPARSED_HISTORY = "unparsed_history"  # the prompt's history holds an unparsed step (option "skip")
# A recorded point outside the screen in its trace's convention (flagged at import) is never trained on: neither as
# a target nor in a history, unless the annotator's correction replaced that step (step τ of an "error" verdict).
SKIP_OFF_SCREEN_TARGET = "off_screen_target"  # the recorded step would be the SFT target
SKIP_OFF_SCREEN_HISTORY = "off_screen_history"  # the prompt's history holds it
SKIP_GAP = "gap_after_tau"  # o_(τ+1) is not the screen right after step τ (the source dropped steps)
# A correction every replay refuted (replays.selectors): its DPO pair is left out unless the option refuted_dpo asks.
SKIP_REFUTED = "refuted_correction"
SKIP_OTHER = "other"

# A correction's standing by its replays (replays.selectors), and "never_asked" for one no replay was asked for.
VERIFICATION_STANDINGS = ("verified", "refuted", "waiting", "not_replayed", "never_asked")
MAX_COPIES = 10
# The samples a correction's replay stands behind: all but the recorded steps before τ (valid_prefix), which the
# annotator did not write.
UNWEIGHTED_KINDS = ("valid_prefix", "error_free")


def verification_weights_checked(raw: object) -> dict:
    """The option ``verification_weights`` validated: {standing: copies}; OptionsError naming what is wrong."""
    if not isinstance(raw, dict) or not raw:
        raise OptionsError(
            gettext('verification_weights must be an object {standing: copies}, e.g. {"verified": 3, "waiting": 1}')
        )
    unknown = sorted(set(raw) - set(VERIFICATION_STANDINGS))
    if unknown:
        raise OptionsError(
            gettext("verification_weights: unknown standing(s) %(unknown)s; the standings are %(standings)s")
            % {"unknown": ", ".join(map(str, unknown)), "standings": ", ".join(VERIFICATION_STANDINGS)}
        )
    for standing, copies in raw.items():
        if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= MAX_COPIES:
            raise OptionsError(
                gettext(
                    "verification_weights: %(standing)s must be a whole number of copies from 1 to %(max)s "
                    "(to leave corrections out, use verified_only)"
                )
                % {"standing": standing, "max": MAX_COPIES}
            )
    return {standing: raw[standing] for standing in VERIFICATION_STANDINGS if standing in raw}


@dataclass(frozen=True)
class ExportOptions:
    include_valid_prefix: bool = False
    include_error_free: bool = False
    validation_fraction: float = 0.1
    split_seed: int = 0
    unparsed_history: str = "skip"
    # An incremental export: leave out every annotation that export already held at the same version (new and
    # changed answers only). The export must be of the same project, finished, and have its lineage.
    since_export: int | None = None
    # The trace that goes to validation when no trace giving samples scores under the fraction (set by the export's
    # plan, ``split_plan``): a small bundle with a fraction above 0 still has a validation split.
    validation_trace: int | None = None
    # Only the annotations of this slice (insights.Slice, a saved search of the same project).
    slice: int | None = None
    # Leave out the answers of annotators whose gold accuracy (annotation.quality: every gold answer of theirs, the
    # share right in every part) is below this bar; the manifest and lineage say how many and whose.
    min_gold_accuracy: float | None = None
    # Set by the export's plan when fewer than VALIDATION_MIN_TRACES traces give samples: one trace cannot be
    # split, so it trains, whatever its seeded score (else a one-trace bundle could be all validation, no train).
    train_only: bool = False
    # Replays (docs/runners.md): keep only the corrections a replay verified (answers without a correction stay);
    # refuted_dpo keeps the DPO pairs of corrections every replay refuted, left out by default.
    verified_only: bool = False
    refuted_dpo: bool = False
    # The steps a verified correction's successful branch took after τ (its agent, on the corrected screen) as SFT
    # samples of kind ``replay_branch``: on-policy data the environment judged.
    branch_steps: bool = False
    # Weight the samples of a correction by its replays' verdict: {standing: copies}, standing one of
    # VERIFICATION_STANDINGS, copies a whole number from 1 to MAX_COPIES (1 where a standing is not named). Neither
    # TRL nor LLaMA-Factory reads a per-sample weight, so a weight is how many times its samples are written.
    verification_weights: dict | None = None

    @classmethod
    def parse(cls, raw: dict | None) -> ExportOptions:
        """Validate user-given options; raises OptionsError naming the bad field."""
        raw = dict(raw or {})
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            raise OptionsError(gettext("unknown export option(s): %(options)s") % {"options": ", ".join(unknown)})
        values: dict[str, Any] = {}
        booleans = ("include_valid_prefix", "include_error_free", "train_only", "verified_only", "refuted_dpo")
        for name in (*booleans, "branch_steps"):
            if name in raw:
                if not isinstance(raw[name], bool):
                    raise OptionsError(gettext("%(option)s must be true or false") % {"option": name})
                values[name] = raw[name]
        if "validation_fraction" in raw:
            fraction = raw["validation_fraction"]
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction < 1:
                raise OptionsError(gettext("validation_fraction must be a number in [0, 1)"))
            values["validation_fraction"] = float(fraction)
        if "unparsed_history" in raw:
            if raw["unparsed_history"] not in UNPARSED_HISTORY:
                raise OptionsError(
                    gettext("unparsed_history must be one of %(choices)s") % {"choices": ", ".join(UNPARSED_HISTORY)}
                )
            values["unparsed_history"] = raw["unparsed_history"]
        if "split_seed" in raw:
            seed = raw["split_seed"]
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
                raise OptionsError(gettext("split_seed must be an integer in [0, 2^31)"))
            values["split_seed"] = seed
        if raw.get("since_export") is not None:
            since = raw["since_export"]
            if isinstance(since, bool) or not isinstance(since, int) or not 0 < since < 2**63:
                raise OptionsError(gettext("since_export must be the id of an earlier export (a positive integer)"))
            values["since_export"] = since
        if raw.get("validation_trace") is not None:
            trace = raw["validation_trace"]
            if isinstance(trace, bool) or not isinstance(trace, int) or not 0 < trace < 2**63:
                raise OptionsError(gettext("validation_trace must be a trace id (a positive integer)"))
            values["validation_trace"] = trace
        if raw.get("slice") is not None:
            slice_id = raw["slice"]
            if isinstance(slice_id, bool) or not isinstance(slice_id, int) or not 0 < slice_id < 2**63:
                raise OptionsError(gettext("slice must be the id of one of the project's slices (a positive integer)"))
            values["slice"] = slice_id
        if raw.get("min_gold_accuracy") is not None:
            bar = raw["min_gold_accuracy"]
            if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0 < bar <= 1:
                raise OptionsError(
                    gettext("min_gold_accuracy must be a share in (0, 1]: e.g. 0.8 for 80 % of gold answers right")
                )
            values["min_gold_accuracy"] = float(bar)
        if raw.get("verification_weights") is not None:
            values["verification_weights"] = verification_weights_checked(raw["verification_weights"])
        return cls(**values)

    def to_json(self) -> dict:
        out = asdict(self)
        for name in ("slice", "min_gold_accuracy", "verification_weights"):
            if out[name] is None:  # named only where asked for: every other bundle's options read as before
                del out[name]
        for name in ("train_only", "verified_only", "refuted_dpo", "branch_steps"):
            if not out[name]:  # named only where set, for the same reason
                del out[name]
        return out


@dataclass(frozen=True)
class Target:
    """What the annotator said the agent should do at a step: the corrected (or post-reflection) thought and action,
    the action canonical in the project's convention and box-token setting."""

    thought: str
    action: str


@dataclass
class Sample:
    kind: str
    split: str
    trace_id: int
    annotation_id: int
    prompt: prompting.StatePrompt | prompting.Trajectory
    completion: str | None = None
    chosen: str | None = None
    rejected: str | None = None
    # ``prm``: one label per step of the trajectory (True: correct).
    labels: tuple[bool, ...] | None = None
    # The step the sample is about (τ, τ+1, or for ``prm`` the last step it holds) and the annotation's version.
    step: int | None = None
    annotation_version: int | None = None
    # ``error_correction`` / ``post_reflection``: the annotated action (the RL ground truth) and, for the first, the
    # recorded wrong step as the prompt builder renders it.
    target: Target | None = None
    recorded: str | None = None
    # The element box of the trained target's point ([x1, y1, x2, y2] in the project's convention), when the
    # annotator drew one: sample metadata beside the action text, which stays the UI-TARS action.
    target_box: list | None = None
    # ``dpo_on_policy``: the checkpoint the rejected side was sampled from (model_name, weights_hash).
    on_policy: dict | None = None
    # The correction's standing by its replays (VERIFICATION_STANDINGS) for the samples it stands behind; None for
    # the others and for projects without replays.
    verification: str | None = None

    @property
    def is_preference(self) -> bool:
        return self.kind in DPO_KINDS


@dataclass
class Skip:
    """An annotation (or part of one) that gave no sample, and why; lands in the job's errors."""

    annotation_id: int
    trace_id: int
    kind: str
    reason: str
    code: str = SKIP_OTHER


@dataclass
class BuildStats:
    annotations: list[tuple[int, int]] = field(default_factory=list)  # (id, version) of every source
    skipped: int = 0
    already_exported: int = 0  # left out by an incremental export: the base export held the same version
    trace_ids: list[int] = field(default_factory=list)  # the traces of the planned annotations
    by_round: Counter = field(default_factory=Counter)  # round id (None: no round) -> annotations used
    rounded_points: int = 0  # points and boxes stored with decimals, rounded by the export (``rounded_points``)
    # The quality filter's account (``min_gold_accuracy``): the bar, how many answers it left out and whose.
    quality_filter: dict | None = None
    # The replays' account (replay_account): the planned corrections verified, refuted, waiting, never replayed,
    # and with ``verified_only`` how many it left out.
    replay_filter: dict | None = None


def _split_score(trace_id: int, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(trace_id: int, options: ExportOptions) -> str:
    """Train or validation, by trace (every sample of a trace lands in the same split), seeded; the plan's
    ``validation_trace`` goes to validation too."""
    if options.train_only:
        return "train"
    if trace_id == options.validation_trace:
        return "validation"
    return "validation" if _split_score(trace_id, options.split_seed) < options.validation_fraction else "train"


# Below this many traces that give samples a bundle has no validation split, whatever its fraction: one trace cannot
# be split.
VALIDATION_MIN_TRACES = 2


@dataclass(frozen=True)
class SplitPlan:
    """What an export's plan decides of its split, kept in the job's options for every shard: the trace sent to
    validation because no trace giving samples scored under the fraction, or that every sample trains."""

    validation_trace: int | None = None
    train_only: bool = False


# How many traces the plan asks about first when it looks for the traces that give samples (then four times as
# many each time, up to a batch of samples' annotations): most traces give samples, so the first two are enough.
SPLIT_PROBE_FIRST = VALIDATION_MIN_TRACES


def split_plan(
    trace_ids: list[int], options: ExportOptions, gives_samples: Callable[[list[int]], set[int]]
) -> SplitPlan:
    """The split of a bundle of ``trace_ids``, drawn among the traces that give samples of its format
    (``gives_samples(ids)``: which of ``ids`` do). A trace that gives none adds nothing to either split, so it can
    neither fill the validation split nor leave it empty. The traces are asked about in order of their seeded score,
    a few at a time, until two that give samples are found: fewer than ``VALIDATION_MIN_TRACES`` and every sample
    trains; the lowest-scored one already under the fraction and the seeded split stands; else it is sent to
    validation (the floor). Nothing with a fraction of 0."""
    if options.validation_fraction <= 0:
        return SplitPlan()
    ids = sorted(set(trace_ids), key=lambda pk: (_split_score(pk, options.split_seed), pk))
    found: list[int] = []
    start, size = 0, SPLIT_PROBE_FIRST
    while len(found) < VALIDATION_MIN_TRACES and start < len(ids):
        batch = ids[start : start + size]
        giving = gives_samples(batch)
        found += [pk for pk in batch if pk in giving]
        start, size = start + size, min(size * 4, BATCH)
    if len(found) < VALIDATION_MIN_TRACES:
        return SplitPlan(train_only=True)
    if _split_score(found[0], options.split_seed) < options.validation_fraction:
        return SplitPlan()
    return SplitPlan(validation_trace=found[0])


def validation_empty_reason(
    *, options: ExportOptions, traces: int, validation_samples: int, sample_traces: int | None = None
) -> str:
    """Why a bundle's validation split is empty, in words ("" when it is not). ``sample_traces``: how many of its
    ``traces`` gave samples of its format (all of them when not known)."""
    if validation_samples:
        return ""
    if options.validation_fraction <= 0:
        return "validation_fraction is 0"
    giving = traces if sample_traces is None else sample_traces
    if traces < VALIDATION_MIN_TRACES:
        return (
            f"the bundle holds {traces} trace{'' if traces == 1 else 's'}; a validation split needs "
            f"{VALIDATION_MIN_TRACES} or more, so every sample trains"
        )
    if giving < VALIDATION_MIN_TRACES:
        return (
            f"{giving} of the bundle's {traces} traces give{'s' if giving == 1 else ''} samples of this format; "
            f"a validation split needs {VALIDATION_MIN_TRACES} or more, so every sample trains"
        )
    return "the traces chosen for validation gave no samples of this format"


def accepted_annotations(
    project: Project, *, round_id: int | None = None, ids: list[int] | None = None
) -> QuerySet[Annotation]:
    """One accepted annotation per trace: the adjudicated one when there is one, else the latest reviewed.
    ``round_id``: only traces of that round (checkpoint evaluation on one round's corrections). ``ids``: only
    those, of the project's (an export shard's, planned from this project: an annotation never changes project).

    Ordered by trace so the caller keeps the first per trace while streaming (``_first_per_trace`` reads the rows
    its samples need)."""
    if ids is None:
        annotations = Annotation.objects.filter(project=project, status=AnnotationStatus.ACCEPTED)
    else:
        # By primary key, without the project: given the project too, a planner that takes it for a small one (a new
        # project the table's statistics do not know yet) reads all its annotations through the (project, status)
        # index for each batch of ids: 479 ms a batch of 500 at a million annotations, 4.4 ms by primary key.
        annotations = Annotation.objects.filter(pk__in=ids, status=AnnotationStatus.ACCEPTED)
    if round_id is not None:
        annotations = annotations.filter(trace__round_id=round_id)
    # Production answers only: a gold or qualification answer is never a sample, even one a lead accepted.
    return (
        annotations.filter(kind=AnnotationKind.PRODUCTION)
        .exclude(verdict=Verdict.UNUSABLE)
        .order_by("trace_id", "-is_adjudicated", "-reviewed_at", "-id")
    )


@dataclass(slots=True)
class TraceRow:
    """The fields of a Trace the prompts need, read without model instances (exports read millions)."""

    pk: int
    instruction: str
    final_screenshot_id: int | None
    project_id: int
    coordinate_convention: str
    round_id: int | None
    final_screenshot: Any = None


@dataclass(slots=True)
class AnnotationRow:
    """The fields of an accepted Annotation its samples need, read without model instances, and what ``iter_samples``
    loads beside it for a batch: its replays' standing, its alternatives marked wrong, its replay's branch."""

    pk: int
    trace_id: int
    version: int
    verdict: str
    tau: int | None
    corrected_thought: str
    corrected_action: str
    reflection_thought: str
    reflection_action: str
    editor_state: dict | None
    trace: TraceRow
    replay_verification: str | None = None
    wrong_alternatives: list | None = None
    replay_branch: tuple | None = None


_TRACE_FIELDS = ("instruction", "final_screenshot_id", "project_id", "coordinate_convention", "round_id")
_ANNOTATION_FIELDS = (
    "pk",
    "trace_id",
    "version",
    "verdict",
    "tau",
    "corrected_thought",
    "corrected_action",
    "reflection_thought",
    "reflection_action",
    "editor_state",
)


def _first_per_trace(annotations: QuerySet[Annotation]) -> Iterator[AnnotationRow]:
    last_trace = None
    fields = (*_ANNOTATION_FIELDS, *(f"trace__{name}" for name in _TRACE_FIELDS))
    for row in annotations.values_list(*fields).iterator(chunk_size=BATCH):
        trace_id = row[1]
        if trace_id != last_trace:
            last_trace = trace_id
            yield AnnotationRow(*row[:10], trace=TraceRow(trace_id, *row[10:]))  # type: ignore[misc]


def _batches(items: Iterator, size: int) -> Iterator[list]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass(slots=True)
class StepRow:
    """The fields of a Step the prompt needs, read without model instances (exports read millions)."""

    index: int
    thought: str
    reflection: str
    action_text: str
    raw_response: str
    parsed_actions: list
    parse_error: str
    off_screen_point: str
    context: dict  # of the step's context, its "missing_before" alone (``_steps_by_trace``)
    screenshot: Any
    rendered: str | None = None


_STEP_FIELDS = (
    "trace_id",
    "index",
    "thought",
    "reflection",
    "action_text",
    "raw_response",
    "parsed_actions",
    "parse_error",
    "off_screen_point",
    "missing_before",
    "screenshot_id",
)


class ScreenshotCache:
    """Screenshots by id, loaded once per export (traces share them; memory grows with unique images only)."""

    def __init__(self) -> None:
        self._by_id: dict[int, Screenshot] = {}

    def load(self, ids: Iterable[int | None]) -> None:
        missing = {i for i in ids if i is not None and i not in self._by_id}
        if missing:
            only = ("id", "sha256", "format", "image", "byte_size", "width", "height")
            self._by_id.update(Screenshot.objects.only(*only).in_bulk(missing))

    def get(self, pk: int | None) -> Screenshot | None:
        return None if pk is None else self._by_id[pk]


def _steps_by_trace(trace_ids: list[int], shots: ScreenshotCache) -> dict[int, list[StepRow]]:
    # Of a step's context (plans, evaluations: a source's whole record) an export reads the gap before it alone
    # (``missing_before``): that key is read, not the whole document decoded for every step.
    rows = list(
        Step.objects.filter(trace_id__in=trace_ids)
        .order_by("trace_id", "index")
        .annotate(missing_before=KeyTransform("missing_before", "context"))
        .values_list(*_STEP_FIELDS)
    )
    shots.load(row[-1] for row in rows)
    steps: dict[int, list[StepRow]] = {tid: [] for tid in trace_ids}
    for trace_id, *fields, missing, screenshot_id in rows:
        context = {} if missing is None else {"missing_before": missing}
        steps[trace_id].append(StepRow(*fields, context=context, screenshot=shots.get(screenshot_id)))  # type: ignore[misc]
    return steps


def missing_before(step: StepRow) -> int:
    """How many recorded steps the source dropped right before ``step`` (native format ``missing_before``): the
    annotation's own reading, which refuses a post-reflection across such a gap where it is written."""
    return steps_dropped_before(step)


def _render_once(step: StepRow, *, project: Project, convention: str) -> str:
    # A step is rendered for several samples (history of s_τ, rejected, history of s_τ+1): once is enough.
    if step.rendered is None:
        step.rendered = prompting.render_step(step, project=project, convention=convention)
    return step.rendered


def _decimal_points(actions: list[grammar.Action]) -> int:
    return sum(grammar.round_action(action)[1] for action in actions)


def _decimal_points_of_text(text: str) -> int:
    try:
        return _decimal_points(grammar.parse_actions(text)) if text.strip() else 0
    except grammar.ActionSyntaxError:
        return 0


def _any_float(parsed_actions: object) -> bool:
    """Whether stored actions (``Step.parsed_actions``, ``Alternative.actions``: JSON) hold a float among their
    arguments, or are not the shape a check can tell (then True, and the parse decides): without a float no point
    has decimals, and most steps are counted without building their actions again."""
    if not isinstance(parsed_actions, list):
        return True
    for action in parsed_actions:
        args = action.get("args") if isinstance(action, dict) else None
        if not isinstance(args, dict):
            return True
        for value in args.values():
            if isinstance(value, float) or (isinstance(value, list) and any(isinstance(c, float) for c in value)):
                return True
    return False


def _decimal_points_of_json(parsed_actions: Any) -> int:
    if not _any_float(parsed_actions):
        return 0
    try:
        return _decimal_points([grammar.Action.from_json(a) for a in parsed_actions])
    except (TypeError, ValueError):
        return 0


def _target_box(annotation: AnnotationRow, slot: str, *, box_tokens: bool) -> list | None:
    """``annotation.selectors.action_target_box`` of an annotation's row."""
    return target_box_of(
        annotation.editor_state, getattr(annotation, ACTION_FIELD_OF_SLOT[slot]), slot, box_tokens=box_tokens
    )


def _rounded_box(box: list | None) -> list | None:
    return None if box is None else list(grammar.round_box(tuple(box)))


def rounded_points(annotation: AnnotationRow, steps: list, project: Project) -> int:
    """How many points (and element boxes) the export of ``annotation`` rounded because they were stored with
    decimals (the manifest's ``counts.rounded_points``): in its corrected and post-reflection actions and boxes, in the
    alternatives marked wrong, and in the recorded steps its samples rendered (``_render_once`` rendered them). Every
    trained point is an integer whatever this says; it counts what older rows (before the editor rounded) held."""
    n = 0
    if annotation.verdict == Verdict.ERROR:
        n += _decimal_points_of_text(annotation.corrected_action) + _decimal_points_of_text(
            annotation.reflection_action
        )
        for slot in ("corrected", "reflection"):
            box = ((annotation.editor_state or {}).get(slot) or {}).get(grammar.TARGET_BOX)
            if isinstance(box, list) and not all(isinstance(v, int) for v in box):
                n += 1
        for alternative in getattr(annotation, "wrong_alternatives", None) or ():
            n += _decimal_points_of_json(alternative.actions)
    for step in steps:
        if step.rendered is not None and step.parsed_actions and not step.parse_error:
            n += _decimal_points_of_json(step.parsed_actions)
    return n


def _dpo_refusal(
    annotation: AnnotationRow, wrong: StepRow, tau: int, *, rejected: str, corrected: str, options: ExportOptions
) -> tuple[str] | tuple[str, str] | None:
    """Why the recorded step at τ makes no DPO pair with the correction (a skip's reason, and its code where it has
    one of its own), or None when it does."""
    if wrong.parse_error:
        return (
            f"the recorded step {tau} did not parse ({wrong.parse_error}): it is never the rejected side",
            SKIP_UNPARSED_REJECTED,
        )
    if rejected == corrected:
        return ("the correction equals the recorded step",)
    if getattr(annotation, "replay_verification", None) == "refuted" and not options.refuted_dpo:
        return ("every replay of the correction failed in its environment", SKIP_REFUTED)
    return None


class _AnnotationSamples:
    """What one annotation's samples are made of (its trace, steps, split and the export's options), and the steps
    that make each kind of them, in ``annotation_samples``' order."""

    def __init__(
        self, annotation: AnnotationRow, steps: list[StepRow], *, project: Project, options: ExportOptions
    ) -> None:
        self.annotation = annotation
        self.steps = steps
        self.project = project
        self.options = options
        self.trace = annotation.trace
        self.split = split_of(self.trace.pk, options)
        # The step the annotator's correction replaced: its recorded point may lie off the screen, since what is
        # trained on is the correction (and the recorded step stays only as what happened, in s_(τ+1)'s history and
        # as the DPO rejected side).
        self.corrected_index = annotation.tau if annotation.verdict == Verdict.ERROR else None

    def sample(self, kind: str, prompt: Any, **targets: Any) -> Sample:
        return Sample(
            kind,
            self.split,
            self.trace.pk,
            self.annotation.pk,
            prompt,
            annotation_version=self.annotation.version,
            **targets,
        )

    def skip(self, kind: str, reason: str, code: str = SKIP_OTHER) -> Skip:
        return Skip(self.annotation.pk, self.trace.pk, kind, reason, code)

    def state(self, i: int) -> prompting.StatePrompt:
        return prompting.build_state_messages(
            self.trace, i, project=self.project, steps=self.steps, render=_render_once
        )

    def recorded(self, step: StepRow) -> str:
        """The recorded step as the prompt builder renders it."""
        return _render_once(step, project=self.project, convention=self.trace.coordinate_convention)

    def unparsed_before(self, i: int) -> StepRow | None:
        """The first recorded step in s_i's history that did not parse, when such histories are skipped."""
        if self.options.unparsed_history == "verbatim":
            return None
        return next((step for step in self.steps[: i - 1] if step.parse_error), None)

    def off_screen_before(self, i: int) -> StepRow | None:
        return next(
            (step for step in self.steps[: i - 1] if step.off_screen_point and step.index != self.corrected_index),
            None,
        )

    def history_skip(self, kind: str, i: int) -> Skip | None:
        outside = self.off_screen_before(i)
        if outside is not None:
            return self.skip(
                kind,
                f"the history holds step {outside.index}, whose recorded action has a point outside the screen "
                f"({outside.off_screen_point}) and was not corrected",
                SKIP_OFF_SCREEN_HISTORY,
            )
        bad = self.unparsed_before(i)
        if bad is None:
            return None
        return self.skip(
            kind,
            f"the history holds step {bad.index}, which did not parse ({bad.parse_error}); "
            "export with unparsed_history=verbatim to keep it as recorded",
            SKIP_UNPARSED_HISTORY,
        )

    def target_skip(self, kind: str, step: StepRow) -> Skip | None:
        if step.off_screen_point:
            return self.skip(
                kind,
                f"step {step.index}'s recorded action has a point outside the screen ({step.off_screen_point}): "
                "it is not trained on",
                SKIP_OFF_SCREEN_TARGET,
            )
        if not step.parse_error:
            return None
        return self.skip(
            kind,
            f"step {step.index}'s recorded action did not parse ({step.parse_error}): it is not trained on",
            SKIP_UNPARSED_TARGET,
        )

    def recorded_samples(self, kind: str, indexes: range) -> Iterator[Sample | Skip]:
        """The recorded steps at ``indexes`` as their own targets (``error_free``, ``valid_prefix``)."""
        for i in indexes:
            step = self.steps[i - 1]
            problem = self.target_skip(kind, step) or self.history_skip(kind, i)
            if problem:
                yield problem
                continue
            try:
                item: Sample | Skip = self.sample(kind, self.state(i), completion=self.recorded(step))
            except prompting.PromptError as exc:
                item = self.skip(kind, str(exc))
            yield item

    def correction_samples(self, tau: int) -> Iterator[Sample | Skip]:
        """The correction at τ (``error_correction``), its DPO pair against the recorded step and the on-policy
        pairs."""
        problem = self.history_skip("error_correction", tau)
        if problem:
            yield problem
            yield replace(problem, kind="dpo")
            return
        annotation, project = self.annotation, self.project
        try:
            s_tau = self.state(tau)
            corrected_action = prompting.render_actions(annotation.corrected_action, project=project)
            corrected = prompting.target_text(annotation.corrected_thought, corrected_action)
        except prompting.PromptError as exc:
            yield self.skip("error_correction", str(exc))
            return
        corrected_box = _rounded_box(_target_box(annotation, "corrected", box_tokens=project.box_tokens))
        wrong = self.steps[tau - 1]
        rejected = self.recorded(wrong)
        yield self.sample(
            "error_correction",
            s_tau,
            completion=corrected,
            step=tau,
            target=Target(annotation.corrected_thought.strip(), corrected_action),
            recorded=rejected,
            target_box=corrected_box,
        )
        refusal = _dpo_refusal(annotation, wrong, tau, rejected=rejected, corrected=corrected, options=self.options)
        if refusal:
            yield self.skip("dpo", *refusal)
        else:
            yield self.sample("dpo", s_tau, chosen=corrected, rejected=rejected, target_box=corrected_box)
        yield from _on_policy_pairs(
            annotation, tau, s_tau, corrected, corrected_box, project=project, sample=self.sample
        )

    def reflection_samples(self, tau: int) -> Iterator[Sample | Skip]:
        """The post-reflection step τ+1 (``post_reflection``), on the screen the recorded step τ led to."""
        problem = self.history_skip("post_reflection", tau + 1)
        if problem:
            yield problem
            return
        steps = self.steps
        missing = missing_before(steps[tau]) if tau < len(steps) else 0
        if missing:
            yield self.skip(
                "post_reflection",
                f"{missing} recorded step(s) are missing between step {tau} and the next "
                "screen, so it is not o_(τ+1): the post-reflection would train on the "
                "wrong screen",
                SKIP_GAP,
            )
            return
        annotation, project = self.annotation, self.project
        try:
            prompt = self.state(tau + 1)
            actions = prompting.render_actions(annotation.reflection_action, project=project)
            item: Sample | Skip = self.sample(
                "post_reflection",
                prompt,
                completion=prompting.target_text(annotation.reflection_thought, actions),
                step=tau + 1,
                target=Target(annotation.reflection_thought.strip(), actions),
                target_box=_rounded_box(_target_box(annotation, "reflection", box_tokens=project.box_tokens)),
            )
        except prompting.PromptError as exc:
            item = self.skip("post_reflection", str(exc))
        yield item


def annotation_samples(
    annotation: AnnotationRow, steps: list[StepRow], *, project: Project, options: ExportOptions
) -> Iterator[Sample | Skip]:
    """Every sample one annotation gives, in a fixed order; problems are yielded as Skip."""
    made = _AnnotationSamples(annotation, steps, project=project, options=options)
    if annotation.verdict == Verdict.NO_ERROR:
        if options.include_error_free:
            yield from made.recorded_samples("error_free", range(1, len(steps) + 1))
        return
    tau = annotation.tau
    if annotation.verdict != Verdict.ERROR or not tau or not 1 <= tau <= len(steps):
        yield made.skip(
            "error_correction",
            f"verdict {annotation.verdict!r} with τ={tau} does not fit a trace of {len(steps)} steps",
        )
        return
    if options.include_valid_prefix:
        yield from made.recorded_samples("valid_prefix", range(1, tau))
    yield from made.correction_samples(tau)
    yield from _replay_branch_samples(annotation, tau, project=project, sample=made.sample, skip=made.skip)
    if annotation.reflection_action.strip():
        yield from made.reflection_samples(tau)


def _on_policy_pairs(
    annotation: AnnotationRow,
    tau: int,
    s_tau: prompting.StatePrompt,
    corrected: str,
    corrected_box: list | None,
    *,
    project: Project,
    sample: Callable[..., Sample],
) -> Iterator[Sample | Skip]:
    """``dpo_on_policy`` pairs: each alternative marked wrong at step τ, rendered by the grammar, against the
    correction. An alternative sampled at another step (τ moved since) is not a reply to s_τ: left out, said why."""
    from annotation.alternatives.selectors import wrong_alternatives

    alternatives = getattr(annotation, "wrong_alternatives", None)
    if alternatives is None:
        alternatives = wrong_alternatives([annotation.pk])[annotation.pk]
    for alternative in alternatives:
        if alternative.step.index != tau:
            yield Skip(
                annotation.pk,
                annotation.trace_id,
                "dpo_on_policy",
                f"alternative {alternative.number} was sampled at step {alternative.step.index}, not at τ = {tau}",
            )
            continue
        try:
            parsed = grammar.parse_response(alternative.reply)
            rejected = grammar.render_response(
                parsed.thought,
                [grammar.round_action(grammar.Action.from_json(a))[0] for a in alternative.actions],
                box_tokens=project.box_tokens,
            )
        except (grammar.ActionSyntaxError, ValueError, TypeError) as exc:
            yield Skip(
                annotation.pk,
                annotation.trace_id,
                "dpo_on_policy",
                f"alternative {alternative.number} cannot be rendered: {exc}",
                SKIP_UNPARSED_REJECTED,
            )
            continue
        if rejected == corrected:
            yield Skip(annotation.pk, annotation.trace_id, "dpo_on_policy", "the correction equals a wrong alternative")
            continue
        pair = sample("dpo_on_policy", s_tau, chosen=corrected, rejected=rejected, target_box=corrected_box)
        pair.step = tau
        pair.on_policy = {"model_name": alternative.model_name, "weights_hash": alternative.weights_hash}
        yield pair


def annotation_rl_samples(
    annotation: AnnotationRow, steps: list[StepRow], *, project: Project, options: ExportOptions
) -> Iterator[Sample | Skip]:
    """The ``rl`` set: the corrected step τ and the post-reflection step τ+1 of ``annotation_samples`` (with the
    same skips), each with its annotated action as the ground truth."""
    for item in annotation_samples(annotation, steps, project=project, options=options):
        if item.kind in RL_KINDS:
            yield item


def annotation_process_samples(
    annotation: AnnotationRow, steps: list[StepRow], *, project: Project, options: ExportOptions
) -> Iterator[Sample | Skip]:
    """The ``process`` set: one ``prm`` sample per trace, steps 1..τ as recorded, each labelled (True: correct)."""
    trace = annotation.trace
    kind = PRM_KINDS[0]

    def skip(reason: str, code: str = SKIP_OTHER) -> Skip:
        return Skip(annotation.pk, trace.pk, kind, reason, code)

    if annotation.verdict == Verdict.NO_ERROR:
        upto, wrong = len(steps), None
    elif annotation.verdict == Verdict.ERROR and annotation.tau and 1 <= annotation.tau <= len(steps):
        upto, wrong = annotation.tau, annotation.tau
    else:
        yield skip(f"verdict {annotation.verdict!r} with τ={annotation.tau} does not fit a trace of {len(steps)} steps")
        return
    if not steps:
        yield skip("the trace has no steps")
        return
    # A step judged correct is a positive label, so it must be readable and on the screen, as an SFT target must.
    # The wrong step τ is kept as recorded when it lies off the screen (what happened); when it did not parse, a label
    # on text the grammar cannot read would teach nothing about actions, so the trace is left out, as DPO does.
    for step in steps[:upto]:
        if step.index == wrong:
            if step.parse_error:
                yield skip(
                    f"the recorded step {step.index} did not parse ({step.parse_error}): it is never a labelled step",
                    SKIP_UNPARSED_REJECTED,
                )
                return
            continue
        if step.off_screen_point:
            yield skip(
                f"step {step.index}'s recorded action has a point outside the screen ({step.off_screen_point}): "
                "it is never labelled correct",
                SKIP_OFF_SCREEN_TARGET,
            )
            return
        if step.parse_error and options.unparsed_history == "skip":
            yield skip(
                f"step {step.index} did not parse ({step.parse_error}); "
                "export with unparsed_history=verbatim to keep it as recorded",
                SKIP_UNPARSED_TARGET,
            )
            return
    try:
        trajectory = prompting.build_trajectory(trace, upto, project=project, steps=steps, render=_render_once)
    except prompting.PromptError as exc:
        yield skip(str(exc))
        return
    yield Sample(
        kind,
        split_of(trace.pk, options),
        trace.pk,
        annotation.pk,
        trajectory,
        completion=None,
        labels=tuple(step.index != wrong for step in steps[:upto]),
        step=upto,
        annotation_version=annotation.version,
    )


# The samples each format's writer takes, by the name a Writer declares (``Writer.sample_set``).
SAMPLE_SETS = {"sft_dpo": annotation_samples, "rl": annotation_rl_samples, "process": annotation_process_samples}


def _not_in(annotations: Iterator[AnnotationRow], held: dict[int, int], stats: BuildStats) -> Iterator[AnnotationRow]:
    for annotation in annotations:
        if held.get(annotation.pk) == annotation.version:
            stats.already_exported += 1
        else:
            yield annotation


def _replay_branch_samples(
    annotation: AnnotationRow,
    tau: int,
    *,
    project: Project,
    sample: Callable[..., Sample],
    skip: Callable[..., Skip],
) -> Iterator[Sample | Skip]:
    """The successful branch's own steps after τ (option ``branch_steps``; loaded by ``iter_samples`` as
    ``annotation.replay_branch``): each step's prompt is the branch's history, its target the step the agent took."""
    found = getattr(annotation, "replay_branch", None)
    if found is None:
        return
    branch, steps = found
    for i in range(tau + 1, len(steps) + 1):
        step = steps[i - 1]
        if step.parse_error or step.off_screen_point:
            yield skip("replay_branch", f"the branch's step {i} is not trained on (unparsed or off the screen)")
            continue
        try:
            prompt = prompting.build_state_messages(branch, i, project=project, steps=steps, render=_render_once)
            completion = _render_once(step, project=project, convention=branch.coordinate_convention)
        except prompting.PromptError as exc:
            yield skip("replay_branch", str(exc))
            continue
        yield sample("replay_branch", prompt, completion=completion, step=i)


def _replay_branches(annotation_ids: list[int], shots: ScreenshotCache) -> dict[int, tuple]:
    """Annotation id -> (branch trace, its steps) of the first successful replay of its correction."""
    from replays.models import ReplayRequest, ReplayStatus

    firsts: dict[int, int] = {}
    for annotation_id, branch_id in (
        ReplayRequest.objects.filter(
            annotation_id__in=annotation_ids, status=ReplayStatus.SUCCEEDED, success=True, branch__isnull=False
        )
        .order_by("id")
        .values_list("annotation_id", "branch_id")
    ):
        firsts.setdefault(annotation_id, branch_id)
    if not firsts:
        return {}
    branches = Trace.objects.in_bulk(list(firsts.values()))
    steps = _steps_by_trace(list(branches), shots)
    return {a: (branches[b], steps[b]) for a, b in firsts.items() if b in branches}


def iter_samples(
    project: Project,
    options: ExportOptions,
    stats: BuildStats,
    *,
    on_annotation: Callable[[int], None] | None = None,
    already_held: dict[int, int] | None = None,
    sample_set: str = "sft_dpo",
    round_id: int | None = None,
    annotation_ids: list[int] | None = None,
) -> Iterator[Sample | Skip]:
    """Stream samples of the project's accepted annotations (of one round's traces with ``round_id``); memory is
    bounded by one batch.

    ``sample_set`` names the samples (``SAMPLE_SETS``). ``already_held`` ({annotation id: version}, an incremental
    export's base) leaves out the annotations held there at the same version. ``annotation_ids`` (in trace order,
    from ``export_plan_annotations``: one shard of an export) keeps to those, of the ones still accepted.
    ``on_annotation(done)`` is called after each batch (progress, cancel checks)."""
    samples_of = SAMPLE_SETS[sample_set]
    done = 0
    shots = ScreenshotCache()
    if annotation_ids is None:
        annotations = _first_per_trace(accepted_annotations(project, round_id=round_id))
    else:
        annotations = _chosen(project, annotation_ids)
    if already_held:
        annotations = _not_in(annotations, already_held, stats)
    # A project none of whose answers was replayed, or had alternatives marked, has none to read for each batch.
    replayed = (sample_set == "sft_dpo" or bool(options.verification_weights)) and _has_replays(project)
    marked = sample_set == "sft_dpo" and _has_wrong_alternatives(project)
    for batch in _batches(annotations, BATCH):
        steps = _steps_by_trace([a.trace_id for a in batch], shots)
        shots.load(a.trace.final_screenshot_id for a in batch)
        for annotation in batch:
            annotation.trace.final_screenshot = shots.get(annotation.trace.final_screenshot_id)
        if replayed:
            from replays.selectors import verifications

            standing = verifications([a.pk for a in batch])
            for annotation in batch:
                annotation.replay_verification = standing.get(annotation.pk)
        if sample_set == "sft_dpo":
            from annotation.alternatives.selectors import wrong_alternatives

            wrong = wrong_alternatives([a.pk for a in batch]) if marked else {}
            branches = _replay_branches([a.pk for a in batch], shots) if options.branch_steps and replayed else {}
            for annotation in batch:
                annotation.wrong_alternatives = wrong.get(annotation.pk, [])
                annotation.replay_branch = branches.get(annotation.pk)
        for annotation in batch:
            stats.annotations.append((annotation.pk, annotation.version))
            stats.by_round[annotation.trace.round_id] += 1
            items = samples_of(annotation, steps[annotation.trace_id], project=project, options=options)
            for item in _weighted(annotation, items, options):
                if isinstance(item, Skip):
                    stats.skipped += 1
                yield item
            stats.rounded_points += rounded_points(annotation, steps[annotation.trace_id], project)
        done += len(batch)
        if on_annotation:
            on_annotation(done)


def _has_replays(project: Project) -> bool:
    from replays.models import ReplayRequest

    return ReplayRequest.objects.filter(project=project).exists()


def _has_wrong_alternatives(project: Project) -> bool:
    return AlternativeMark.objects.filter(annotation__project=project, verdict="wrong").exists()


def _weighted(annotation: AnnotationRow, items: Iterator[Sample | Skip], options: ExportOptions) -> Iterator:
    """The annotation's samples, each the correction's replays stand behind marked with its standing and, with
    ``verification_weights``, written as many times as its standing's weight says."""
    standing = getattr(annotation, "replay_verification", None)
    if standing is None and annotation.verdict == Verdict.ERROR and options.verification_weights:
        standing = "never_asked"
    copies = (options.verification_weights or {}).get(standing, 1) if standing else 1
    for item in items:
        if isinstance(item, Skip) or standing is None or item.kind in UNWEIGHTED_KINDS:
            yield item
            continue
        item.verification = standing
        for _ in range(copies):
            yield item


def _chosen(project: Project, annotation_ids: list[int]) -> Iterator[AnnotationRow]:
    # A batch of ids a query, so no query holds more parameters than a database takes.
    for chunk in _batches(iter(annotation_ids), BATCH):
        yield from _first_per_trace(accepted_annotations(project, ids=chunk))


def quality_left_out(project: Project, bar: float) -> tuple[list[int], dict]:
    """The annotators the quality filter leaves out (gold accuracy below ``bar``) and its account for the manifest
    and lineage: the bar, the accepted answers left out, and per annotator their accuracy and answers left out. An
    annotator without gold answers has no accuracy: kept, and said so."""
    from annotation.quality.selectors import annotators_below_gold_bar

    below = annotators_below_gold_bar(project, bar)
    left = dict(
        accepted_annotations(project)
        .filter(annotator_id__in=list(below))
        .order_by()
        .values_list("annotator_id")
        .annotate(n=Count("id"))
    )
    return list(below), {
        "min_gold_accuracy": bar,
        "left_out": sum(left.values()),
        "reason": f"gold accuracy below {bar:g} (every gold answer of the annotator; those without any are kept)",
        "annotators": [
            {
                "annotator": v["username"],
                "gold_right": v["right"],
                "gold_answers": v["n"],
                "accuracy": round(v["share"], 4),
                "answers_left_out": left.get(k, 0),
            }
            for k, v in sorted(below.items(), key=lambda kv: kv[1]["username"])
        ],
    }


def export_plan_annotations(
    project: Project,
    already_held: dict[int, int] | None,
    stats: BuildStats,
    *,
    slice_id: int | None = None,
    min_gold_accuracy: float | None = None,
    verified_only: bool = False,
) -> list[int]:
    """The ids of the annotations an export takes, in the order its samples are written (by trace): one accepted
    annotation per trace, less those ``already_held`` at the same version (counted in ``stats``); with
    ``slice_id``, of that slice's annotations only; with ``min_gold_accuracy``, none of an annotator whose gold
    accuracy is below it (a trace's other accepted answer may stand instead; ``stats.quality_filter`` says what was
    left out)."""
    chosen = []
    last_trace = None
    rows = accepted_annotations(project).values_list("pk", "trace_id", "version")
    if slice_id is not None:
        from insights.selectors import slice_annotation_ids

        rows = rows.filter(pk__in=slice_annotation_ids(project=project, slice_id=slice_id))
    if min_gold_accuracy is not None:
        below, stats.quality_filter = quality_left_out(project, min_gold_accuracy)
        rows = rows.exclude(annotator_id__in=below)
    rows, stats.replay_filter = replay_account(project, rows, verified_only=verified_only)
    for pk, trace_id, version in rows.iterator(chunk_size=5000):
        if trace_id == last_trace:
            continue
        last_trace = trace_id
        if already_held and already_held.get(pk) == version:
            stats.already_exported += 1
        else:
            chosen.append(pk)
            stats.trace_ids.append(trace_id)
    return chosen


# A queryset of annotations (of rows or of values): replay_account narrows it and gives back its kind.
Rows = TypeVar("Rows", bound=QuerySet[Annotation, Any])


def replay_account(project: Project, rows: Rows, *, verified_only: bool) -> tuple[Rows, dict[str, Any] | None]:
    """The planned answers' corrections by replay verification (the manifest's ``replay_filter``), and the rows
    less the unverified corrections with ``verified_only``; None for the account of a project without replays."""
    from replays.models import ReplayRequest, ReplayStatus
    from replays.selectors import VERIFICATIONS, VERIFIED, verifications

    if not verified_only and not ReplayRequest.objects.filter(project=project).exists():
        return rows, None  # a project without replays: nothing to count, and its corrections are not read twice
    corrections = list(rows.filter(verdict=Verdict.ERROR).values_list("pk", flat=True))
    standing = verifications(corrections)
    if not standing and not verified_only:
        return rows, None
    account: dict[str, Any] = {"verified_only": verified_only, **dict.fromkeys(VERIFICATIONS, 0), "never_asked": 0}
    for pk in corrections:
        account[standing.get(pk, "never_asked")] += 1
    kept = corrections
    if verified_only:
        unverified = [pk for pk in corrections if standing.get(pk) != VERIFIED]
        account["left_out"] = len(unverified)
        rows = rows.exclude(pk__in=unverified)
        kept = [pk for pk in corrections if standing.get(pk) == VERIFIED]
    # Lineage: the replays whose verdicts stand behind the bundle's corrections.
    account["replays"] = sorted(
        ReplayRequest.objects.filter(annotation_id__in=kept, status=ReplayStatus.SUCCEEDED).values_list("pk", flat=True)
    )
    return rows, account


def traces_with_samples(
    project: Project, annotation_ids: list[int], options: ExportOptions, *, sample_set: str
) -> set[int]:
    """The traces of ``annotation_ids`` whose annotation gives at least one sample of ``sample_set``: the samples are
    built as a shard builds them, and only counted."""
    items = iter_samples(project, options, BuildStats(), sample_set=sample_set, annotation_ids=annotation_ids)
    return {item.trace_id for item in items if isinstance(item, Sample)}


def count_sources(project: Project) -> int:
    return accepted_annotations(project).order_by().values("trace_id").distinct().count()
