from django.contrib import admin

from exports.models import ExportJob
from studio.admin import JobAdmin


@admin.register(ExportJob)
class ExportJobAdmin(JobAdmin):
    list_display = ["id", "project", "format", "status", "progress_done", "progress_total", "bundle_size", "created_at"]
    list_filter = ["status", "format"]
    search_fields = ["bundle_sha256"]
