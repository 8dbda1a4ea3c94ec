# The format's choices are read from exports.formats when asked (exports.models.FormatField), not stored here:
# a new format is no schema change.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("exports", "0004_job_heartbeat_at_also_resent"),
    ]

    operations = [
        migrations.AlterField(
            model_name="exportjob",
            name="format",
            field=models.CharField(max_length=16),
        ),
    ]
