from django.urls import path

from prescoring import api

urlpatterns = [
    path("projects/<int:project_id>/prescore/", api.PrescoreStart.as_view(), name="api-prescore-start"),
    path("projects/<int:project_id>/prescore/jobs/", api.PrescoreJobList.as_view(), name="api-prescore-jobs"),
    path("prescore/jobs/<int:pk>/", api.PrescoreJobDetail.as_view(), name="api-prescore-job"),
    path("prescore/jobs/<int:pk>/cancel/", api.PrescoreJobCancel.as_view(), name="api-prescore-cancel"),
    path("traces/<int:pk>/suggestions/", api.TraceSuggestions.as_view(), name="api-trace-suggestions"),
]
