"""Checkpoint evaluation writes: create an evaluation job, run it (in a gpu worker), store one row per sample.

The samples are the export's (exports.builders.iter_samples: the same accepted annotations, the same prompts from
traces.prompting) of the kinds error_correction, post_reflection and dpo, in the chosen selection: the bundle's
validation split (validation_fraction + split_seed, as an export has them), all samples, and optionally one round's
traces only. The scorer is pre-scoring's (prescoring.qwen2vl, log-likelihoods only, no generation).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings as django_settings
from django.utils.translation import gettext

from annotation.models import Annotation
from evaluation import selectors
from evaluation.models import EvaluationJob, EvaluationSample, SampleKind
from exports.builders import BuildStats, ExportOptions, OptionsError, Sample, Skip, iter_samples
from exports.models import ExportJob
from prescoring.qwen2vl import ModelLoadError, read_model_config
from prescoring.services import image_inputs, model_image_budget
from studio.engine import job_enqueue, job_run_here
from studio.errors import Invalid
from studio.jobs import JobFailed, job_add_error, job_progress
from traces import prompting
from traces.models import Project
from traces.selectors import round_resolve

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

SPLITS = ("validation", "all")
KINDS = tuple(SampleKind.values)
MAX_JOB_ERRORS = 200
SETTINGS = {
    "batch_tokens": 16384,  # padded tokens per forward pass
    "max_batch": None,  # None: 16 on GPU, 1 on CPU (see Qwen2VLScorer.score)
    "chunk_samples": 32,  # samples encoded and stored at once (bounds the image patches held; progress step)
    "device": None,  # None: cuda when present, else cpu
    "dtype": None,  # None: bfloat16 on cuda, float32 on cpu
}
SETTING_TYPES: dict[str, tuple[type, ...]] = {
    "batch_tokens": (int,),
    "max_batch": (int, type(None)),
    "chunk_samples": (int,),
    "device": (str, type(None)),
    "dtype": (str, type(None)),
    "min_pixels": (int, type(None)),
    "max_pixels": (int, type(None)),
}


# --- creating a job --------------------------------------------------------------------------------------------


def checkpoints_dir() -> str:
    """The folder whose sub-folders are the checkpoints the page offers (STUDIO_EVALUATION_CHECKPOINTS_DIR); ""
    when none is set, and then the page says what to set."""
    return django_settings.EVALUATION_CHECKPOINTS_DIR or ""


def model_dir_resolve(model_dir: str) -> str:
    """The checkpoint directory ``model_dir`` names: a path, or a name inside the configured checkpoints folder.
    Invalid, naming it, when it is no Qwen2-VL / Qwen2.5-VL checkpoint directory."""
    text = (model_dir or "").strip()
    if not text:
        raise Invalid(gettext("model_dir: name a checkpoint directory on the gpu workers"), field="model_dir")
    path = Path(text)
    if not path.is_absolute() and checkpoints_dir():
        path = Path(checkpoints_dir()) / path
    try:
        read_model_config(path)
    except ModelLoadError as exc:
        raise Invalid(gettext("model_dir: %(error)s") % {"error": exc}, field="model_dir") from None
    return str(path)


def _settings_resolve(project: Project, overrides: dict | None) -> dict:
    resolved = {**SETTINGS, **model_image_budget(project)}
    for key, value in (overrides or {}).items():
        if key not in resolved:
            raise Invalid(
                gettext("settings: unknown setting %(key)s (known: %(known)s)")
                % {"key": repr(key), "known": ", ".join(sorted(resolved))},
                field="settings",
            )
        if isinstance(value, bool) or not isinstance(value, SETTING_TYPES[key]):
            raise Invalid(
                gettext("settings: %(key)s has the wrong type: %(value)s") % {"key": repr(key), "value": repr(value)},
                field="settings",
            )
        if isinstance(value, int) and value <= 0:
            raise Invalid(
                gettext("settings: %(key)s must be positive, got %(value)s") % {"key": repr(key), "value": repr(value)},
                field="settings",
            )
        resolved[key] = value
    return resolved


def _selection_resolve(
    project: Project,
    *,
    split: str | None,
    round_ref: str | int | None,
    validation_fraction: float | None,
    split_seed: int | None,
    export_id: int | None,
) -> dict:
    """The samples to score, as stored on the job. The split's options come from an export (``export_id``: the
    bundle a checkpoint was trained on) or are given; a round narrows to its traces. Without a split named, a round
    is scored whole and the project's samples on the validation split."""
    chosen_round = round_resolve(project, round_ref)
    split = split or ("all" if chosen_round is not None else "validation")
    if split not in SPLITS:
        raise Invalid(
            gettext("split: %(split)s is not one of %(splits)s") % {"split": repr(split), "splits": ", ".join(SPLITS)},
            field="split",
        )
    raw: dict = {}
    if export_id is not None:
        if validation_fraction is not None or split_seed is not None:
            raise Invalid(
                gettext("export: an export brings its own validation_fraction and split_seed"), field="export"
            )
        export = ExportJob.objects.filter(pk=export_id, project=project).first()
        if export is None:
            raise Invalid(
                gettext("export: project %(project)s has no export %(id)s")
                % {"project": repr(project.name), "id": export_id},
                field="export",
            )
        keys = ("validation_fraction", "split_seed", "unparsed_history", "validation_trace", "train_only")
        raw = {key: export.options[key] for key in keys if key in (export.options or {})}
    if validation_fraction is not None:
        raw["validation_fraction"] = validation_fraction
    if split_seed is not None:
        raw["split_seed"] = split_seed
    try:
        options = ExportOptions.parse(raw)
    except OptionsError as exc:
        raise Invalid(str(exc), field="selection") from None
    if split == "validation" and options.validation_fraction == 0:
        raise Invalid(gettext("split: validation_fraction is 0, so the validation split is empty"), field="split")
    if split == "validation" and options.train_only:
        raise Invalid(
            gettext(
                "split: export %(id)s trained every sample (fewer than two of its traces gave samples), so its "
                "validation split is empty; evaluate split 'all' or a round"
            )
            % {"id": export_id},
            field="split",
        )
    return {
        "split": split,
        "round": chosen_round.pk if chosen_round else None,
        "round_name": chosen_round.name if chosen_round else "",
        "export": export_id,
        "validation_fraction": options.validation_fraction,
        "split_seed": options.split_seed,
        "unparsed_history": options.unparsed_history,
        # The export's plan sent this trace to validation (no seeded score fell under the fraction).
        "validation_trace": options.validation_trace,
        # The export's plan found fewer than two traces giving samples: every sample of it trained.
        "train_only": options.train_only,
    }


