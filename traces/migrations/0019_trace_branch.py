from django.db import migrations, models
import django.db.models.deletion


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
    ]
