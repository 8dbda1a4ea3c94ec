"""Deleting one job (the admin's delete page and action, bench/scale.py's clean-up): its suggestions in batches, its
shards and its stored files go, another job's stay; refused while it is queued or running; the admin shows jobs
without letting them be edited or added, since their status moves through studio.jobs alone."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from exports.models import ExportJob
from exports.services import export_job_create, export_job_run
from prescoring.models import PrescoreJob, StepSuggestion
from prescoring.services import prescore_job_create, prescore_job_run
from studio.jobs import JobDeleteRefused, job_delete
from studio.models import JobShard, JobStatus
from tests.fixtures_export import REPLIES, accepted_error, make_trace

pytestmark = pytest.mark.django_db


def _shards(job):
    return JobShard.objects.filter(job_model=job._meta.label, job_id=job.pk)


def _prescored(project, lead) -> PrescoreJob:
    job = prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)
    return prescore_job_run(job_id=job.pk)


def _exported(project, annotator, lead) -> ExportJob:
    if not project.traces.exists():
        trace = make_trace(project, replies=REPLIES, external_id="t-annotated", image_seed=7)
        accepted_error(trace, annotator=annotator, reviewer=lead)
    job = export_job_run(job_id=export_job_create(project=project, user=lead, fmt="trl", enqueue=False).pk)
    assert job.status == JobStatus.SUCCEEDED and default_storage.exists(job.bundle_name)
    return job


def test_a_prescoring_job_goes_with_its_suggestions_in_batches_and_its_shards(project, lead):
    for n in range(2):
        make_trace(project, replies=REPLIES[:3], external_id=f"t{n}", image_seed=n + 1)
    gone, kept = _prescored(project, lead), _prescored(project, lead)
    suggestions = StepSuggestion.objects.filter(job=gone).count()
    assert suggestions == 6 and _shards(gone).exists()
    kept_suggestions, kept_shards = StepSuggestion.objects.filter(job=kept).count(), _shards(kept).count()

    with CaptureQueriesContext(connection) as queries:
        removed = job_delete(gone, batch=4)

    table = StepSuggestion._meta.db_table
    deletes = [q["sql"] for q in queries if q["sql"].startswith(f'DELETE FROM "{table}" WHERE "{table}"."id" IN')]
    assert len(deletes) == 2  # 4 + 2: one collector pass would read all of them and make one
    assert removed["prescoring.StepSuggestion"] == suggestions and removed["prescoring.PrescoreJob"] == 1
    assert not PrescoreJob.objects.filter(pk=gone.pk).exists()
    assert not StepSuggestion.objects.filter(job_id=gone.pk).exists() and not _shards(gone).exists()
    assert StepSuggestion.objects.filter(job=kept).count() == kept_suggestions
    assert _shards(kept).count() == kept_shards


def test_an_export_goes_with_its_bundle_and_another_export_keeps_its_own(project, annotator, lead):
    gone, kept = _exported(project, annotator, lead), _exported(project, annotator, lead)
    assert gone.bundle_name != kept.bundle_name

    job_delete(gone)

    assert not ExportJob.objects.filter(pk=gone.pk).exists() and not _shards(gone).exists()
    assert not default_storage.exists(gone.bundle_name)
    assert default_storage.exists(kept.bundle_name) and _shards(kept).exists()


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.RUNNING])
def test_refused_while_the_job_has_not_ended(project, lead, status):
    job = ExportJob.objects.create(project=project, created_by=lead, format="trl", status=status)
    JobShard.objects.create(job_model=ExportJob._meta.label, job_id=job.pk, index=0)
    with pytest.raises(JobDeleteRefused) as refused:
        job_delete(job)
    assert f"export job {job.pk} is {status}" in str(refused.value)
    assert ExportJob.objects.filter(pk=job.pk).exists() and _shards(job).exists()


def test_admin_shows_jobs_read_only_and_deletes_through_the_service(client, admin_user, project, annotator, lead):
    export = _exported(project, annotator, lead)
    client.force_login(admin_user)
    change = reverse("admin:exports_exportjob_change", args=[export.pk])
    page = client.get(change)
    assert page.status_code == 200 and 'name="status"' not in page.content.decode()  # a view, not a form
    client.post(change, {"status": JobStatus.QUEUED, "attempts": 0})
    export.refresh_from_db()
    assert export.status == JobStatus.SUCCEEDED
    assert client.get(reverse("admin:exports_exportjob_add")).status_code == 403
    # Found by its bundle's checksum (the page searched a field exports do not have).
    listing = client.get(reverse("admin:exports_exportjob_changelist"), {"q": export.bundle_sha256[:12]})
    assert listing.status_code == 200 and f"/admin/exports/exportjob/{export.pk}/" in listing.content.decode()

    delete = reverse("admin:exports_exportjob_delete", args=[export.pk])
    text = client.get(delete).content.decode()
    assert "1 job shard, and the files only it stored" in text
    assert "<li>Export jobs: 1</li>" in text and "<li>Job shards: 1</li>" in text  # the page's summary is not empty
    assert client.post(delete, {"post": "yes"}).status_code == 302
    assert not ExportJob.objects.filter(pk=export.pk).exists() and not _shards(export).exists()
    assert not default_storage.exists(export.bundle_name)


def test_admin_refuses_to_delete_a_running_job(client, admin_user, project, lead):
    job = _prescored(project, lead)
    PrescoreJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    client.force_login(admin_user)
    delete = reverse("admin:prescoring_prescorejob_delete", args=[job.pk])
    refused = client.post(delete, {"post": "yes"})
    assert refused.status_code == 200
    assert f"prescore job {job.pk} is running: cancel it or let it end first" in refused.content.decode()
    assert PrescoreJob.objects.filter(pk=job.pk).exists()
