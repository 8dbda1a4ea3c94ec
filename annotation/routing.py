"""WebSocket routes of the annotation app (gathered by studio.routing)."""

from django.urls import path

from annotation.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi()),
]
