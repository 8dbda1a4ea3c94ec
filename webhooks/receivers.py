"""Job ends and completed rounds become webhook events (studio.signals): the jobs and rounds know nothing of
webhooks."""

from __future__ import annotations

from collections.abc import Callable

from django.dispatch import receiver
from django.urls import reverse

from studio.models import JobStatus
from studio.signals import job_ended, round_annotated
from webhooks.models import DeliveryJob, WebhookEvent
from webhooks.services import delivery_job_ended, event_emit


def _event_for(job) -> tuple[str, Callable[[], dict]] | None:
    """The event a job's end is, if any, and the function that makes its payload (``event_emit`` calls it only for
    an endpoint that wants the event)."""
    from evaluation.models import EvaluationJob
    from exports.models import ExportJob
    from prescoring.models import PrescoreJob
    from traces.models import ImportJob

    if isinstance(job, ExportJob) and job.status == JobStatus.SUCCEEDED:
        return WebhookEvent.BUNDLE_READY, lambda: {
            "export": {
                "id": job.pk,
                "format": job.format,
                "options": job.options,
                "counts": job.counts,
                "bundle_sha256": job.bundle_sha256,
                "bundle_size": job.bundle_size,
                "download_path": reverse("api-export-bundle", args=[job.pk]),
            }
        }
    if isinstance(job, ImportJob) and job.status == JobStatus.FAILED:
        return WebhookEvent.IMPORT_FAILED, lambda: {
            "import": {
                "id": job.pk,
                "upload": job.original_name,
                "message": job.message,
                "errors": job.errors[:20],
            }
        }
    if isinstance(job, PrescoreJob) and job.status == JobStatus.SUCCEEDED:
        return WebhookEvent.PRESCORING_DONE, lambda: {
            "prescoring": {"id": job.pk, "scorer": job.scorer, "message": job.message}
        }
    if isinstance(job, EvaluationJob) and job.status == JobStatus.SUCCEEDED:
        return WebhookEvent.EVALUATION_DONE, lambda: {
            "evaluation": {
                "id": job.pk,
                "checkpoint": job.checkpoint,
                "model_name": job.model_name,
                "weights_hash": job.weights_hash,
                "selection": job.selection,
                "overall": (job.metrics or {}).get("overall"),
                "message": job.message,
                "detail_path": reverse("api-evaluation-detail", args=[job.pk]),
            }
        }
    return None


@receiver(job_ended)
def job_ended_to_webhooks(sender, job, **kwargs) -> None:
    if isinstance(job, DeliveryJob):  # a delivery's own end is no event; its log follows it
        delivery_job_ended(job=job)
        return
    found = _event_for(job)
    if found is not None:
        event, payload = found
        event_emit(project=job.project, event=event, payload=payload)


@receiver(round_annotated)
def round_annotated_to_webhooks(sender, round, **kwargs) -> None:
    event_emit(
        project=round.project,
        event=WebhookEvent.ROUND_ANNOTATED,
        payload=lambda: {
            "round": {
                "id": round.pk,
                "name": round.name,
                "checkpoint": round.checkpoint,
                "weights_hash": round.weights_hash,
                "ran_at": round.ran_at.isoformat(),
                "annotated_at": round.annotated_at.isoformat(),
                "traces": round.traces.count(),
                "detail_path": reverse("api-round-detail", args=[round.pk]),
            }
        },
    )
