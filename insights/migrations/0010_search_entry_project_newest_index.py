"""A project's search entries newest first, with their ids (``project_id, annotation_id, id``): a page of a search
without words is read from this index alone, however far in, where it read every row before it (on PostgreSQL an
index-only scan; the FK index on ``project_id`` alone gave the rows in no order, so a deep page sorted them all)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0013_quality_rollup"),
        ("insights", "0009_search_suspicion_column_and_unspaced_pairs"),
        ("traces", "0020_text_language"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="searchentry",
            index=models.Index(fields=["project", "annotation", "id"], name="searchentry_project_newest"),
        ),
    ]
