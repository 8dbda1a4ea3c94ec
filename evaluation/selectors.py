"""Checkpoint evaluation reads: a job's figures from its stored rows, the table across checkpoints, its CSV."""

from __future__ import annotations

from django.db.models import QuerySet

from evaluation.metrics import ScoredRow, summarize
from evaluation.models import EvaluationJob, EvaluationSample
from studio.catalog import gettext_noop
from studio.models import JobStatus
from traces.models import Project

ROW_FIELDS = ("kind", "category", "round_name", "loglik_sum", "n_tokens", "rejected_loglik_sum", "rejected_n_tokens")
FIGURES = (
    # (key in metrics.figures, column heading)
    ("samples", gettext_noop("samples")),
    ("preference_accuracy", gettext_noop("preference accuracy")),
    ("pairs", gettext_noop("pairs")),
    ("mean_margin", gettext_noop("mean margin (nats)")),
    ("nll_corrected", gettext_noop("NLL/token corrected")),
    ("corrected_tokens", gettext_noop("corrected tokens")),
    ("nll_post_reflection", gettext_noop("NLL/token post-reflection")),
    ("post_reflection_tokens", gettext_noop("post-reflection tokens")),
)
CSV_HEADER = ["evaluation", "checkpoint", "weights_hash", "model_name", "status", "created_at", "group", "value"] + [
    key for key, _ in FIGURES
]


def evaluation_rows(job: EvaluationJob) -> QuerySet[EvaluationSample]:
    return EvaluationSample.objects.filter(job=job).order_by("id")


def evaluation_metrics(job: EvaluationJob) -> dict:
    """The job's figures, computed from its stored rows (what the job keeps in ``metrics`` when it ends)."""
    return summarize(ScoredRow(*values) for values in evaluation_rows(job).values_list(*ROW_FIELDS))


def evaluation_jobs_of(project: Project, jobs: QuerySet[EvaluationJob]) -> list[EvaluationJob]:
    """The project's evaluations among ``jobs`` (already scoped to the user), newest first."""
    return list(jobs.filter(project=project).order_by("-created_at", "-id"))


def _cells(figures: dict | None) -> list:
    return [None if figures is None else figures.get(key) for key, _ in FIGURES]


def evaluation_table(jobs: list[EvaluationJob]) -> dict:
    """The page's tables: one row per evaluation (overall), then one per evaluation and category / round."""
    overall, by_category, by_round = [], [], []
    for job in jobs:
        metrics = job.metrics if job.status == JobStatus.SUCCEEDED else {}
        overall.append({"job": job, "cells": _cells(metrics.get("overall"))})
        for name, figures in (metrics.get("by_category") or {}).items():
            by_category.append({"job": job, "group": name, "cells": _cells(figures)})
        for name, figures in (metrics.get("by_round") or {}).items():
            by_round.append({"job": job, "group": name, "cells": _cells(figures)})
    return {
        "headings": [heading for _, heading in FIGURES],
        "overall": overall,
        "by_category": by_category,
        "by_round": by_round,
    }


def evaluation_csv_rows(jobs: list[EvaluationJob]) -> list[list]:
    """The table as CSV rows (``CSV_HEADER``): group ``all`` per evaluation, then ``category`` and ``round``."""
    out: list[list] = [list(CSV_HEADER)]
    for job in jobs:
        head = [job.pk, job.checkpoint, job.weights_hash, job.model_name, job.status, job.created_at.isoformat()]
        metrics = job.metrics if job.status == JobStatus.SUCCEEDED else {}
        out.append([*head, "all", "", *("" if v is None else v for v in _cells(metrics.get("overall")))])
        for group, key in (("category", "by_category"), ("round", "by_round")):
            for name, figures in (metrics.get(key) or {}).items():
                out.append([*head, group, name, *("" if v is None else v for v in _cells(figures))])
    return out
