"""Django admin for operators: look up replay requests and the projects' replay settings (studio.admin: leads ask for,
cancel and configure replays on the trace and settings pages, runners claim and finish them through the API)."""

from django.contrib import admin

from replays.models import ReplayPolicy, ReplayRequest
from studio.admin import ReadOnlyAdmin


@admin.register(ReplayRequest)
class ReplayRequestAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "trace", "tau", "status", "claimed_by", "claims", "success", "created_at"]
    list_filter = ["status", "success"]
    raw_id_fields = ["project", "annotation", "trace", "branch", "requested_by"]


@admin.register(ReplayPolicy)
class ReplayPolicyAdmin(ReadOnlyAdmin):
    list_display = ["project", "every_accepted_correction", "deadline_s", "lease_s"]
