"""Every step now carries its off-screen flag (empty when all its points are inside): the column becomes required.
Its own migration, so the backfill's updates are committed before the table is altered (PostgreSQL)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("traces", "0008_step_off_screen_point")]
    operations = [
        migrations.AlterField(
            "step",
            "off_screen_point",
            models.TextField(
                blank=True,
                help_text="Which recorded point lies outside the screenshot in the trace's convention (empty: none, "
                "or no screenshot to measure); set at import, never trained on unless an annotator corrected the step.",
            ),
        ),
    ]
