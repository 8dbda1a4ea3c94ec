"""AuditEvent.project and .annotator: the annotation's, copied so review figures need no join."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def copy_from_annotation(apps, schema_editor):
    AuditEvent = apps.get_model("annotation", "AuditEvent")
    Annotation = apps.get_model("annotation", "Annotation")
    own = Annotation.objects.filter(pk=models.OuterRef("annotation_id"))
    AuditEvent.objects.filter(project__isnull=True).update(
        project_id=models.Subquery(own.values("project_id")[:1]),
        annotator_id=models.Subquery(own.values("annotator_id")[:1]),
    )


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0003_annotation_project"),
        ("traces", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="project",
            field=models.ForeignKey(null=True, editable=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="+", to="traces.project"),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="annotator",
            field=models.ForeignKey(null=True, editable=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to=settings.AUTH_USER_MODEL),
        ),
        migrations.RunPython(copy_from_annotation, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="auditevent",
            name="project",
            field=models.ForeignKey(editable=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="+", to="traces.project"),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="annotator",
            field=models.ForeignKey(editable=False, on_delete=django.db.models.deletion.PROTECT,
                                    related_name="+", to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(condition=models.Q(kind="transition"), fields=["project", "at"],
                               name="audit_project_transition_idx"),
        ),
    ]
