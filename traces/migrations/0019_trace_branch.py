import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0018_project_history_image_budget"),
    ]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="parent",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="branches",
                to="traces.trace",
            ),
        ),
        migrations.AddField(
            model_name="trace",
            name="branch_at",
            field=models.PositiveIntegerField(
                blank=True, editable=False, help_text="The parent's step this branch differs from (τ).", null=True
            ),
        ),
        migrations.AddField(
            model_name="trace",
            name="held_from_queue",
            field=models.BooleanField(
                db_default=False,
                default=False,
                editable=False,
                help_text="Not handed out to annotators (a replay's branch).",
            ),
        ),
    ]
