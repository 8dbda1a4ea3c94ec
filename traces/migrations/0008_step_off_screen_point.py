"""A recorded point outside the screen is flagged on its step: nullable, backfilled here, required in 0009.

Backfill: each stored step with a screenshot and parsed actions is measured against its screenshot in its trace's
convention by the grammar's own bounds (`traces.grammar.off_screen_points`; the grammar is plain Python without
models, so the migration asks the one rule rather than a copy of it); each import job counts its flagged steps.
"""

from django.db import migrations, models
from django.db.models import Count

CHUNK = 1000


def backfill(apps, schema_editor):
    from traces import grammar

    Step = apps.get_model("traces", "Step")
    ImportJob = apps.get_model("traces", "ImportJob")
    measured = (
        Step.objects.filter(screenshot__isnull=False)
        .values_list(
            "pk",
            "parsed_actions",
            "parse_error",
            "screenshot__width",
            "screenshot__height",
            "trace__coordinate_convention",
            "trace__project__max_pixels",
        )
        .iterator(chunk_size=CHUNK)
    )
    flagged = []
    for pk, parsed, parse_error, width, height, convention, max_pixels in measured:
        if parse_error or not parsed or not width or not height:
            continue
        try:
            actions = [grammar.Action.from_json(item) for item in parsed]
        except (TypeError, ValueError):
            continue  # a stored action the grammar no longer reads has nothing to measure
        problems = grammar.off_screen_points(
            actions, convention=convention, width=width, height=height, max_pixels=max_pixels
        )
        if problems:
            flagged.append(Step(pk=pk, off_screen_point="; ".join(problems)))
    Step.objects.bulk_update(flagged, ["off_screen_point"], batch_size=CHUNK)
    Step.objects.filter(off_screen_point__isnull=True).update(off_screen_point="")
    per_job = (
        Step.objects.exclude(off_screen_point="")
        .filter(trace__import_job__isnull=False)
        .values("trace__import_job")
        .annotate(steps=Count("id"))
    )
    for row in per_job:
        ImportJob.objects.filter(pk=row["trace__import_job"]).update(off_screen_steps=row["steps"])


class Migration(migrations.Migration):
    dependencies = [("traces", "0007_import_upload_removed_at")]
    operations = [
        migrations.AddField("step", "off_screen_point", models.TextField(blank=True, null=True)),
        migrations.AddField(
            "importjob",
            "off_screen_steps",
            models.PositiveIntegerField(default=0, help_text="Imported steps with a point off the screen."),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
