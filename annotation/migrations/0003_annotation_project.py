"""Annotation.project: the trace's project, copied onto each annotation so project-wide reads need no join."""

import django.db.models.deletion
from django.db import migrations, models


def copy_project_from_trace(apps, schema_editor):
    Annotation = apps.get_model("annotation", "Annotation")
    Trace = apps.get_model("traces", "Trace")
    Annotation.objects.filter(project__isnull=True).update(
        project_id=models.Subquery(Trace.objects.filter(pk=models.OuterRef("trace_id")).values("project_id")[:1])
    )


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0002_editor_state"),
        ("traces", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="annotation",
            name="project",
            field=models.ForeignKey(
                null=True, editable=False, on_delete=django.db.models.deletion.CASCADE,
                related_name="annotations", to="traces.project",
            ),
        ),
        migrations.RunPython(copy_project_from_trace, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="annotation",
            name="project",
            field=models.ForeignKey(
                editable=False, on_delete=django.db.models.deletion.CASCADE,
                related_name="annotations", to="traces.project",
            ),
        ),
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(fields=["project", "submitted_at"], name="annotation__project_466472_idx"),
        ),
        migrations.AddIndex(
            model_name="annotation",
            index=models.Index(fields=["project", "status"], name="annotation__project_161564_idx"),
        ),
    ]