def evaluation_job_create(
    *,
    project: Project,
    user: User | None,
    model_dir: str,
    checkpoint: str = "",
    split: str | None = None,
    round_ref: str | int | None = None,
    validation_fraction: float | None = None,
    split_seed: int | None = None,
    export_id: int | None = None,
    settings: dict | None = None,
    enqueue: bool = True,
) -> EvaluationJob:
    """Validate and queue an evaluation of the checkpoint in ``model_dir``. Raises Invalid naming a bad field."""
    path = model_dir_resolve(model_dir)
    checkpoint = (checkpoint or "").strip() or Path(path).name
    if len(checkpoint) > 200:
        raise Invalid(gettext("checkpoint: at most 200 characters"), field="checkpoint")
    selection = _selection_resolve(
        project,
        split=split,
        round_ref=round_ref,
        validation_fraction=validation_fraction,
        split_seed=split_seed,
        export_id=export_id,
    )
    job = EvaluationJob.objects.create(
        project=project,
        created_by=user,
        checkpoint=checkpoint,
        model_dir=path,
        settings=_settings_resolve(project, settings),
        selection=selection,
    )
    if enqueue:
        job_enqueue(job)
    return job


# --- running it ------------------------------------------------------------------------------------------------


@dataclass
class _Selected:
    samples: list[Sample]
    skips: list[Skip]
    versions: dict[int, int]  # annotation id -> the version the samples were built from


def selected_samples(job: EvaluationJob) -> _Selected:
    """The job's samples, built by the export's builder from the selection stored on the job."""
    selection = job.selection
    options = ExportOptions(
        validation_fraction=selection["validation_fraction"],
        split_seed=selection["split_seed"],
        unparsed_history=selection.get("unparsed_history", "skip"),
        validation_trace=selection.get("validation_trace"),
        train_only=selection.get("train_only", False),
    )
    stats = BuildStats()
    samples: list[Sample] = []
    skips: list[Skip] = []
    for item in iter_samples(job.project, options, stats, sample_set="sft_dpo", round_id=selection.get("round")):
        if item.kind not in KINDS:
            continue
        if isinstance(item, Skip):
            skips.append(item)
        elif selection["split"] == "all" or item.split == selection["split"]:
            samples.append(item)
    return _Selected(samples, skips, dict(stats.annotations))


def evaluation_job_run(*, job_id: int, attempt: int | None = None) -> EvaluationJob:
    """Run an evaluation job; a run taken over keeps the rows already stored and scores the rest."""
    return job_run_here(EvaluationJob.objects.get(pk=job_id), attempt=attempt)


def _targets(sample: Sample) -> list[str]:
    return [sample.chosen or "", sample.rejected or ""] if sample.kind == SampleKind.DPO else [sample.completion or ""]


def _row(job: EvaluationJob, sample: Sample, scored: list, version: int, info: Mapping) -> EvaluationSample:
    """The stored row of a scored sample; ``scored``: the target's result (a pair: chosen, then rejected)."""
    chosen, rejected = scored[0], (scored[1] if len(scored) > 1 else None)
    return EvaluationSample(
        job=job,
        annotation_id=sample.annotation_id,
        annotation_version=version,
        kind=sample.kind,
        split=sample.split,
        category=info["error_category"] or "",
        round_id=info["trace__round_id"],
        round_name=info["trace__round__name"] or "",
        loglik_sum=float(chosen.loglik_sum),
        n_tokens=int(chosen.n_tokens),
        rejected_loglik_sum=None if rejected is None else float(rejected.loglik_sum),
        rejected_n_tokens=None if rejected is None else int(rejected.n_tokens),
    )


