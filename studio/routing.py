"""WebSocket routes of every app, gathered in one list."""

websocket_urlpatterns: list = []

try:
    from annotation.routing import websocket_urlpatterns as annotation_ws
except ImportError:  # the live-presence app part is optional until it lands
    annotation_ws = []

websocket_urlpatterns += annotation_ws
