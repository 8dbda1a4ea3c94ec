"""Repair stored answers that contradict their verdict (a correction kept after "no error", a τ on "unusable").

The rule is frozen here as it stood when this migration was written (annotation.services.answer_for_verdict):
a migration must give the same result whenever it runs, whatever the live code becomes.
"""

from django.db import migrations

EMPTY_EDITOR = {"corrected": None, "reflection": None}
ERROR_ANSWER = {
    "tau": None, "error_category": "", "corrected_thought": "", "corrected_action": "", "reflection_thought": "",
    "reflection_action": "", "no_reflection_reason": "", "editor_state": EMPTY_EDITOR,
}
UNUSABLE_ANSWER = {"unusable_reason": ""}


def cleared_for(verdict: str) -> dict:
    if verdict == "":
        return {}
    cleared = {}
    if verdict != "error":
        cleared.update(ERROR_ANSWER)
    if verdict != "unusable":
        cleared.update(UNUSABLE_ANSWER)
    return cleared


def repair(apps, schema_editor):
    Annotation = apps.get_model("annotation", "Annotation")
    AuditEvent = apps.get_model("annotation", "AuditEvent")
    for annotation in Annotation.objects.exclude(verdict="").iterator(chunk_size=500):
        changes = {}
        for field, empty in cleared_for(annotation.verdict).items():
            before = getattr(annotation, field)
            if field == "editor_state" and not any((before or {}).values()):
                continue
            if before != empty:
                changes[field] = [before, empty]
                setattr(annotation, field, empty)
        if changes:
            annotation.version += 1
            annotation.save(update_fields=[*changes, "version"])
            AuditEvent.objects.create(
                annotation=annotation, project_id=annotation.project_id, annotator_id=annotation.annotator_id,
                actor=None, kind="edit", from_status=annotation.status, to_status=annotation.status, changes=changes,
                comment="repaired: the answer contradicted its verdict (migration 0005)",
            )


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_auditevent_project_annotator")]
    operations = [migrations.RunPython(repair, migrations.RunPython.noop)]
