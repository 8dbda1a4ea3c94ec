"""Deleting a project: every row and file it owns goes, in batches; another project's rows and the shared
screenshots stay; refused while one of its jobs runs; the admin's delete page counts instead of listing."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Annotation, AuditEvent
from exports.models import ExportJob
from exports.services import export_job_create, export_job_run
from prescoring.models import PrescoreJob, StepSuggestion
from prescoring.services import prescore_job_create, prescore_job_run
from studio.jobs import job_models
from studio.models import JobShard, JobStatus
from tests.factories import native_trace_folder
from tests.fixtures_export import REPLIES, accepted_error, make_trace
from traces import services
from traces.models import ImportJob, Membership, Project, Screenshot, Step, Trace
from traces.selectors import project_jobs
from traces.services import ProjectDeleteRefused, project_delete


def _import(project, user, tmp_path, prefix: str) -> ImportJob:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for n in range(2):
            folder = native_trace_folder(tmp_path / prefix / f"t{n}", external_id=f"{prefix}-{n}", size=(48, 32))
            for file in sorted(folder.iterdir()):
                zf.write(file, f"batch/t{n}/{file.name}")
    name = services.import_upload_store(uploaded_file=ContentFile(buffer.getvalue(), name="batch.zip"))
    job = services.import_job_create(
        project=project, user=user, upload_name=name, original_name="batch.zip", enqueue=False
    )
    return services.import_job_run(job_id=job.pk)


def _filled(project, *, annotator, lead, tmp_path, prefix: str) -> dict:
    """A project with imported and hand-made traces, accepted error annotations, a rules pre-scoring run and a
    finished export: the rows and files a real project holds."""
    imported = _import(project, lead, tmp_path, prefix)
    for n in range(3):
        trace = make_trace(project, replies=REPLIES, external_id=f"{prefix}-hand-{n}", image_seed=n + 1)
        accepted_error(
            trace, annotator=annotator, reviewer=lead, corrected_action=f"click(start_box='({300 + n},260)')"
        )
    prescore = prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)
    prescore_job_run(job_id=prescore.pk)
    export = export_job_run(job_id=export_job_create(project=project, user=lead, fmt="trl", enqueue=False).pk)
    assert export.status == JobStatus.SUCCEEDED and default_storage.exists(export.bundle_name)
    return {"import": imported, "export": export, "prescore": prescore}


def _row_counts(project_id: int) -> dict[str, int]:
    project = Project(pk=project_id)  # (a deleted project's instance has lost its pk)
    return {
        "traces": Trace.objects.filter(project=project).count(),
        "steps": Step.objects.filter(trace__project=project).count(),
        "annotations": Annotation.objects.filter(project=project).count(),
        "events": AuditEvent.objects.filter(annotation__project=project).count(),
        "suggestions": StepSuggestion.objects.filter(step__trace__project=project).count(),
        "jobs": len(project_jobs(project)),
        "memberships": Membership.objects.filter(project=project).count(),
    }


@pytest.mark.django_db(transaction=True)
def test_a_project_goes_with_its_rows_shards_and_files_and_nothing_of_another(
    project, annotator, lead, tmp_path, settings
):
    settings.IMPORT_KEEP_UPLOADS = True  # so the import's upload is still stored, to be deleted with the project
    other = Project.objects.create(name="kept")
    Membership.objects.create(project=other, user=annotator)
    gone = _filled(project, annotator=annotator, lead=lead, tmp_path=tmp_path, prefix="a")
    kept = _filled(other, annotator=annotator, lead=lead, tmp_path=tmp_path, prefix="b")
    before = _row_counts(project.pk)
    assert all(before.values()), before  # every kind of row is there to be deleted
    kept_counts = _row_counts(other.pk)
    shards = JobShard.objects.filter(job_model=PrescoreJob._meta.label, job_id=gone["prescore"].pk)
    assert shards.exists()
    upload = gone["import"].upload
    assert default_storage.exists(upload)
    screenshots = Screenshot.objects.count()
    project_id = project.pk

    removed = project_delete(project=project, batch=2)

    assert not Project.objects.filter(pk=project_id).exists()
    assert removed["traces"] == before["traces"] and removed["jobs"] == before["jobs"]
    assert _row_counts(project_id) == dict.fromkeys(before, 0)
    assert not shards.exists()
    assert not default_storage.exists(gone["export"].bundle_name)
    assert not default_storage.exists(upload)
    # The other project is whole: rows, bundle, upload; screenshots are shared by content and all stay.
    assert _row_counts(other.pk) == kept_counts
    assert default_storage.exists(kept["export"].bundle_name)
    assert default_storage.exists(kept["import"].upload)
    assert JobShard.objects.filter(job_model=PrescoreJob._meta.label, job_id=kept["prescore"].pk).exists()
    assert Screenshot.objects.count() == screenshots


@pytest.mark.django_db
def test_traces_are_deleted_a_batch_at_a_time(project):
    for n in range(5):
        make_trace(project, replies=REPLIES[:2], external_id=f"t{n}", image_seed=n + 1)
    project_id = project.pk
    with CaptureQueriesContext(connection) as queries:
        project_delete(project=project, batch=2)
    trace_deletes = [q["sql"] for q in queries if q["sql"].startswith('DELETE FROM "traces_trace"')]
    assert len(trace_deletes) == 3  # 2 + 2 + 1: one project.delete() would make one
    assert not Trace.objects.filter(project_id=project_id).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.RUNNING])
def test_refused_while_a_job_has_not_ended(project, lead, status):
    make_trace(project, replies=REPLIES[:2], external_id="t0")
    job = ExportJob.objects.create(project=project, created_by=lead, format="trl", status=status)
    with pytest.raises(ProjectDeleteRefused) as refused:
        project_delete(project=project)
    assert f"export job {job.pk} ({status})" in str(refused.value)
    assert Trace.objects.filter(project=project).count() == 1


def _deleted_with_the_project(model, depth: int = 3) -> bool:
    """``model``'s rows go when their project is deleted: a chain of cascading foreign keys leads to it."""
    from django.db import models

    for field in model._meta.fields:
        if field.is_relation and field.remote_field.on_delete is models.CASCADE:
            if field.related_model is Project or (depth and _deleted_with_the_project(field.related_model, depth - 1)):
                return True
    return False


