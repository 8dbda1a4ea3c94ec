"""Pre-scoring writes: create a scoring job, run it (in a worker), store suggestions.

Two scorers: ``rules`` (CPU, default queue) and ``qwen2vl`` (a local Qwen2-VL / Qwen2.5-VL
checkpoint, queue ``gpu``). Each run stores its own StepSuggestion/TraceSuggestion rows tagged
with the scorer, model name, weights hash and settings, so scoring again (another model, other
settings) adds rows and keeps the old ones. A step that fails is reported on the job
(job_add_error) and the run goes on.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings as django_settings
from django.utils.translation import gettext

from prescoring import assess, rules
from prescoring.models import PrescoreJob, Scorer, StepSuggestion, TraceSuggestion
from prescoring.qwen2vl import ModelLoadError, read_model_config
from studio.db import atomic_with_retry
from studio.engine import job_enqueue, job_run_here
from studio.errors import Invalid, describe_error
from studio.jobs import job_add_error
from studio.models import JobStatus
from studio.shards import ShardFatal, ShardProgress
from traces import grammar, prompting
from traces.models import Project, Step, Trace
from traces.selectors import step_element_boxes

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import QuerySet
    from PIL import Image

    from prescoring.qwen2vl import ScoreRequest, ScoreResult
    from studio.models import JobShard

log = logging.getLogger(__name__)

RULE_SETTINGS = {"change_threshold": rules.DEFAULT_CHANGE_THRESHOLD}
MODEL_SETTINGS = {
    "batch_tokens": None,  # padded tokens per forward pass; None: 327,680 on GPU, 16,384 on CPU
    "max_batch": None,  # None: 48 on GPU, 1 on CPU (see Qwen2VLScorer.score)
    "chunk_steps": 48,  # steps encoded at once (bounds the memory held in image patches; fills a GPU batch)
    "generate": True,  # also ask the model for its own action (greedy)
    "max_new_tokens": 128,
    "device": None,  # None: cuda when present, else cpu
    "dtype": None,  # None: bfloat16 on cuda, float32 on cpu
}
SETTING_TYPES: dict[str, type | tuple[type, ...]] = {
    "change_threshold": (int, float),
    "batch_tokens": (int, type(None)),
    "max_batch": (int, type(None)),
    "chunk_steps": int,
    "generate": bool,
    "max_new_tokens": int,
    "device": (str, type(None)),
    "dtype": (str, type(None)),
    "min_pixels": (int, type(None)),
    "max_pixels": (int, type(None)),
}


class PrescoreError(Invalid):
    """Bad input for a scoring job, worded for the person who asked."""


# --- jobs ------------------------------------------------------------------------------------


def _resolve_settings(*, scorer: str, project: Project, overrides: dict | None) -> dict:
    base: dict[str, Any] = dict(RULE_SETTINGS if scorer == Scorer.RULES else MODEL_SETTINGS)
    if scorer == Scorer.QWEN2VL:
        base.update(model_image_budget(project))
    for key, value in (overrides or {}).items():
        if key not in base:
            raise PrescoreError(
                gettext("unknown setting '%(key)s' for the %(scorer)s scorer (known: %(known)s)")
                % {"key": key, "scorer": scorer, "known": ", ".join(sorted(base))}
            )
        if isinstance(value, bool) and SETTING_TYPES[key] is not bool or not isinstance(value, SETTING_TYPES[key]):
            raise PrescoreError(
                gettext("setting '%(key)s' has the wrong type: %(value)s") % {"key": key, "value": repr(value)}
            )
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            raise PrescoreError(
                gettext("setting '%(key)s' must be positive, got %(value)s") % {"key": key, "value": repr(value)}
            )
        base[key] = value
    return base


def model_image_budget(project: Project) -> dict:
    """min_pixels / max_pixels a model scores the project's screenshots with: the image budget the coordinates were
    produced under (docs/formats.md, "Coordinates"); None = the checkpoint's own. Pre-scoring and checkpoint
    evaluation both use it."""
    smart = project.coordinate_convention == grammar.SMART_RESIZE_PIXELS
    return {"min_pixels": grammar.MIN_PIXELS if smart else None, "max_pixels": project.max_pixels if smart else None}


def configured_model_dir() -> str:
    """The model the "model" scorer uses when none is named (STUDIO_PRESCORE_MODEL_DIR); "" when none is set, and
    then the pages offer no model run but say what to set."""
    return django_settings.PRESCORE_MODEL_DIR or ""


def prescore_job_create(
    *,
    project: Project,
    user: User | None,
    scorer: str,
    model_path: str = "",
    settings: dict | None = None,
    trace_ids: list[int] | None = None,
    enqueue: bool = True,
) -> PrescoreJob:
    """Validate and queue a scoring run. Raises PrescoreError naming the problem."""
    if scorer not in Scorer.values:
        raise PrescoreError(
            gettext("unknown scorer '%(scorer)s' (use %(scorers)s)")
            % {"scorer": scorer, "scorers": gettext(" or ").join(Scorer.values)}
        )
    resolved = _resolve_settings(scorer=scorer, project=project, overrides=settings)
    warnings = []
    if scorer == Scorer.QWEN2VL:
        model_path = model_path or configured_model_dir()
        if not model_path:
            raise PrescoreError(gettext("no model: give a model path or set STUDIO_PRESCORE_MODEL_DIR"))
        try:
            config = read_model_config(model_path)
        except ModelLoadError as exc:
            raise PrescoreError(str(exc)) from None
        expected = "qwen2_5_vl" if project.coordinate_convention == grammar.SMART_RESIZE_PIXELS else "qwen2_vl"
        if config["model_type"] != expected:
            warnings.append(
                {
                    "error": gettext(
                        "the project's %(convention)s coordinates are usually scored with a %(expected)s model; "
                        "this checkpoint is %(model_type)s"
                    )
                    % {
                        "convention": project.coordinate_convention,
                        "expected": expected,
                        "model_type": config["model_type"],
                    }
                }
            )
    elif model_path:
        raise PrescoreError(gettext("the rules scorer takes no model"))
    trace_ids = sorted(set(trace_ids or []))
    if trace_ids:
        found = set(Trace.objects.filter(project=project, pk__in=trace_ids).values_list("pk", flat=True))
        missing = [pk for pk in trace_ids if pk not in found]
        if missing:
            raise PrescoreError(
                gettext("traces not in project %(project)s: %(traces)s")
                % {"project": project.name, "traces": ", ".join(map(str, missing))}
            )
    job = PrescoreJob.objects.create(
        project=project,
        created_by=user,
        scorer=scorer,
        model_path=str(model_path),
        settings=resolved,
        trace_ids=trace_ids,
        errors=warnings,
    )
    if enqueue:
        job_enqueue(job)
    return job


def _job_traces(job: PrescoreJob) -> QuerySet[Trace]:
    # A trace still receiving steps is scored once its runner ends it (a later run), not half-way.
    traces = (
        Trace.objects.filter(project=job.project, receiving=False).select_related("final_screenshot").order_by("id")
    )
    return traces.filter(pk__in=job.trace_ids) if job.trace_ids else traces


def prescore_plan(job: PrescoreJob) -> list[tuple[list[int], int]]:
    """Whole traces in id order, packed up to PRESCORE_SHARD_STEPS steps a shard: a trace never splits, because
    its steps' history windows and its summary need all of it."""
    pieces: list[tuple[list[int], int]] = []
    current: list[int] = []
    size = 0
    limit = max(1, django_settings.PRESCORE_SHARD_STEPS)
    for trace_id, steps in _job_traces(job).values_list("id", "step_count"):
        if current and size + steps > limit:
            pieces.append((current, size))
            current, size = [], 0
        current.append(trace_id)
        size += steps
    if current:
        pieces.append((current, size))
    return pieces


