"""API routes of this app (mounted under /api/)."""

from django.urls import path

from insights import api

urlpatterns = [
    path("projects/<int:project_id>/search/", api.ProjectSearch.as_view(), name="api-project-search"),
    path("projects/<int:project_id>/slices/", api.ProjectSlices.as_view(), name="api-project-slices"),
    path("slices/<int:pk>/", api.SliceDetail.as_view(), name="api-slice-detail"),
    path("slices/<int:pk>/queue/", api.SliceQueue.as_view(), name="api-slice-queue"),
    path("slices/<int:pk>/compare/", api.SliceCompare.as_view(), name="api-slice-compare"),
    path("projects/<int:project_id>/clusters/", api.ProjectClusters.as_view(), name="api-project-clusters"),
    path("cluster-runs/<int:pk>/cancel/", api.ClusterRunCancel.as_view(), name="api-cluster-run-cancel"),
    path("clusters/<int:pk>/", api.ClusterDetail.as_view(), name="api-cluster-detail"),
    path("clusters/<int:pk>/slice/", api.ClusterSlice.as_view(), name="api-cluster-slice"),
    path("clusters/<int:pk>/merge/", api.ClusterMerge.as_view(), name="api-cluster-merge"),
    path("projects/<int:project_id>/alignment/", api.ProjectAlignment.as_view(), name="api-project-alignment"),
]
