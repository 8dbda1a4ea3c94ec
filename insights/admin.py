from django.contrib import admin

from insights.models import ClusterRun, Slice
from studio.admin import ReadOnlyAdmin


@admin.register(Slice)
class SliceAdmin(ReadOnlyAdmin):
    list_display = ("name", "project", "created_by", "created_at")


@admin.register(ClusterRun)
class ClusterRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "project", "status", "method", "corrections", "created_at")
