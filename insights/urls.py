"""Pages of this app."""

from django.urls import path

from insights import views

urlpatterns = [
    path("search/", views.search_home, name="search-home"),
    path("projects/<int:project_id>/search/", views.project_search, name="project-search"),
    path("projects/<int:project_id>/search.csv", views.project_search_csv, name="project-search-csv"),
    path("projects/<int:project_id>/slices/", views.project_slices, name="project-slices"),
    path("slices/<int:pk>/", views.slice_detail, name="slice-detail"),
    path("slices/<int:pk>/queue/", views.slice_queue, name="slice-queue"),
    path("projects/<int:project_id>/clusters/", views.project_clusters, name="project-clusters"),
    path("cluster-runs/<int:pk>/cancel/", views.cluster_run_cancel, name="cluster-run-cancel"),
    path("clusters/<int:pk>/slice/", views.cluster_slice, name="cluster-slice"),
    path("clusters/<int:pk>/edit/", views.cluster_edit, name="cluster-edit"),
    path("projects/<int:project_id>/alignment/", views.project_alignment, name="project-alignment"),
    path("projects/<int:project_id>/alignment.csv", views.project_alignment_csv, name="project-alignment-csv"),
]
