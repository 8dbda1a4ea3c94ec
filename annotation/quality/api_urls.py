"""API routes of quality control (mounted under /api/ by annotation.api_urls)."""

from django.urls import path

from annotation.quality import api

urlpatterns = [
    path("projects/<int:project_id>/gold/", api.ProjectGold.as_view(), name="api-project-gold"),
    path("gold/<int:pk>/", api.GoldDetail.as_view(), name="api-gold-detail"),
    path("projects/<int:project_id>/quality/", api.ProjectQuality.as_view(), name="api-project-quality"),
    path(
        "projects/<int:project_id>/quality/settings/",
        api.ProjectQualitySettings.as_view(),
        name="api-project-quality-settings",
    ),
    path(
        "projects/<int:project_id>/quality/pause/", api.ProjectQualityPause.as_view(), name="api-project-quality-pause"
    ),
    path(
        "projects/<int:project_id>/qualification/", api.ProjectQualification.as_view(), name="api-project-qualification"
    ),
    path(
        "projects/<int:project_id>/qualification/retry/",
        api.ProjectQualificationRetry.as_view(),
        name="api-project-qualification-retry",
    ),
    path("annotations/<int:pk>/feedback/", api.AnnotationFeedback.as_view(), name="api-annotation-feedback"),
]
