"""What the admin pages share: the admin is for looking things up. Every write has a service that keeps its rules
(a project's convention fixed once traces exist, an annotation's audited and versioned transitions, a trace's deletion
record, a job's state machine), and a page or command that calls it; an admin form would write around all of them.
So the admin adds and edits nothing, and deletes only where a service does the deletion: projects
(``project_delete``) and jobs (``job_delete``)."""

from collections.abc import Sequence

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from rest_framework.authtoken.models import TokenProxy

from studio.jobs import job_cascades, job_delete
from studio.models import JobBase, JobShard
from studio.words import counted


class ReadOnlyAdmin(admin.ModelAdmin):
    """Look up, never write: no add, change or delete (a subclass allows delete where a service does it)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class JobAdmin(ReadOnlyAdmin):
    """A job's status moves through ``studio.jobs`` alone (a claimed attempt, a heartbeat, an end announced once
    committed), so the admin shows jobs without letting them be edited (an edited status would skip all of it) or
    added (a row made here would never be queued). Deleting one goes through ``job_delete``: refused while the job
    is queued or running, its shards and files go with it, and the confirmation page gives counts, not Django's
    list of every row that cascades (a pre-scoring job has one suggestion a step)."""

    list_display = ["id", "project", "status", "progress_done", "progress_total", "created_at", "finished_at"]
    list_filter = ["status"]

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return admin.ModelAdmin.has_delete_permission(self, request, obj)

    def get_deleted_objects(
        self, objs: Sequence[JobBase] | QuerySet[JobBase], request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        jobs = list(objs)
        summary: list[str] = []
        counts: dict[str, int] = {}
        perms_needed: set[str] = set()
        protected: list[str] = []
        counts[str(self.model._meta.verbose_name_plural)] = len(jobs)
        for job in jobs:
            owned: list[tuple[type[Model], int]] = [
                (JobShard, JobShard.objects.filter(job_model=job._meta.label, job_id=job.pk).count())
            ]
            for relation in job_cascades(type(job)):
                rows = relation.related_model._base_manager.filter(**{relation.field.name: job.pk}).count()
                owned.append((relation.related_model, rows))
            for model, rows in owned:
                name = str(model._meta.verbose_name_plural)
                counts[name] = counts.get(name, 0) + rows
            in_text = ", ".join(counted(rows, model) for model, rows in owned)
            summary.append(f"{job}: {in_text}, and the files only it stored")
            if not job.is_finished:
                protected.append(f"{job._meta.verbose_name} {job.pk} is {job.status}: cancel it or let it end first")
        model = self.model
        if not request.user.has_perm(f"{model._meta.app_label}.delete_{model._meta.model_name}"):
            perms_needed.add(str(model._meta.verbose_name))
        return summary, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: JobBase) -> None:
        job_delete(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[JobBase]) -> None:
        for job in queryset:
            job_delete(job)


# No API token page. rest_framework's listed every user's key in the clear and made keys for any user, and a token's
# name is its key (on every page of a row: title, breadcrumbs), so whoever opened the admin could act as any user on
# the API. A key is shown once, to its owner, when it is issued (studio.security.api_token_issue, /account/token/).
admin.site.unregister(TokenProxy)  # studio comes after rest_framework.authtoken in INSTALLED_APPS
