"""On-policy alternatives: ask the configured checkpoint for k replies at an annotation's step, sample them (in a
gpu worker), and record what the annotator says of them (wrong, or taken as the correction's starting point).

The replies are sampled at s_i from the one prompt builder (traces.prompting), with the pre-scoring model
(STUDIO_PRESCORE_MODEL_DIR, prescoring.qwen2vl: one prefill shared by the k samples), parsed by the grammar
(prescoring.assess.parse_model_reply) and stored per (step, weights hash, settings): asking again with the same
key re-uses them. Alternatives marked wrong become ``dpo_on_policy`` pairs in exports (exports.builders).
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING

from django.conf import settings as django_settings
from django.db import transaction
from django.utils.translation import gettext

from annotation.models import (
    AlternativeMark,
    AlternativesJob,
    AlternativeVerdict,
    Annotation,
    StepAlternative,
)
from annotation.services import NotEditable, annotation_record_edit
from annotation.workflow import EDITABLE_BY_ANNOTATOR
from prescoring import assess
from prescoring.qwen2vl import ModelLoadError, read_model_config
from prescoring.services import configured_model_dir, image_inputs, model_image_budget
from studio.engine import job_enqueue, job_run_here
from studio.errors import Conflict, Invalid, NotFound
from studio.jobs import JobFailed, job_progress
from studio.models import JobStatus
from traces import grammar, prompting
from traces.models import Step

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from traces.models import Project

log = logging.getLogger(__name__)

MAX_K = 16
# Settings that change the replies (their hash is part of the storage key); device and dtype are where they run.
SAMPLING_KEYS = ("k", "temperature", "top_p", "max_new_tokens", "seed", "min_pixels", "max_pixels")


def alternatives_model_dir() -> str:
    """The checkpoint alternatives come from: pre-scoring's (STUDIO_PRESCORE_MODEL_DIR). Invalid, saying what to
    set, when none is configured or it is not a Qwen2-VL checkpoint."""
    model_dir = configured_model_dir()
    if not model_dir:
        raise Invalid(
            gettext(
                "no model is configured for alternatives: set STUDIO_PRESCORE_MODEL_DIR to a Qwen2-VL / Qwen2.5-VL "
                "checkpoint directory on the gpu workers"
            )
        )
    try:
        read_model_config(model_dir)
    except ModelLoadError as exc:
        raise Invalid(gettext("STUDIO_PRESCORE_MODEL_DIR: %(error)s") % {"error": exc}) from None
    return model_dir


def sampling_settings(*, project: Project, k: int | None = None, seed: int | None = None) -> dict:
    """The sampling settings of a request: the configured ones (settings.ALTERNATIVES_*), the project's image
    budget, and ``k`` / ``seed`` when given."""
    k = django_settings.ALTERNATIVES_K if k is None else k
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise Invalid(
            gettext("k: a whole number from 1 to %(most)s, got %(value)s") % {"most": MAX_K, "value": repr(k)},
            field="k",
        )
    seed = 0 if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise Invalid(gettext("seed: a whole number ≥ 0, got %(value)s") % {"value": repr(seed)}, field="seed")
    return {
        "k": k,
        "temperature": django_settings.ALTERNATIVES_TEMPERATURE,
        "top_p": django_settings.ALTERNATIVES_TOP_P,
        "max_new_tokens": django_settings.ALTERNATIVES_MAX_NEW_TOKENS,
        "seed": seed,
        **model_image_budget(project),
    }


def settings_key(settings: dict) -> str:
    return hashlib.sha256(
        json.dumps({key: settings.get(key) for key in SAMPLING_KEYS}, sort_keys=True).encode()
    ).hexdigest()


def _annotation_step(annotation: Annotation, index: int | None) -> Step:
    index = annotation.tau if index is None else index
    if index is None:
        raise Invalid(
            gettext("step: give the step to sample at (the annotation has no first error τ yet)"), field="step"
        )
    step = Step.objects.filter(trace_id=annotation.trace_id, index=index).select_related("screenshot").first()
    if step is None:
        raise Invalid(
            gettext("step: trace %(trace)s has no step %(step)s") % {"trace": annotation.trace_id, "step": index},
            field="step",
        )
    if not step.screenshot_id:
        raise Invalid(gettext("step: step %(step)s has no screenshot to sample at") % {"step": index}, field="step")
    return step


def alternatives_request(
    *, annotation: Annotation, user: User, step_index: int | None = None, k: int | None = None, seed: int | None = None
) -> AlternativesJob:
    """Queue the sampling of k alternatives at the annotation's step (τ unless ``step_index``). A job already queued
    or running for the same step and settings is returned instead of a second one."""
    model_dir = alternatives_model_dir()
    step = _annotation_step(annotation, step_index)
    resolved = sampling_settings(project=annotation.project, k=k, seed=seed)
    key = settings_key(resolved)
    with transaction.atomic():
        Annotation.objects.select_for_update().filter(pk=annotation.pk).first()
        running = (
            AlternativesJob.objects.filter(
                annotation=annotation, step=step, settings_key=key, model_dir=model_dir, cancel_requested=False
            )
            .filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
            .first()
        )
        if running is not None:
            return running
        job = AlternativesJob.objects.create(
            annotation=annotation,
            step=step,
            created_by=user,
            model_dir=model_dir,
            settings=resolved,
            settings_key=key,
        )
        job_enqueue(job)
    return job


def alternatives_job_run(*, job_id: int, attempt: int | None = None) -> AlternativesJob:
    """What a gpu worker does with the job: load the model (kept by the worker), then re-use the stored replies for
    (step, weights hash, settings) or sample and store them."""
    return job_run_here(AlternativesJob.objects.get(pk=job_id), attempt=attempt)


def alternatives_sample(job: AlternativesJob) -> str:
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
    except ModelLoadError as exc:
        raise JobFailed(gettext("model not loaded: %(problem)s") % {"problem": exc}) from exc
    job.model_name, job.weights_hash = scorer.model_name[:200], scorer.weights_hash
    AlternativesJob.objects.filter(pk=job.pk).update(model_name=job.model_name, weights_hash=job.weights_hash)
    stored = StepAlternative.objects.filter(step=job.step, weights_hash=job.weights_hash, settings_key=job.settings_key)
    k = opts["k"]
    if stored.count() == k:
        AlternativesJob.objects.filter(pk=job.pk).update(reused=True)
        job.reused = True
        job_progress(job, done=k, total=k)
        return gettext("%(k)s alternatives re-used (sampled before with the same weights and settings)") % {"k": k}
    job_progress(job, done=0, total=k)
    project = job.annotation.project
    trace = job.step.trace
    try:
        prompt = prompting.build_state_messages(trace, job.step.index, project=project)
    except prompting.PromptError as exc:
        raise JobFailed(f"step {job.step.index}: {exc}") from exc
    request = ScoreRequest(job.step.pk, prompting.to_chat_messages(prompt), image_inputs(prompt), "")
    with scorer.lock:
        replies = scorer.sample_replies(
            request,
            k=k,
            temperature=opts["temperature"],
            top_p=opts["top_p"],
            max_new_tokens=opts["max_new_tokens"],
            seed=opts["seed"],
            min_pixels=opts.get("min_pixels"),
            max_pixels=opts.get("max_pixels"),
        )
    rows = [
        StepAlternative(
            step=job.step,
            weights_hash=job.weights_hash,
            model_name=job.model_name,
            settings_key=job.settings_key,
            settings=opts,
            number=number,
            reply=text,
            actions=[a.to_json() for a in assess.parse_model_reply(text)] if text else [],
            new_tokens=n_new,
        )
        for number, (text, n_new) in enumerate(replies, start=1)
    ]
    # Another job may have stored the same key meanwhile: its rows stand (the key is the same sampling).
    StepAlternative.objects.bulk_create(rows, ignore_conflicts=True)
    job_progress(job, done=k, total=k)
    parsed = sum(1 for r in rows if r.actions)
    return gettext("%(k)s alternatives sampled, %(parsed)s parsed, %(text)s kept as text") % {
        "k": k,
        "parsed": parsed,
        "text": k - parsed,
    }


def alternative_for(annotation: Annotation, alternative_id: int) -> StepAlternative:
    alternative = StepAlternative.objects.filter(pk=alternative_id, step__trace_id=annotation.trace_id).first()
    if alternative is None:
        raise NotFound(gettext("No such alternative in trace %(trace)s.") % {"trace": annotation.trace_id})
    return alternative


def _marks_of(annotation: Annotation) -> dict[str, str]:
    """The annotation's marks as the audit records them: alternative id -> verdict."""
    return {
        str(alternative_id): verdict
        for alternative_id, verdict in AlternativeMark.objects.filter(annotation=annotation)
        .order_by("alternative_id")
        .values_list("alternative_id", "verdict")
    }


