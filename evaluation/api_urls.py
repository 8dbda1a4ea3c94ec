"""API routes of this app (mounted under /api/)."""

from django.urls import path

from evaluation import api

urlpatterns = [
    path("projects/<int:project_id>/evaluations/", api.ProjectEvaluations.as_view(), name="api-project-evaluations"),
    path("evaluations/<int:pk>/", api.EvaluationDetail.as_view(), name="api-evaluation-detail"),
    path("evaluations/<int:pk>/samples/", api.EvaluationSamples.as_view(), name="api-evaluation-samples"),
    path("evaluations/<int:pk>/cancel/", api.EvaluationCancel.as_view(), name="api-evaluation-cancel"),
]
