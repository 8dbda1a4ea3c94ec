"""Pre-scoring reads: a trace's suggestions for the workspace, jobs, and the queue's suspicion order.

Blind projects (project.blind_prescoring): who sees pre-scoring is the one rule ``prescore.view`` (scope not-blind,
studio.permissions): annotators of a blind project get nothing — the API answers ``{"hidden": true}``, the queue
offers no suspicion order and the hand-out ignores suspicion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Case, F, FloatField, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce, Greatest

from prescoring import rules
from prescoring.models import PrescoreJob, Scorer, StepSuggestion, TraceSuggestion
from studio.access import scoped
from traces import grammar
from traces.models import Trace

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import Subquery

    from traces.models import Project


def _model_points(row: StepSuggestion) -> list[list[int | float]]:
    """The model's own action's points (start, then end) for the ghost overlay, in the project's convention as the
    model wrote them: the one form the page gets coordinates in (it converts with the step's screenshot extent)."""
    if not row.model_action_parsed:
        return []
    try:
        action = grammar.Action.from_json(row.model_action_parsed[0])
        points = [action.point(name) for name in (grammar.START_BOX, grammar.END_BOX)]
    except (ValueError, TypeError):
        return []
    return [list(p) for p in points if p is not None]


def _model_start(row: StepSuggestion) -> dict | None:
    """The model's own reply as a starting point for a correction (thought and first action, read by the one
    grammar, in the project's convention as the model wrote it); None when it has no action to start from."""
    if not row.model_action:
        return None
    try:
        parsed = grammar.parse_response(row.model_action)
    except grammar.ActionSyntaxError:
        return None
    if not parsed.actions:
        return None
    return {"thought": parsed.thought or "", "action": parsed.actions[0].to_json()}


def _step_row(row: StepSuggestion) -> dict:
    return {
        "index": row.step.index,
        "suspicion": row.suspicion,
        # Each stored flag with its words (the one table: prescoring.rules.FLAG_LABELS).
        "flags": [{**item, "label": rules.flag_label(item["code"])} for item in row.flags],
        "loglik_sum": row.loglik_sum,
        "loglik_mean": row.loglik_mean,
        "n_tokens": row.n_tokens,
        "model_action": row.model_action,
        "model_action_parsed": row.model_action_parsed,
        "model_points": _model_points(row),
        "model_start": _model_start(row),
        "agrees": row.agrees,
        "click_distance": row.click_distance,
    }


def trace_suggestions(trace: Trace, *, job_ids: dict[str, int] | None = None) -> dict:
    """The latest run of each scorer on ``trace`` (or the runs named in ``job_ids``), plus the older runs' ids."""
    runs = {}
    history = []
    step_ids = list(trace.steps.values_list("pk", flat=True))
    for summary in TraceSuggestion.objects.filter(trace=trace).select_related("job").order_by("-created_at", "-id"):
        history.append(
            {
                "job": summary.job_id,
                "scorer": summary.scorer,
                "model_name": summary.model_name,
                "weights_hash": summary.weights_hash,
                "created_at": summary.created_at.isoformat(),
            }
        )
        wanted = (job_ids or {}).get(summary.scorer)
        if summary.scorer in runs or (wanted is not None and wanted != summary.job_id):
            continue
        # By step ids, not a join on the trace (which reads every row of a big job: see _store_trace).
        rows = StepSuggestion.objects.filter(job_id=summary.job_id, step_id__in=step_ids).select_related(
            "step__screenshot"
        )
        runs[summary.scorer] = {
            "job": summary.job_id,
            "model_name": summary.model_name,
            "weights_hash": summary.weights_hash,
            "settings": summary.job.settings,
            "created_at": summary.created_at.isoformat(),
            "suggested_tau": summary.suggested_tau,
            "tau_probability": summary.tau_probability,
            "no_error_probability": summary.no_error_probability,
            "max_suspicion": summary.max_suspicion,
            "steps": [_step_row(r) for r in sorted(rows, key=lambda r: r.step.index)],
        }
    return {"trace": trace.pk, "hidden": False, "scorers": runs, "history": history}


def latest_prescore_job(project: Project) -> PrescoreJob | None:
    """The project's last pre-scoring run (the trace list shows it, and follows it while it runs)."""
    return PrescoreJob.objects.filter(project=project).order_by("-created_at", "-id").first()


def _latest_max_suspicion(scorer: str) -> Subquery:
    latest = TraceSuggestion.objects.filter(trace=OuterRef("pk"), scorer=scorer).order_by("-created_at", "-id")
    return Subquery(latest.values("max_suspicion")[:1], output_field=FloatField())


def traces_by_suspicion(queryset: QuerySet[Trace], *, user: User) -> QuerySet[Trace]:
    """Annotate ``suspicion`` (the highest step suspicion of the latest rules and model runs; None when
    unscored or hidden from ``user``: ``prescore.view``) and order the most doubtful traces first, unscored last."""
    visible = scoped(user, Trace.objects.all(), "prescore.view").values("pk")
    both = Greatest(
        Coalesce(_latest_max_suspicion(Scorer.RULES), Value(-1.0)),
        Coalesce(_latest_max_suspicion(Scorer.QWEN2VL), Value(-1.0)),
    )
    annotated = queryset.annotate(
        suspicion=Case(
            When(~Q(pk__in=visible), then=Value(None, output_field=FloatField())),
            When(**{"pk__in": TraceSuggestion.objects.values("trace_id")}, then=both),
            default=Value(None, output_field=FloatField()),
            output_field=FloatField(),
        )
    )
    return annotated.order_by(F("suspicion").desc(nulls_last=True), "id")
