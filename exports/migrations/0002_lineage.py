# Bundle lineage: the (annotation id, version) pairs each bundle holds, kept on its job. Nullable, then filled from
# the manifests of the bundles still in storage; a bundle already deleted (or unreadable) keeps null, which the
# lineage pages and the incremental export name as "made before lineage was kept".

import json
import zipfile

from django.core.files.storage import default_storage
from django.db import migrations, models


def sources_from_manifests(apps, schema_editor):
    ExportJob = apps.get_model("exports", "ExportJob")
    for job in ExportJob.objects.filter(sources__isnull=True).exclude(bundle_name="").iterator():
        try:
            with default_storage.open(job.bundle_name, "rb") as handle, zipfile.ZipFile(handle) as bundle:
                manifest = json.loads(bundle.read("manifest.json"))
        except Exception:  # any storage or archive failure: this bundle's lineage stays unknown, the others fill in
            continue
        pairs = [[int(item["annotation_id"]), int(item["version"])] for item in manifest.get("sources", [])]
        ExportJob.objects.filter(pk=job.pk).update(sources=sorted(pairs))


class Migration(migrations.Migration):
    dependencies = [
        ("exports", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="exportjob",
            name="sources",
            field=models.JSONField(
                blank=True,
                help_text="[annotation id, version] of every annotation the bundle was built from (its lineage); "
                "null for a bundle made before lineage was kept whose manifest could not be read.",
                null=True,
            ),
        ),
        migrations.RunPython(sources_from_manifests, migrations.RunPython.noop),
    ]
