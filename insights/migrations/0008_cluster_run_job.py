"""A clustering run becomes a job of the engine (heartbeat, attempts, cancel). Rows kept as they are, with two
changes the new rules need: a run left running by the old lifecycle gets a heartbeat (the migration's time), so the
watchdog takes it over once that is stale, as it would any job whose worker died; and where a project had several
runs queued or running (the old code queued one per click), the newest stays and the older ones are cancelled
(none of them holds clusters: a run writes its clusters when it ends) before the rule of one unfinished run per
project is made a constraint. Every NOT NULL column it adds has a database default: release 0.35 inserts runs
without them while this migration is applied (docs/deploy.md, "Upgrading")."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone

UNFINISHED = ("queued", "running")


def to_jobs(apps, schema_editor):
    ClusterRun = apps.get_model("insights", "ClusterRun")
    now = timezone.now()
    for run in ClusterRun.objects.filter(status="running"):
        ClusterRun.objects.filter(pk=run.pk).update(attempts=1, started_at=run.created_at, heartbeat_at=now)
    newest: dict[int, int] = {}
    for pk, project_id in (
        ClusterRun.objects.filter(status__in=UNFINISHED).order_by("-created_at", "-id").values_list("pk", "project_id")
    ):
        if project_id in newest:
            ClusterRun.objects.filter(pk=pk).update(
                status="cancelled",
                cancel_requested=True,
                finished_at=now,
                message=f"Cancelled: run {newest[project_id]} clusters the same project's corrections.",
            )
        else:
            newest[project_id] = pk


class Migration(migrations.Migration):
    dependencies = [
        ("insights", "0007_search_words_and_actions"),
        ("traces", "0018_project_history_image_budget"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="clusterrun",
            name="attempts",
            field=models.PositiveSmallIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="cancel_requested",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="errors",
            field=models.JSONField(
                blank=True,
                db_default=models.Value([], output_field=models.JSONField()),
                default=list,
                help_text="Per-item problems that did not stop the job.",
            ),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="heartbeat_at",
            field=models.DateTimeField(
                blank=True,
                help_text="Last sign of life of the worker running it; queued: when it was last sent again.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="progress_done",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="progress_total",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="clusterrun",
            name="without_words",
            field=models.PositiveIntegerField(
                db_default=0,
                default=0,
                help_text="Corrections whose text has no word to compare (empty, or digits and punctuation only): in no text cluster.",
            ),
        ),
        migrations.AlterField(
            model_name="clusterrun",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="clusterrun",
            name="message",
            field=models.TextField(blank=True, help_text="Failure reason or final summary, for people."),
        ),
        migrations.AlterField(
            model_name="clusterrun",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("succeeded", "Succeeded"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                ],
                db_index=True,
                default="queued",
                max_length=16,
            ),
        ),
        migrations.RunPython(to_jobs, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="clusterrun",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status__in", ["queued", "running"])),
                fields=("project",),
                name="one_unfinished_cluster_run_per_project",
            ),
        ),
    ]
