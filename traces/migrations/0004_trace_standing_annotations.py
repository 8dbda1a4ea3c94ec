"""Trace.standing_annotations: how many of a trace's annotations stand, kept by the annotation state machine."""

from django.db import migrations, models
from django.db.models.functions import Coalesce


def count_standing(apps, schema_editor):
    Trace = apps.get_model("traces", "Trace")
    Annotation = apps.get_model("annotation", "Annotation")
    standing = (
        Annotation.objects.filter(trace=models.OuterRef("pk"), status__in=("submitted", "accepted")).order_by()
        .values("trace").annotate(n=models.Count("id")).values("n")
    )
    Trace.objects.update(standing_annotations=Coalesce(models.Subquery(standing), 0))


class Migration(migrations.Migration):

    dependencies = [
        ("traces", "0003_job_heartbeats"),
        ("annotation", "0003_annotation_project"),
    ]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="standing_annotations",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(count_standing, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="trace",
            index=models.Index(
                condition=models.Q(standing_annotations__gte=2), fields=["project"], name="trace_multi_annotated_idx"
            ),
        ),
    ]
