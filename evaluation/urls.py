"""Pages of this app."""

from django.urls import path

from evaluation import views

urlpatterns = [
    path("projects/<int:project_id>/evaluations/", views.project_evaluations, name="project-evaluations"),
    path("projects/<int:project_id>/evaluations.csv", views.project_evaluations_csv, name="project-evaluations-csv"),
]
