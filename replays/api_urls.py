from django.urls import path

from replays import api

urlpatterns = [
    path("projects/<int:project_id>/replays/", api.ReplayList.as_view(), name="api-replay-list"),
    path("projects/<int:project_id>/replays/claim/", api.ReplayClaim.as_view(), name="api-replay-claim"),
    path("projects/<int:project_id>/replays/counts/", api.ReplayCounts.as_view(), name="api-replay-counts"),
    path("projects/<int:project_id>/replays/policy/", api.ReplayPolicyDetail.as_view(), name="api-replay-policy"),
    path("replays/<int:pk>/", api.ReplayDetail.as_view(), name="api-replay-detail"),
    path("replays/<int:pk>/steps/", api.ReplaySteps.as_view(), name="api-replay-steps"),
    path("replays/<int:pk>/finish/", api.ReplayFinish.as_view(), name="api-replay-finish"),
    path("replays/<int:pk>/cancel/", api.ReplayCancel.as_view(), name="api-replay-cancel"),
    path("replays/<int:pk>/queue/", api.ReplayBranchQueue.as_view(), name="api-replay-queue"),
]