def evaluation_work(job: EvaluationJob) -> str:
    from prescoring.qwen2vl import ScoreRequest, load_scorer

    opts = job.settings
    try:
        # The worker's one loaded model, shared with pre-scoring: the same settings give the same scorer.
        scorer = load_scorer(
            job.model_dir,
            device=opts.get("device"),
            dtype=opts.get("dtype"),
            static_decode=django_settings.PRESCORE_STATIC_DECODE,
        )
        weights_hash = scorer.weights_hash
    except ModelLoadError as exc:  # no retry loads a model that is not there
        raise JobFailed(gettext("model not loaded: %(problem)s") % {"problem": exc}) from exc
    job.model_name, job.weights_hash = scorer.model_name[:200], weights_hash
    EvaluationJob.objects.filter(pk=job.pk).update(model_name=job.model_name, weights_hash=job.weights_hash)

    selected = selected_samples(job)
    # The errors start again with each attempt: the builder's skips are the same, and failed samples are tried again.
    job.errors = [
        {"annotation": skip.annotation_id, "kind": skip.kind, "error": skip.reason}
        for skip in selected.skips[:MAX_JOB_ERRORS]
    ]
    EvaluationJob.objects.filter(pk=job.pk).update(errors=job.errors)
    meta = {
        row["pk"]: row
        for row in Annotation.objects.filter(pk__in=[s.annotation_id for s in selected.samples]).values(
            "pk", "error_category", "trace__round_id", "trace__round__name"
        )
    }
    done = set(EvaluationSample.objects.filter(job=job).values_list("annotation_id", "kind"))
    todo = [s for s in selected.samples if (s.annotation_id, s.kind) not in done]
    total = len(selected.samples)
    job.samples_total, job.samples_skipped = total, len(selected.skips)
    EvaluationJob.objects.filter(pk=job.pk).update(samples_total=total, samples_skipped=len(selected.skips))
    job_progress(job, done=total - len(todo), total=total)
    chunk: int = opts["chunk_samples"]
    for start in range(0, len(todo), chunk):
        part = todo[start : start + chunk]
        # One request per distinct (prompt, target): a pair's corrected side is the error_correction sample's
        # target at the same s_τ, scored once.
        requests: list = []
        index: dict[tuple, int] = {}
        wanted: list[list[int]] = []
        for sample in part:
            prompt = sample.prompt
            assert isinstance(prompt, prompting.StatePrompt)  # the sft_dpo set's samples are states, never trajectories
            keys = []
            state = "s_tau+1" if sample.kind == SampleKind.POST_REFLECTION else "s_tau"
            for target in _targets(sample):
                key = (sample.annotation_id, state, target)
                if key not in index:
                    index[key] = len(requests)
                    requests.append(
                        ScoreRequest(
                            len(requests),
                            prompting.to_chat_messages(prompt),
                            image_inputs(prompt),
                            target,
                        )
                    )
                keys.append(index[key])
            wanted.append(keys)
        results = scorer.score(
            requests,
            batch_tokens=opts["batch_tokens"],
            max_batch=opts["max_batch"],
            generate=False,
            min_pixels=opts.get("min_pixels"),
            max_pixels=opts.get("max_pixels"),
        )
        rows = []
        for sample, keys in zip(part, wanted):
            scored = [results[k] for k in keys]
            problem = next((r.error for r in scored if r.error), None)
            if problem:
                if len(job.errors) < MAX_JOB_ERRORS:
                    job_add_error(job, {"annotation": sample.annotation_id, "kind": sample.kind, "error": problem})
                continue
            rows.append(_row(job, sample, scored, selected.versions[sample.annotation_id], meta[sample.annotation_id]))
        EvaluationSample.objects.bulk_create(rows, ignore_conflicts=True)
        job_progress(job, done=total - len(todo) + start + len(part))
    metrics = selectors.evaluation_metrics(job)
    scored_count = metrics["overall"]["samples"]
    failed = total - scored_count  # a sample that failed has no row, whichever attempt tried it
    EvaluationJob.objects.filter(pk=job.pk).update(metrics=metrics, samples_scored=scored_count, samples_failed=failed)
    job.metrics, job.samples_scored, job.samples_failed = metrics, scored_count, failed
    if total and not scored_count:
        raise JobFailed(gettext("none of the %(total)s samples could be scored; see the errors") % {"total": total})
    return _evaluation_summary(metrics["overall"], scored=scored_count, failed=failed, skipped=len(selected.skips))


def _evaluation_summary(overall: dict, *, scored: int, failed: int, skipped: int) -> str:
    """The job's summary, in the job's language (its requester's: studio.engine)."""
    said = gettext("%(scored)s samples scored, %(failed)s failed, %(skipped)s skipped by the builder") % {
        "scored": scored,
        "failed": failed,
        "skipped": skipped,
    }
    accuracy = overall["preference_accuracy"]
    if accuracy is not None:
        said += gettext("; preference accuracy %(accuracy)s over %(pairs)s pairs") % {
            "accuracy": f"{accuracy:.3f}",
            "pairs": overall["pairs"],
        }
    return said