def test_every_job_kind_is_found_from_its_project():
    # project_jobs reaches a job through its project, or its annotation's: a job kind with neither would be missed,
    # unless its jobs go with the project by cascade (a webhook delivery's, through its endpoint).
    for model in job_models():
        names = {f.name for f in model._meta.fields}
        assert "project" in names or "annotation" in names or _deleted_with_the_project(model), model
    from webhooks.models import DeliveryJob

    # (The control: a shard names its job by model and id, no foreign key; its job's deletion removes it.)
    assert _deleted_with_the_project(DeliveryJob) and not _deleted_with_the_project(JobShard)


@pytest.mark.django_db
def test_admin_delete_page_counts_and_deletes_through_the_service(client, admin_user, project, lead):
    for n in range(3):
        make_trace(project, replies=REPLIES[:2], external_id=f"t{n}", image_seed=n + 1)
    client.force_login(admin_user)
    project_id = project.pk
    url = reverse("admin:traces_project_delete", args=[project_id])
    page = client.get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert "3 traces, 6 steps, 0 annotations, 0 jobs" in text and "<li>Projects: 1</li>" in text
    job = ExportJob.objects.create(project=project, created_by=lead, format="trl", status=JobStatus.RUNNING)
    refused = client.post(url, {"post": "yes"})
    assert refused.status_code == 200 and f"export job {job.pk} of {project} is running" in refused.content.decode()
    assert Project.objects.filter(pk=project.pk).exists()
    ExportJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not Project.objects.filter(pk=project_id).exists()
    assert not Trace.objects.filter(project_id=project.pk).exists()