def prescore_job_run(*, job_id: int, on_progress: Callable[[PrescoreJob], None] | None = None) -> PrescoreJob:
    """Run a scoring job in this process, shard by shard, with the shard runs a worker makes (the ``prescore``
    command, tests). Steps already scored by the job are kept."""
    return job_run_here(PrescoreJob.objects.get(pk=job_id), on_progress=on_progress)


def prescore_queue(job: PrescoreJob) -> str:
    """Model scoring runs on the ``gpu`` workers (the model stays loaded there); rule scoring on the default queue."""
    return "gpu" if job.scorer == Scorer.QWEN2VL else "default"


def prescore_summarize(job: PrescoreJob, shards: list[JobShard]) -> str:
    """The final state's counts (rows stored once, whatever the runs and retries), not a sum over attempts."""
    scored = StepSuggestion.objects.filter(job=job).count()
    failed = sum(shard.failed for shard in shards)
    PrescoreJob.objects.filter(pk=job.pk).update(steps_scored=scored, steps_failed=failed)
    return gettext("%(scored)s steps scored, %(failed)s failed") % {"scored": scored, "failed": failed}


def prescore_shard_work(job: PrescoreJob, shard: JobShard, progress: ShardProgress) -> None:
    traces = list(
        Trace.objects.filter(project=job.project, pk__in=shard.items).select_related("final_screenshot").order_by("id")
    )
    counts = _Progress(job, progress)
    step_ids = list(Step.objects.filter(trace_id__in=shard.items).values_list("pk", flat=True))
    counts.start(already=StepSuggestion.objects.filter(job=job, step_id__in=step_ids).count())
    if job.scorer == Scorer.RULES:
        _run_rules(job, traces, counts)
        return
    try:
        _run_model(job, traces, counts)
    except ModelLoadError as exc:  # no retry loads a model that is not there
        raise ShardFatal(f"model not loaded: {exc}") from exc


