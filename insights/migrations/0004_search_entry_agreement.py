from django.db import migrations, models


def fill_agreement(apps, schema_editor):
    """The entries already made get their agreement as services.search_agreement_refresh would write it."""
    SearchEntry = apps.get_model("insights", "SearchEntry")
    Annotation = apps.get_model("annotation", "Annotation")
    for trace_id in SearchEntry.objects.values_list("trace_id", flat=True).distinct().iterator():
        first_error = {
            pk: (tau if verdict == "error" else None)
            for pk, verdict, tau in Annotation.objects.filter(trace_id=trace_id)
            .exclude(status="draft")
            .values_list("pk", "verdict", "tau")
        }
        for entry_id, annotation_id in SearchEntry.objects.filter(trace_id=trace_id).values_list("pk", "annotation_id"):
            others = [tau for pk, tau in first_error.items() if pk != annotation_id]
            mine = first_error.get(annotation_id)
            value = "" if not others else "same τ" if all(t == mine for t in others) else "other τ"
            SearchEntry.objects.filter(pk=entry_id).update(agreement=value)


class Migration(migrations.Migration):
    dependencies = [
        ("insights", "0003_cluster_label_pin_merge"),
        ("annotation", "0010_queue_request"),
    ]

    operations = [
        migrations.AddField(
            model_name="searchentry",
            name="agreement",
            field=models.CharField(
                blank=True,
                help_text="Against the trace's other handed-in answers: same τ, other τ (or no error); empty: the only one.",
                max_length=16,
            ),
        ),
        migrations.RunPython(fill_agreement, migrations.RunPython.noop),
    ]
