from django.urls import path

from replays import views

urlpatterns = [
    path("replays/<int:replay_id>/queue/", views.replay_queue, name="replay-queue"),
]
