"""Each trace carries the convention of its points: nullable, backfilled, then required.

Backfill: the importer's hint where it names one convention (dart-gui / UI-TARS message runs and ScreenAgent are
screen pixels), else the project's convention, which is how the trace was read until now.
"""

from django.db import migrations, models

CONVENTIONS = ("relative-1000", "smart-resize-pixels", "screen-pixels")


def backfill(apps, schema_editor):
    Trace = apps.get_model("traces", "Trace")
    for trace in Trace.objects.select_related("project").filter(coordinate_convention__isnull=True).iterator(chunk_size=500):
        hint = (trace.metadata or {}).get("coordinate_convention_hint")
        trace.coordinate_convention = hint if hint in CONVENTIONS else trace.project.coordinate_convention
        trace.save(update_fields=["coordinate_convention"])


CHOICES = [("relative-1000", "Relative 0–1000 (UI-TARS v1, Qwen2-VL)"),
           ("smart-resize-pixels", "Smart-resized pixels (UI-TARS-1.5, Qwen2.5-VL)"),
           ("screen-pixels", "Screen pixels")]


class Migration(migrations.Migration):
    dependencies = [("traces", "0005_trace_deletion")]
    operations = [
        migrations.AddField("trace", "coordinate_convention",
                            models.CharField(max_length=24, choices=CHOICES, null=True)),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterField("trace", "coordinate_convention", models.CharField(max_length=24, choices=CHOICES)),
        migrations.AddField("importjob", "coordinate_convention",
                            models.CharField(max_length=24, choices=CHOICES, blank=True, default="")),
    ]
