from django.contrib import admin

from insights.models import ClusterRun, Slice
from studio.admin import JobAdmin, ReadOnlyAdmin


@admin.register(Slice)
class SliceAdmin(ReadOnlyAdmin):
    list_display = ("name", "project", "created_by", "created_at")


@admin.register(ClusterRun)
class ClusterRunAdmin(JobAdmin):
    """A clustering run is a job (studio.admin.JobAdmin: looked up, deleted through ``job_delete`` once ended)."""

    list_display = ["id", "project", "status", "method", "corrections", "without_words", "created_at", "finished_at"]
