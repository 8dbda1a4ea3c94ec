"""Rows that name the moved models by app: their content types (permissions and admin history point at them) and
the shards of pre-scoring jobs (studio.JobShard.job_model holds the job's model label)."""

from django.db import migrations

MODELS = ("prescorejob", "stepsuggestion", "tracesuggestion")


def relabel(apps, old_app: str, new_app: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    JobShard = apps.get_model("studio", "JobShard")
    for model in MODELS:
        # A database migrated before the move has the old rows; a new one has none yet (post_migrate makes them).
        if not ContentType.objects.filter(app_label=new_app, model=model).exists():
            ContentType.objects.filter(app_label=old_app, model=model).update(app_label=new_app)
    JobShard.objects.filter(job_model=f"{old_app}.PrescoreJob").update(job_model=f"{new_app}.PrescoreJob")


def forwards(apps, schema_editor):
    relabel(apps, "traces", "prescoring")


def backwards(apps, schema_editor):
    relabel(apps, "prescoring", "traces")


class Migration(migrations.Migration):
    dependencies = [
        ("prescoring", "0001_initial"),
        ("traces", "0014_prescoring_moved"),
        ("studio", "0005_alter_jobshard_job_model"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