def alternative_mark(
    *, annotation: Annotation, alternative_id: int, verdict: str, user: User
) -> AlternativeMark | None:
    """Mark an alternative wrong (it becomes a DPO rejected side) or take it as the correction's starting point (one
    per annotation: taking another takes the previous one back); ``verdict`` "" removes the mark.

    Marks are part of the answer: they change only while the annotation is its annotator's to edit (a submitted
    or accepted one is what its lead reviews, and what exports read), and each change is audited as an edit.
    They do not bump the annotation's version: they live in their own rows, which no draft save writes, and the
    version guards the annotation's fields, which no mark writes (the page keeps its version and saves on)."""
    alternative = alternative_for(annotation, alternative_id)
    if verdict not in ("", *AlternativeVerdict.values):
        raise Invalid(
            gettext('verdict: one of %(verdicts)s or "", got %(value)s')
            % {"verdicts": ", ".join(AlternativeVerdict.values), "value": repr(verdict)},
            field="verdict",
        )
    if verdict and not alternative.parsed:
        raise Conflict(
            gettext(
                "alternative %(number)s did not parse as an action: it is shown as text and can be neither "
                "taken nor a DPO rejected side"
            )
            % {"number": alternative.number}
        )
    with transaction.atomic():
        locked = Annotation.objects.select_for_update().get(pk=annotation.pk)
        if locked.status not in EDITABLE_BY_ANNOTATOR:
            raise NotEditable(
                gettext("This annotation is %(status)s: its alternatives can no longer be marked.")
                % {"status": locked.status},
                current_version=locked.version,
            )
        before = _marks_of(locked)
        mark = None
        if not verdict:
            AlternativeMark.objects.filter(annotation=locked, alternative=alternative).delete()
        else:
            if verdict == AlternativeVerdict.TAKEN:
                AlternativeMark.objects.filter(annotation=locked, verdict=AlternativeVerdict.TAKEN).exclude(
                    alternative=alternative
                ).delete()
            mark, _ = AlternativeMark.objects.update_or_create(
                annotation=locked, alternative=alternative, defaults={"verdict": verdict, "marked_by": user}
            )
        after = _marks_of(locked)
        annotation_record_edit(
            annotation=locked, actor=user, changes={"alternative_marks": [before, after]} if after != before else {}
        )
    return mark


def alternative_rendered(alternative: StepAlternative, *, project: Project) -> dict:
    """The alternative as a correction's starting point: its thought and its actions rendered by the grammar
    (canonical, the project's box-token setting)."""
    actions = [grammar.Action.from_json(a) for a in alternative.actions]
    try:
        thought = grammar.parse_response(alternative.reply).thought
    except grammar.ActionSyntaxError:
        thought = ""
    body = "\n\n".join(grammar.render_action(a, box_tokens=project.box_tokens) for a in actions)
    return {"thought": thought, "action": body}
