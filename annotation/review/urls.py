"""Pages of the leads' review and dashboards."""

from django.urls import path

from annotation.review import views as review_views

urlpatterns = [
    path("reviews/", review_views.review_queue, name="review-queue"),
    path("reviews/<int:annotation_id>/", review_views.review_detail, name="review-detail"),
    path("reviews/<int:annotation_id>/decide/", review_views.review_decide, name="review-decide"),
    path("dashboard/", review_views.dashboard_index, name="dashboard"),
    path("projects/<int:project_id>/dashboard/", review_views.project_dashboard, name="project-dashboard"),
    path("projects/<int:project_id>/dashboard/rounds/", review_views.round_dashboard, name="round-dashboard"),
]
