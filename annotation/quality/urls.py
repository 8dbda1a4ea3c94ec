"""Pages of quality control (mounted by annotation.urls)."""

from django.urls import path

from annotation.quality import views

urlpatterns = [
    path("reviews/<int:annotation_id>/gold/", views.review_gold, name="review-gold"),
    path("projects/<int:project_id>/quality/", views.project_quality, name="project-quality"),
    path("projects/<int:project_id>/quality/gold-file/", views.gold_file, name="gold-file"),
    path("projects/<int:project_id>/quality/allow/", views.qualification_allow, name="qualification-allow"),
    path("projects/<int:project_id>/qualification/", views.qualification, name="qualification"),
    path("annotations/<int:annotation_id>/feedback/", views.answer_feedback, name="annotation-feedback"),
]
