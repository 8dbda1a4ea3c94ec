from django.urls import path

from traces import api

urlpatterns = [
    path("projects/", api.ProjectList.as_view(), name="api-project-list"),
    path("projects/<int:pk>/", api.ProjectDetail.as_view(), name="api-project-detail"),
    path("projects/<int:project_id>/traces/", api.TraceList.as_view(), name="api-trace-list"),
    path(
        "projects/<int:project_id>/traces/<str:external_id>/steps/",
        api.TraceStepPush.as_view(),
        name="api-trace-step-push",
    ),
    path("projects/<int:project_id>/traces/<str:external_id>/end/", api.TraceEnd.as_view(), name="api-trace-end"),
    path("projects/<int:project_id>/instructions/", api.ProjectInstructions.as_view(), name="api-project-instructions"),
    path("projects/<int:project_id>/imports/", api.ImportCreate.as_view(), name="api-import-create"),
    path("projects/<int:project_id>/rounds/", api.RoundList.as_view(), name="api-round-list"),
    path("rounds/<int:pk>/", api.RoundDetail.as_view(), name="api-round-detail"),
    path("traces/<int:pk>/", api.TraceDetail.as_view(), name="api-trace-detail"),
    path("imports/formats/", api.ImportFormats.as_view(), name="api-import-formats"),
    path("imports/<int:pk>/", api.ImportJobDetail.as_view(), name="api-import-detail"),
    path("imports/<int:pk>/cancel/", api.ImportJobCancel.as_view(), name="api-import-cancel"),
    path("actions/table/", api.ActionTable.as_view(), name="api-action-table"),
    path("actions/validate/", api.ActionValidate.as_view(), name="api-action-validate"),
]
