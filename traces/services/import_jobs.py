"""An import job around its run: made (and queued), its upload stored, released when it ends and swept when it
failed long ago."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils import timezone
from django.utils.translation import gettext

from studio.engine import job_enqueue
from studio.errors import Invalid, TooLarge
from studio.models import JobStatus
from traces.models import CoordinateConvention, ImportJob, Project, Round
from traces.services.import_shards import import_parts_delete

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.core.files.uploadedfile import UploadedFile


def import_job_create(
    *,
    project: Project,
    user: User | None,
    upload_name: str,
    original_name: str = "",
    fmt: str = "",
    server_path: bool = False,
    enqueue: bool = True,
    coordinates: str = "",
    round: Round | None = None,
) -> ImportJob:
    if round is not None and round.project_id != project.pk:
        raise Invalid(
            gettext("round: %(round)s is a round of another project") % {"round": repr(round.name)}, field="round"
        )
    if coordinates and coordinates not in CoordinateConvention.values:
        raise ValueError(f"coordinates must be one of {', '.join(CoordinateConvention.values)}, not {coordinates!r}")
    job = ImportJob.objects.create(
        project=project,
        created_by=user,
        upload=upload_name,
        upload_is_server_path=server_path,
        original_name=original_name,
        format=fmt,
        coordinate_convention=coordinates,
        round=round,
    )
    if enqueue:
        job_enqueue(job)
    return job


class UploadTooLarge(TooLarge):
    """An upload over STUDIO_IMPORT_MAX_UPLOAD_BYTES."""


def import_upload_store(*, uploaded_file: UploadedFile) -> str:
    """Put an uploaded archive in storage so any worker (another machine, in the full stack) can read it."""
    if (uploaded_file.size or 0) > settings.IMPORT_MAX_UPLOAD_BYTES:
        raise UploadTooLarge(
            gettext("upload of %(size)s bytes is over the %(limit)s-byte limit")
            % {"size": uploaded_file.size, "limit": settings.IMPORT_MAX_UPLOAD_BYTES}
        )
    return default_storage.save("imports/upload.zip", uploaded_file)


def import_upload_release(*, job: ImportJob) -> None:
    """An ended import's upload: deleted once it succeeded (unless IMPORT_KEEP_UPLOADS); a failed or cancelled
    one's stays for IMPORT_FAILED_UPLOAD_DAYS (``import_uploads_sweep``), within IMPORT_FAILED_UPLOADS_MAX_BYTES
    of such uploads in all (``import_uploads_cap``). A server path is never ours to delete.
    The shards' parts of it go however the import ended."""
    import_parts_delete(job=job)
    if settings.IMPORT_KEEP_UPLOADS:
        return
    if job.status == JobStatus.SUCCEEDED:
        _upload_remove(job)
    else:
        import_uploads_cap()


def import_uploads_cap() -> int:
    """Keep the uploads of failed or cancelled imports within IMPORT_FAILED_UPLOADS_MAX_BYTES in all: the newest
    are kept, the oldest deleted first (an upload alone over the cap goes too); returns how many were deleted."""
    kept = ImportJob.objects.filter(
        upload_is_server_path=False,
        upload_removed_at__isnull=True,
        status__in=[JobStatus.FAILED, JobStatus.CANCELLED],
    ).order_by("-finished_at", "-pk")
    total = removed = 0
    for job in kept:
        try:
            total += default_storage.size(job.upload)
        except FileNotFoundError:
            pass  # already gone: it holds nothing (the sweep records it)
        if total > settings.IMPORT_FAILED_UPLOADS_MAX_BYTES:
            _upload_remove(job)
            removed += 1
    return removed


def import_job_files_delete(*, job: ImportJob) -> None:
    """Every stored file of an import, its row being deleted: the shards' parts and the upload (a server path is
    never ours to delete)."""
    import_parts_delete(job=job)
    _upload_remove(job)


def import_uploads_sweep(*, now: datetime) -> int:
    """Delete the uploads of failed or cancelled imports that ended more than IMPORT_FAILED_UPLOAD_DAYS ago (and of
    succeeded ones whose deletion at their end did not happen, e.g. storage was down); returns how many."""
    if settings.IMPORT_KEEP_UPLOADS:
        return 0
    ended = ImportJob.objects.filter(upload_is_server_path=False, upload_removed_at__isnull=True)
    due = ended.filter(status=JobStatus.SUCCEEDED) | ended.filter(
        status__in=[JobStatus.FAILED, JobStatus.CANCELLED],
        finished_at__lt=now - timedelta(days=settings.IMPORT_FAILED_UPLOAD_DAYS),
    )
    removed = 0
    for job in due.order_by("pk")[:500]:
        _upload_remove(job)
        removed += 1
    return removed


def _upload_remove(job: ImportJob) -> None:
    if job.upload_is_server_path or job.upload_removed_at is not None:
        return
    default_storage.delete(job.upload)  # no error when it is already gone
    import_parts_delete(job=job)  # (when their deletion at the end failed)
    job.upload_removed_at = timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(upload_removed_at=job.upload_removed_at)
