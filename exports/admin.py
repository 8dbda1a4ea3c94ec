from django.contrib import admin

from exports.models import ExportJob


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "format", "status", "progress_done", "progress_total", "bundle_size", "created_at"]
    list_filter = ["status", "format"]
    readonly_fields = ["errors", "counts", "bundle_name", "bundle_sha256"]
