"""Reads of on-policy alternatives: an annotation's latest request and the replies it names, with the marks."""

from __future__ import annotations

from annotation.models import AlternativeMark, AlternativesJob, Annotation, StepAlternative
from traces import grammar


def _job_json(job: AlternativesJob) -> dict:
    return {
        "id": job.pk,
        "status": job.status,
        "step": job.step.index,
        "model_name": job.model_name,
        "weights_hash": job.weights_hash,
        "settings": job.settings,
        "reused": job.reused,
        "message": job.message,
    }


def alternatives_of(annotation: Annotation, *, job: AlternativesJob | None = None) -> dict:
    """The annotation's latest alternatives request (or ``job``) and, once sampled, its replies: parsed ones with their
    actions in the project's coordinate convention (to draw as numbered markers), unparsed ones as text only."""
    if job is None:
        job = AlternativesJob.objects.filter(annotation=annotation).select_related("step").order_by("-pk").first()
    if job is None:
        return {"annotation": annotation.pk, "job": None, "alternatives": []}
    rows = []
    if job.weights_hash:
        marks = dict(AlternativeMark.objects.filter(annotation=annotation).values_list("alternative_id", "verdict"))
        for alt in StepAlternative.objects.filter(
            step=job.step, weights_hash=job.weights_hash, settings_key=job.settings_key
        ).order_by("number"):
            row = {"id": alt.pk, "number": alt.number, "parsed": alt.parsed, "mark": marks.get(alt.pk, "")}
            if alt.parsed:
                row["reply"] = alt.reply
                row["actions"] = alt.actions
            else:
                row["text"] = alt.reply
            rows.append(row)
    return {
        "annotation": annotation.pk,
        "convention": annotation.project.coordinate_convention,
        "job": _job_json(job),
        "alternatives": rows,
    }


def wrong_alternatives(annotation_ids: list[int]) -> dict[int, list[StepAlternative]]:
    """Per annotation, the alternatives marked wrong (each with its step), for the DPO pairs of an export."""
    found: dict[int, list[StepAlternative]] = {pk: [] for pk in annotation_ids}
    marks = (
        AlternativeMark.objects.filter(annotation_id__in=annotation_ids, verdict="wrong")
        .select_related("alternative__step")
        .order_by("annotation_id", "alternative__weights_hash", "alternative__number", "alternative_id")
    )
    for mark in marks:
        found[mark.annotation_id].append(mark.alternative)
    return found


def marked_alternatives(annotation: Annotation) -> list[dict]:
    """What the annotation says of the checkpoint's alternatives, for its lead: each one marked (wrong: a DPO rejected
    side in exports; taken: where the correction started) with its step, checkpoint, thought and action (rendered
    by the grammar, in the project's convention), wrong ones first."""
    marks = (
        AlternativeMark.objects.filter(annotation=annotation)
        .select_related("alternative__step")
        .order_by("-verdict", "alternative__step__index", "alternative__number", "alternative_id")
    )
    rows = []
    for mark in marks:
        alternative = mark.alternative
        try:
            thought = grammar.parse_response(alternative.reply).thought
        except grammar.ActionSyntaxError:
            thought = ""
        rows.append(
            {
                "id": alternative.pk,
                "number": alternative.number,
                "verdict": mark.verdict,
                "step": alternative.step.index,
                "model_name": alternative.model_name,
                "weights_hash": alternative.weights_hash,
                "thought": thought,
                "action": "\n\n".join(
                    grammar.render_action(grammar.Action.from_json(a), box_tokens=False) for a in alternative.actions
                ),
            }
        )
    return rows
