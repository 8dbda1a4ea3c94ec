from django.urls import path

from replays import views

urlpatterns = [
    path("replays/<int:replay_id>/queue/", views.replay_queue, name="replay-queue"),
    path("projects/<int:project_id>/replays/policy/", views.replay_policy, name="replay-policy"),
]
