"""Django admin for operators: look things up, fix a project's settings; workflows stay in services."""

from django.contrib import admin

from traces.models import ImportJob, Membership, Project, Screenshot, Step, Trace


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "platform", "coordinate_convention", "history_window", "blind_prescoring", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "external_id", "source", "outcome", "step_count", "created_at"]
    list_filter = ["project", "source", "outcome"]
    search_fields = ["external_id", "instruction"]
    raw_id_fields = ["final_screenshot", "import_job"]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["id", "trace", "index", "action_text", "parse_error"]
    search_fields = ["action_text", "thought"]
    raw_id_fields = ["trace", "screenshot"]


@admin.register(Screenshot)
class ScreenshotAdmin(admin.ModelAdmin):
    list_display = ["sha256", "format", "width", "height", "byte_size", "created_at"]
    search_fields = ["sha256"]


@admin.register(ImportJob)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "status", "progress_done", "progress_total", "created_at", "finished_at"]
    list_filter = ["status"]
    readonly_fields = ["errors"]
