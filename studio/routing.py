"""WebSocket routes of every app, gathered in one list."""

from annotation.routing import websocket_urlpatterns as annotation_ws

websocket_urlpatterns: list = [*annotation_ws]
