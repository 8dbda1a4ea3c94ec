from django.urls import path

from traces import views

urlpatterns = [
    path("projects/", views.project_list, name="project-list"),
    path("projects/<int:project_id>/traces/", views.trace_list, name="trace-list"),
    path("projects/<int:project_id>/import/", views.import_upload, name="import-upload"),
    path("imports/<int:job_id>/", views.import_job, name="import-job"),
    path("traces/<int:trace_id>/", views.trace_detail, name="trace-detail"),
    path("screenshots/<str:sha256>/<str:kind>", views.screenshot_file, name="screenshot-file"),
]