@dataclass
class _Progress:
    """A shard's counts; the job shows the sums over its shards (steps scored, failed, done)."""

    job: PrescoreJob
    shard: ShardProgress

    def start(self, *, already: int) -> None:
        self.shard.start(done=already)
        self._totals()

    def add(self, *, scored: int = 0, failed: int = 0) -> None:
        self.shard.add(done=scored, failed=failed)
        self._totals()
        self.shard.report()
        if django_settings.PRESCORE_THROTTLE_S:
            time.sleep(django_settings.PRESCORE_THROTTLE_S)

    def _totals(self) -> None:
        done, failed = self.shard.totals
        self.job.steps_scored, self.job.steps_failed = done, failed
        PrescoreJob.objects.filter(pk=self.job.pk, status=JobStatus.RUNNING).update(
            steps_scored=done, steps_failed=failed
        )

    def guard(self) -> None:
        self.shard.guard()


def _image_loader(screenshot: Any) -> Callable:
    """Loads the screenshot; an older history screenshot under the project's image budget (``ReducedImage``) at
    the size it is sent at, which the processor then leaves as it is (the same image the exports train on)."""
    reduced = screenshot if isinstance(screenshot, prompting.ReducedImage) else None
    stored = reduced.screenshot if reduced is not None else screenshot

    def load() -> Image.Image:
        from PIL import Image

        with stored.image.open("rb") as handle:
            image = Image.open(io.BytesIO(handle.read()))
            image.load()
        return reduced.resize(image) if reduced is not None else image

    return load


def image_inputs(prompt: prompting.StatePrompt) -> list:
    """A prompt's screenshots as the scorer takes them (keyed by sha256, read from storage when first needed)."""
    from prescoring.qwen2vl import ImageInput

    return [ImageInput(shot.sha256, _image_loader(shot)) for shot in prompt.images]


def _recorded_actions(step: Step, project: Project | None = None) -> list[grammar.Action]:
    """The step's recorded actions; with ``project``, in its convention (the model's replies are in it)."""
    if step.parse_error:
        return []
    try:
        if project is None:
            return [grammar.Action.from_json(a) for a in step.parsed_actions]
        return prompting.step_actions(step, project=project, convention=step.trace.coordinate_convention)
    except (ValueError, TypeError, prompting.PromptError):
        return []


@atomic_with_retry
def _store_trace(
    *, job: PrescoreJob, trace: Trace, suggestions: list[StepSuggestion], guard: Callable[[], None]
) -> TraceSuggestion:
    """Step rows (new ones) and the trace's summary over all of this job's rows for the trace; ``guard`` refuses
    the write once the job is cancelled or the shard taken over (it locks the job row first)."""
    guard()
    StepSuggestion.objects.bulk_create(suggestions, ignore_conflicts=True)
    # By the trace's step ids (the (job, step) unique index), not by a join on the trace: the planner then read
    # every row the job had stored (251 ms per trace at 86,000 rows; 0.3 ms this way), so a job slowed as it went.
    step_ids = list(trace.steps.values_list("pk", flat=True))
    rows = list(
        StepSuggestion.objects.filter(job=job, step_id__in=step_ids).select_related("step").order_by("step__index")
    )
    first = rules.first_error([r.step.index for r in rows], [r.suspicion for r in rows])
    summary, _ = TraceSuggestion.objects.update_or_create(
        job=job,
        trace=trace,
        defaults=dict(
            scorer=job.scorer,
            model_name=job.model_name,
            weights_hash=job.weights_hash,
            suggested_tau=first.index,
            tau_probability=first.probability,
            no_error_probability=first.no_error_probability,
            max_suspicion=max((r.suspicion for r in rows), default=0.0),
        ),
    )
    return summary


