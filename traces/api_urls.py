from django.urls import path

from traces import api

urlpatterns = [
    path("projects/", api.ProjectList.as_view(), name="api-project-list"),
    path("projects/<int:pk>/", api.ProjectDetail.as_view(), name="api-project-detail"),
    path("projects/<int:project_id>/traces/", api.TraceList.as_view(), name="api-trace-list"),
    path("projects/<int:project_id>/imports/", api.ImportCreate.as_view(), name="api-import-create"),
    path("traces/<int:pk>/", api.TraceDetail.as_view(), name="api-trace-detail"),
    path("imports/<int:pk>/", api.ImportJobDetail.as_view(), name="api-import-detail"),
    path("actions/table/", api.ActionTable.as_view(), name="api-action-table"),
    path("actions/validate/", api.ActionValidate.as_view(), name="api-action-validate"),
]
