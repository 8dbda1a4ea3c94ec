"""Django admin for operators. Status changes go through the review pages, which write the audit trail."""

from django.contrib import admin

from annotation.models import Annotation, AuditEvent, Lease


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["id", "trace", "annotator", "status", "verdict", "tau", "version", "updated_at"]
    list_filter = ["status", "verdict"]
    raw_id_fields = ["trace", "annotator", "reviewed_by"]
    readonly_fields = ["status", "version"]  # the state machine, not the admin, moves an annotation


@admin.register(Lease)
class LeaseAdmin(admin.ModelAdmin):
    list_display = ["id", "trace", "user", "expires_at", "released_at", "release_reason"]
    raw_id_fields = ["trace", "user", "released_by"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["id", "annotation", "actor", "kind", "from_status", "to_status", "at"]
    raw_id_fields = ["annotation", "actor"]

    def has_change_permission(self, request, obj=None):
        return False  # append-only

    def has_delete_permission(self, request, obj=None):
        return False
