"""API routes of this app (mounted under /api/)."""

from django.urls import include, path

from annotation import api
from annotation.alternatives import api as alternatives_api

urlpatterns = [
    path("projects/<int:project_id>/next-trace/", api.NextTrace.as_view(), name="api-next-trace"),
    path("projects/<int:project_id>/leases/", api.ProjectLeases.as_view(), name="api-project-leases"),
    path("leases/<int:pk>/heartbeat/", api.LeaseHeartbeat.as_view(), name="api-lease-heartbeat"),
    path("leases/<int:pk>/release/", api.LeaseRelease.as_view(), name="api-lease-release"),
    path("annotations/<int:pk>/", api.AnnotationDetail.as_view(), name="api-annotation-detail"),
    path("annotations/<int:pk>/steps/", api.AnnotationSteps.as_view(), name="api-annotation-steps"),
    path("annotations/<int:pk>/draft/", api.AnnotationDraft.as_view(), name="api-annotation-draft"),
    path("annotations/<int:pk>/check-action/", api.ActionCheck.as_view(), name="api-annotation-check-action"),
    path("annotations/<int:pk>/submit/", api.AnnotationSubmit.as_view(), name="api-annotation-submit"),
    path("annotations/<int:pk>/skip/", api.AnnotationSkip.as_view(), name="api-annotation-skip"),
    path(
        "annotations/<int:pk>/alternatives/",
        alternatives_api.AnnotationAlternatives.as_view(),
        name="api-annotation-alternatives",
    ),
    path(
        "annotations/<int:pk>/alternatives/<int:alternative_id>/mark/",
        alternatives_api.AnnotationAlternativeMark.as_view(),
        name="api-annotation-alternative-mark",
    ),
    path("annotations/<int:pk>/versions/", api.AnnotationVersions.as_view(), name="api-annotation-versions"),
    path(
        "annotations/<int:pk>/versions/<int:number>/restore/",
        api.AnnotationVersionRestore.as_view(),
        name="api-annotation-version-restore",
    ),
    path("", include("annotation.review.api_urls")),
    path("", include("annotation.quality.api_urls")),
]
