"""A trace's identity by content (traces/identity.py): the column, each stored trace's hash, and its index.

The hash is frozen here as it stood when this migration was written (traces.identity.trace_content_hash): a
migration must give the same result whenever it runs, whatever the live code becomes. A trace edited by a lead is
hashed with the instruction it was received with (the first of ``metadata["instruction_edits"]``). Traces still
receiving steps keep none: theirs is set when their runner ends them. Duplicates already stored are kept as they are
(the index is not unique); ``manage.py trace_duplicates`` lists them for a lead to merge or delete.
"""

import hashlib
import json

from django.db import migrations, models

BATCH = 500


def content_hash(instruction, steps):
    document = [instruction or "", [[sha or "", action or ""] for sha, action in steps]]
    encoded = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()


def received_instruction(instruction, metadata):
    edits = (metadata or {}).get("instruction_edits") or []
    if edits and isinstance(edits[0], dict) and isinstance(edits[0].get("before"), str):
        return edits[0]["before"]
    return instruction


def fill(apps, schema_editor):
    Trace = apps.get_model("traces", "Trace")
    Step = apps.get_model("traces", "Step")
    after = 0
    while True:
        traces = list(
            Trace.objects.filter(pk__gt=after, receiving=False, content_hash="")
            .order_by("pk")
            .values_list("pk", "instruction", "metadata")[:BATCH]
        )
        if not traces:
            return
        after = traces[-1][0]
        steps = {}
        for trace_id, sha, action in (
            Step.objects.filter(trace_id__in=[row[0] for row in traces])
            .order_by("trace_id", "index")
            .values_list("trace_id", "screenshot__sha256", "action_text")
        ):
            steps.setdefault(trace_id, []).append((sha, action))
        for trace_id, instruction, metadata in traces:
            Trace.objects.filter(pk=trace_id).update(
                content_hash=content_hash(received_instruction(instruction, metadata), steps.get(trace_id, []))
            )


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0016_project_double_annotation_annotators"),
    ]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="content_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="trace",
            index=models.Index(fields=["project", "content_hash"], name="trace_content_idx"),
        ),
    ]
