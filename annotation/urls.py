"""Pages of this app."""

from django.urls import include, path

from annotation import views

urlpatterns = [
    path("queue/", views.queue, name="annotation-queue"),
    path("queue/<int:project_id>/next/", views.next_trace, name="annotation-next-trace"),
    path("leases/<int:lease_id>/release/", views.lease_release, name="annotation-lease-release"),
    path("annotations/<int:annotation_id>/", views.workspace, name="annotation-workspace"),
    path("", include("annotation.review.urls")),
    path("", include("annotation.quality.urls")),
]