# --- rules -----------------------------------------------------------------------------------


def _scored_steps(job: PrescoreJob, steps: list[Step]) -> set[int]:
    """The ids of ``steps`` this job has already scored (a re-run shard skips them). By the steps' ids, so the
    (job, step) unique index answers it: filtering on the steps' trace instead joined every suggestion the job had
    made so far, and a 200,000-step job slowed down as it went (174 ms per trace at 110,000 suggestions)."""
    return set(
        StepSuggestion.objects.filter(job=job, step_id__in=[s.pk for s in steps]).values_list("step_id", flat=True)
    )


def _run_rules(job: PrescoreJob, traces: list[Trace], progress: _Progress) -> None:
    project = job.project
    threshold = float(job.settings.get("change_threshold", rules.DEFAULT_CHANGE_THRESHOLD))
    for trace in traces:
        steps = list(trace.steps.select_related("screenshot").order_by("index"))
        done = _scored_steps(job, steps)
        if steps and len(done) == len(steps):
            continue
        problems: list[dict] = []

        def guarded(
            load: Callable[[], Any], where: int | str, problems: list[dict] = problems, trace: Trace = trace
        ) -> Callable[[], Any]:
            def inner() -> Any:
                try:
                    return load()
                except Exception as exc:  # an unreadable screenshot only loses the image checks
                    problems.append({"trace": trace.pk, "step": where, "error": f"screenshot unreadable: {exc}"})
                    return None

            return inner

        rule_steps = [
            rules.RuleStep(
                index=s.index,
                action_text=s.action_text,
                actions=_recorded_actions(s),
                parse_error=s.parse_error,
                image=guarded(_image_loader(s.screenshot), s.index) if s.screenshot_id else None,
                width=s.screenshot.width if s.screenshot else None,
                height=s.screenshot.height if s.screenshot else None,
                element_boxes=step_element_boxes(s),
            )
            for s in steps
        ]
        final = guarded(_image_loader(trace.final_screenshot), "final") if trace.final_screenshot_id else None
        try:
            flags = rules.step_flags(
                rule_steps,
                final_image=final,
                convention=trace.coordinate_convention,
                platform=project.platform,
                max_pixels=project.max_pixels,
                change_threshold=threshold,
            )
        except Exception as exc:
            log.exception("rules failed on trace %s", trace.pk)
            job_add_error(job, {"trace": trace.pk, "error": describe_error(exc)})
            progress.add(failed=len(steps) - len(done))
            continue
        for problem in problems:
            job_add_error(job, problem)
        suggestions = [
            StepSuggestion(
                step=s, job=job, scorer=job.scorer, settings=job.settings, flags=f, suspicion=rules.flags_suspicion(f)
            )
            for s, f in zip(steps, flags)
            if s.pk not in done
        ]
        _store_trace(job=job, trace=trace, suggestions=suggestions, guard=progress.guard)
        progress.add(scored=len(suggestions))


# --- model -----------------------------------------------------------------------------------


def step_score_request(trace: Trace, step: Step, *, project: Project, steps: list[Step]) -> ScoreRequest:
    """What the model scores for a recorded step: s_i from the one prompt builder and the step's reply as the one
    renderer writes it (``prompting.render_step``, in the trace's convention: the history and the exports write the
    same text). Raises PromptError when the state has no prompt."""
    from prescoring.qwen2vl import ScoreRequest

    prompt = prompting.build_state_messages(trace, step.index, project=project, steps=steps)
    target = prompting.render_step(step, project=project, convention=trace.coordinate_convention)
    return ScoreRequest(step.pk, prompting.to_chat_messages(prompt), image_inputs(prompt), target)


