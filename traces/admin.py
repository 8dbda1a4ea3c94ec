"""Django admin for operators: look things up (studio.admin: writes go through the studio's pages and services)."""

from collections.abc import Callable

from django.contrib import admin
from django.db.models import Model
from django.urls import reverse

from studio.admin import JobAdmin, ReadOnlyAdmin, ReadOnlyInline
from studio.words import counted, in_words
from traces.extensions import project_records
from traces.models import ImportJob, Membership, Project, Round, Screenshot, Step, Trace, TraceDeletion
from traces.selectors import project_jobs
from traces.services import project_delete


class MembershipInline(ReadOnlyInline):
    model = Membership


@admin.register(Project)
class ProjectAdmin(ReadOnlyAdmin):
    """Settings and members change on the project's settings page ("view on site"), through project_save and its
    rules; the admin deletes a project through project_delete."""

    list_display = ["name", "platform", "coordinate_convention", "history_window", "blind_prescoring", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]

    def view_on_site(self, obj):
        return reverse("project-settings", args=[obj.pk])

    def has_delete_permission(self, request, obj=None):
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    # Django's own delete page lists every object a deletion cascades to, read into memory (a million-pair project
    # never answered); this one gives counts and deletes through project_delete, in batches, refused while a job runs.
    def get_deleted_objects(self, objs, request):
        # Counted: the project, its traces and steps, and what other apps registered as the project's rows
        # (traces.extensions: annotation's annotations), in that order.
        owned_models: list[tuple[type[Model], Callable]] = [
            (Trace, lambda project: project.traces.count()),
            (Step, lambda project: Step.objects.filter(trace__project=project).count()),
            *((record.model, record.count) for record in project_records()),
        ]
        summary: list[str] = []
        counts: dict[str, int] = {}
        perms_needed: set[str] = set()
        protected: list[str] = []
        for project in objs:
            jobs = project_jobs(project)
            owned: list[tuple[type[Model], int]] = [(model, count(project)) for model, count in owned_models]
            words = [counted(number, model) for model, number in owned]
            words.append(in_words(len(jobs), "job", "jobs"))  # of several kinds: no one model's names
            summary.append(f"{project}: {', '.join(words)} (screenshots other projects show are kept)")
            rows: list[tuple[type[Model], int]] = [(Project, 1), *owned]
            for model, number in rows:
                key = str(model._meta.verbose_name_plural)
                counts[key] = counts.get(key, 0) + number
            protected.extend(
                f"{job._meta.verbose_name} {job.pk} of {project} is {job.status}" for job in jobs if not job.is_finished
            )
        models: list[type[Model]] = [Project, *(model for model, _ in owned_models)]
        for model in models:
            if not request.user.has_perm(f"{model._meta.app_label}.delete_{model._meta.model_name}"):
                perms_needed.add(str(model._meta.verbose_name))
        return summary, counts, perms_needed, protected

    def delete_model(self, request, obj):
        project_delete(project=obj)

    def delete_queryset(self, request, queryset):
        for project in queryset:
            project_delete(project=project)


@admin.register(Trace)
class TraceAdmin(ReadOnlyAdmin):
    """A trace's instruction is set, and a trace deleted with its reason recorded, on its page ("view on site")."""

    list_display = ["id", "project", "external_id", "source", "outcome", "step_count", "created_at"]
    list_filter = ["project", "source", "outcome"]
    search_fields = ["external_id", "instruction"]
    raw_id_fields = ["final_screenshot", "import_job"]

    def view_on_site(self, obj):
        return reverse("trace-detail", args=[obj.pk])


@admin.register(Step)
class StepAdmin(ReadOnlyAdmin):
    list_display = ["id", "trace", "index", "action_text", "parse_error"]
    search_fields = ["action_text", "thought"]
    raw_id_fields = ["trace", "screenshot"]


@admin.register(Screenshot)
class ScreenshotAdmin(ReadOnlyAdmin):
    list_display = ["sha256", "format", "width", "height", "byte_size", "created_at"]
    search_fields = ["sha256"]


admin.site.register(ImportJob, JobAdmin)


@admin.register(Round)
class RoundAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "name", "checkpoint", "ran_at", "annotated_at"]
    list_filter = ["project"]
    search_fields = ["name", "checkpoint", "weights_hash"]


@admin.register(TraceDeletion)
class TraceDeletionAdmin(ReadOnlyAdmin):
    """Who deleted which trace, when and why: the record stays after the trace is gone."""

    list_display = ["id", "project", "trace_id", "external_id", "deleted_by", "deleted_at"]
    list_filter = ["project"]
    search_fields = ["external_id", "reason"]
