"""Pre-scoring is its own app: the move from the traces app changed Django's state, not the database,
not the task names queued messages carry, not the API's addresses."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

BEFORE_MOVE = [("prescoring", None), ("traces", "0013_import_plan"), ("studio", "0005_alter_jobshard_job_model")]


def _migrate(targets):
    """Migrate to ``targets``; the project's state there. Not the state ``migrate()`` returns: going backwards,
    that is the state where its plan ended, which holds whatever migrations of other apps the plan's order put
    before (a later migration of studio's brought the traces models of after the move back)."""
    MigrationExecutor(connection).migrate(targets)
    nodes = [(app, name) for app, name in targets if name]
    return MigrationExecutor(connection).loader.project_state(nodes, at_end=True).apps


def _latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_its_rows_and_is_relabelled():
    old = _migrate(BEFORE_MOVE)
    try:
        User = old.get_model("auth", "User")
        ContentType = old.get_model("contenttypes", "ContentType")
        Project = old.get_model("traces", "Project")
        Trace = old.get_model("traces", "Trace")
        Step = old.get_model("traces", "Step")
        OldJob = old.get_model("traces", "PrescoreJob")
        OldSuggestion = old.get_model("traces", "StepSuggestion")
        JobShard = old.get_model("studio", "JobShard")
        user = User.objects.create(username="lead-before-the-move")
        project = Project.objects.create(name="scored before the move")
        trace = Trace.objects.create(project=project, external_id="t1", instruction="Open the settings")
        step = Step.objects.create(trace=trace, index=1, action_text="wait()")
        job = OldJob.objects.create(project=project, scorer="rules", created_by=user, status="succeeded")
        OldSuggestion.objects.create(step=step, job=job, scorer="rules", suspicion=0.75)
        ContentType.objects.filter(app_label__in=["traces", "prescoring"], model="prescorejob").delete()
        old_type = ContentType.objects.create(app_label="traces", model="prescorejob")
        JobShard.objects.create(job_model="traces.PrescoreJob", job_id=job.pk, index=0, items=[trace.pk], size=1)
        JobShard.objects.create(job_model="exports.ExportJob", job_id=job.pk, index=0, items=[], size=0)
    finally:
        new = _migrate(_latest())

    NewJob = new.get_model("prescoring", "PrescoreJob")
    moved = NewJob.objects.get(pk=job.pk)
    assert (moved.scorer, moved.status, moved.created_by_id, moved.project_id) == (
        "rules",
        "succeeded",
        user.pk,
        project.pk,
    )
    suggestion = new.get_model("prescoring", "StepSuggestion").objects.get(job_id=job.pk)
    assert (suggestion.step_id, suggestion.suspicion) == (step.pk, 0.75)
    content_type = new.get_model("contenttypes", "ContentType").objects.get(pk=old_type.pk)
    assert (content_type.app_label, content_type.model) == ("prescoring", "prescorejob")
    labels = set(new.get_model("studio", "JobShard").objects.values_list("job_model", flat=True))
    assert labels == {"prescoring.PrescoreJob", "exports.ExportJob"}


def test_task_names_and_api_addresses_are_those_before_the_move():
    from studio.celery import app

    app.loader.import_default_modules()  # what a worker does at start: every installed app's tasks module
    for name in ("traces.tasks.prescore_rules", "traces.tasks.prescore_with_model", "traces.tasks.prescore_shard"):
        assert app.tasks[name].__module__ == "studio.engine"  # the pre-scoring kind's aliases (prescoring/jobs.py)
    assert reverse("api-prescore-start", args=[3]) == "/api/projects/3/prescore/"
    assert reverse("api-prescore-job", args=[4]) == "/api/prescore/jobs/4/"
    assert reverse("api-trace-suggestions", args=[5]) == "/api/traces/5/suggestions/"


def test_each_product_app_has_the_same_rooms():
    from pathlib import Path

    from tests.conftest import REPO

    for app in ("traces", "prescoring", "annotation", "exports", "evaluation", "webhooks", "insights"):
        folder = Path(REPO) / app
        for room in ("models", "services", "selectors", "api", "tasks", "access"):
            assert (folder / f"{room}.py").is_file() or (folder / room).is_dir(), f"{app} has no {room}"
