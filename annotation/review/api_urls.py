"""API routes of the leads' review, agreement, dashboard and presence (mounted under /api/)."""

from django.urls import path

from annotation.review import api as review_api

urlpatterns = [
    path("reviews/", review_api.ReviewQueue.as_view(), name="api-review-queue"),
    path("reviews/<int:pk>/", review_api.ReviewDetail.as_view(), name="api-review-detail"),
    path("reviews/<int:pk>/steps/", review_api.ReviewSteps.as_view(), name="api-review-steps"),
    path("reviews/<int:pk>/accept/", review_api.ReviewAccept.as_view(), name="api-review-accept"),
    path("reviews/<int:pk>/reject/", review_api.ReviewReject.as_view(), name="api-review-reject"),
    path("reviews/<int:pk>/edit-accept/", review_api.ReviewEditAccept.as_view(), name="api-review-edit-accept"),
    path("reviews/<int:pk>/adjudicate/", review_api.ReviewAdjudicate.as_view(), name="api-review-adjudicate"),
    path("reviews/<int:pk>/check-action/", review_api.ReviewActionCheck.as_view(), name="api-review-check-action"),
    path("projects/<int:project_id>/agreement/", review_api.ProjectAgreement.as_view(), name="api-project-agreement"),
    path("projects/<int:project_id>/dashboard/", review_api.ProjectDashboard.as_view(), name="api-project-dashboard"),
    path(
        "projects/<int:project_id>/rounds/dashboard/", review_api.RoundDashboard.as_view(), name="api-round-dashboard"
    ),
    path("projects/<int:project_id>/presence/", review_api.ProjectPresence.as_view(), name="api-project-presence"),
    path("traces/<int:trace_id>/history/", review_api.TraceHistory.as_view(), name="api-trace-history"),
]
