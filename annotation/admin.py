"""Django admin for operators, to look things up: an annotation changes through the workspace and the review pages
(versioned, each transition audited), a lease through the queue and the lead's release (studio.admin)."""

from django.contrib import admin

from annotation.models import AlternativesJob, Annotation, AuditEvent, GoldEvent, GoldScore, GoldTrace, Lease
from studio.admin import JobAdmin, ReadOnlyAdmin


@admin.register(Annotation)
class AnnotationAdmin(ReadOnlyAdmin):
    list_display = ["id", "trace", "annotator", "kind", "status", "verdict", "tau", "version", "updated_at"]
    list_filter = ["kind", "status", "verdict"]
    raw_id_fields = ["trace", "annotator", "reviewed_by"]


@admin.register(Lease)
class LeaseAdmin(ReadOnlyAdmin):
    list_display = ["id", "trace", "user", "expires_at", "released_at", "release_reason"]
    raw_id_fields = ["trace", "user", "released_by"]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["id", "annotation", "actor", "kind", "from_status", "to_status", "at"]
    raw_id_fields = ["annotation", "actor"]


@admin.register(AlternativesJob)
class AlternativesJobAdmin(JobAdmin):
    list_display = ["id", "annotation", "step", "model_name", "status", "reused", "created_at", "finished_at"]
    search_fields = ["model_name", "weights_hash"]
    raw_id_fields = ["annotation", "step"]


# Quality control (annotation.quality): marked, scored and removed through its services, looked up here.
@admin.register(GoldTrace)
class GoldTraceAdmin(ReadOnlyAdmin):
    list_display = ["id", "trace", "reference", "reference_version", "marked_by", "marked_at"]
    raw_id_fields = ["trace", "reference", "marked_by"]


@admin.register(GoldScore)
class GoldScoreAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "annotation",
        "annotator",
        "kind",
        "correct",
        "submitted_at",
        "rescored_at",
        "gold_removed_at",
    ]
    list_filter = ["kind", "correct"]
    raw_id_fields = ["annotation", "gold", "annotator", "attempt"]


@admin.register(GoldEvent)
class GoldEventAdmin(ReadOnlyAdmin):
    list_display = ["id", "external_id", "kind", "actor", "at"]
    raw_id_fields = ["gold", "actor"]
