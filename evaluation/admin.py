"""Django admin for operators: look up checkpoint evaluations (studio.admin: they are started on the evaluation page
or by the command, and their samples are the job's own rows)."""

from django.contrib import admin

from evaluation.models import EvaluationJob
from studio.admin import JobAdmin


@admin.register(EvaluationJob)
class EvaluationJobAdmin(JobAdmin):
    list_display = ["id", "project", "checkpoint", "status", "samples_scored", "samples_total", "created_at"]
    list_filter = ["status"]
    search_fields = ["checkpoint", "weights_hash"]
