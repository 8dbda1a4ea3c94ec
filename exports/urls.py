"""Pages of this app."""

from django.urls import path

from exports import views

urlpatterns = [
    path("exports/", views.export_home, name="export-home"),
    path("exports/<int:job_id>/", views.export_job, name="export-job"),
    path("exports/<int:job_id>/cancel/", views.export_job_cancel, name="export-job-cancel"),
    path("exports/<int:job_id>/diff/", views.export_diff, name="export-diff"),
]
