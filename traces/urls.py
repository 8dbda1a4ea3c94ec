from django.urls import path

from traces import views

urlpatterns = [
    path("projects/", views.project_list, name="project-list"),
    path("projects/new/", views.project_create, name="project-create"),
    path("projects/<int:project_id>/settings/", views.project_settings, name="project-settings"),
    path("projects/<int:project_id>/traces/", views.trace_list, name="trace-list"),
    path("projects/<int:project_id>/rounds/new/", views.round_create, name="round-create"),
    path("projects/<int:project_id>/instructions/", views.instructions_upload, name="instructions-upload"),
    path("projects/<int:project_id>/import/", views.import_upload, name="import-upload"),
    path("imports/<int:job_id>/", views.import_job, name="import-job"),
    path("imports/<int:job_id>/cancel/", views.import_job_cancel, name="import-job-cancel"),
    path("traces/<int:trace_id>/", views.trace_detail, name="trace-detail"),
    path("traces/<int:trace_id>/instruction/", views.trace_instruction, name="trace-instruction"),
    path("traces/<int:trace_id>/delete/", views.trace_delete, name="trace-delete"),
    path("screenshots/<str:sha256>/<str:kind>", views.screenshot_file, name="screenshot-file"),
]