@dataclass
class _Pending:
    trace: Trace
    step: Step
    steps: list[Step]


def _run_model(job: PrescoreJob, traces: list[Trace], progress: _Progress) -> None:
    from prescoring.qwen2vl import load_scorer

    project = job.project
    opts = job.settings
    scorer = load_scorer(
        job.model_path,
        device=opts.get("device"),
        dtype=opts.get("dtype"),
        static_decode=django_settings.PRESCORE_STATIC_DECODE,
    )
    job.model_name, job.weights_hash = scorer.model_name[:200], scorer.weights_hash
    PrescoreJob.objects.filter(pk=job.pk).update(model_name=job.model_name, weights_hash=job.weights_hash)
    remaining: dict[int, int] = {}
    finished_rows: dict[int, list[StepSuggestion]] = {}
    failed: dict[int, int] = {}
    pending: list[_Pending] = []

    def flush() -> None:
        if not pending:
            return
        requests, order = [], []
        for item in pending:
            try:
                requests.append(step_score_request(item.trace, item.step, project=project, steps=item.steps))
            except prompting.PromptError as exc:
                job_add_error(job, {"trace": item.trace.pk, "step": item.step.index, "error": str(exc)})
                _step_done(item, None)
                continue
            order.append(item)
        results = scorer.score(
            requests,
            batch_tokens=opts["batch_tokens"],
            max_batch=opts["max_batch"],
            generate=opts["generate"],
            max_new_tokens=opts["max_new_tokens"],
            min_pixels=opts.get("min_pixels"),
            max_pixels=opts.get("max_pixels"),
        )
        for item, result in zip(order, results):
            if result.error:
                job_add_error(job, {"trace": item.trace.pk, "step": item.step.index, "error": result.error})
                _step_done(item, None)
            else:
                _step_done(item, _model_suggestion(job, project, item.step, result))
        pending.clear()

    def _step_done(item: _Pending, row: StepSuggestion | None) -> None:
        """Count the step; when it was the trace's last one, store the trace's rows and summary."""
        trace_id = item.trace.pk
        if row is None:
            failed[trace_id] = failed.get(trace_id, 0) + 1
        else:
            finished_rows.setdefault(trace_id, []).append(row)
        remaining[trace_id] -= 1
        if remaining[trace_id] == 0:
            rows = finished_rows.pop(trace_id, [])
            _store_trace(job=job, trace=item.trace, suggestions=rows, guard=progress.guard)
            progress.add(scored=len(rows), failed=failed.pop(trace_id, 0))

    for trace in traces:
        steps = list(trace.steps.select_related("screenshot").order_by("index"))
        done = _scored_steps(job, steps)
        todo = [s for s in steps if s.pk not in done]
        if not todo:
            continue
        remaining[trace.pk] = len(todo)
        for step in todo:
            pending.append(_Pending(trace, step, steps))
            if len(pending) >= opts["chunk_steps"]:
                flush()
    flush()


def _model_suggestion(job: PrescoreJob, project: Project, step: Step, result: ScoreResult) -> StepSuggestion:
    loglik_mean = result.loglik_mean
    if loglik_mean is None:  # a failed score is reported as such, never suggested from
        raise ValueError(f"step {step.pk} has no score to suggest from: {result.error}")
    width = step.screenshot.width if step.screenshot else None
    height = step.screenshot.height if step.screenshot else None
    model_actions = assess.parse_model_reply(result.generated) if result.generated else []
    comparison = assess.compare_actions(
        _recorded_actions(step, project),
        model_actions,
        convention=project.coordinate_convention,
        width=width,
        height=height,
        max_pixels=project.max_pixels,
    )
    return StepSuggestion(
        step=step,
        job=job,
        scorer=job.scorer,
        model_name=job.model_name,
        weights_hash=job.weights_hash,
        settings=job.settings,
        loglik_sum=result.loglik_sum,
        loglik_mean=result.loglik_mean,
        n_tokens=result.n_tokens,
        model_action=result.generated or "",
        model_action_parsed=[a.to_json() for a in model_actions],
        agrees=comparison.agrees,
        click_distance=comparison.click_distance,
        suspicion=assess.model_suspicion(loglik_mean, comparison.disagreement),
    )
