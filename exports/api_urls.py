"""API routes of this app (mounted under /api/)."""

from django.urls import path

from exports import api

urlpatterns = [
    path("projects/<int:project_id>/exports/", api.ProjectExports.as_view(), name="api-project-exports"),
    path("exports/formats/", api.ExportFormats.as_view(), name="api-export-formats"),
    path("exports/<int:pk>/", api.ExportJobDetail.as_view(), name="api-export-detail"),
    path("exports/<int:pk>/cancel/", api.ExportJobCancel.as_view(), name="api-export-cancel"),
    path("exports/<int:pk>/bundle", api.ExportBundle.as_view(), name="api-export-bundle"),
    path("exports/<int:pk>/diff/", api.ExportDiff.as_view(), name="api-export-diff"),
]
