"""ASGI entry point: HTTP through Django, WebSockets through Channels."""

import os
import sys

from django.core.asgi import get_asgi_application

# Each request hands the interpreter lock between the event loop and its worker thread several times; under
# load the default 5 ms switch interval makes every hand-over wait for a busy thread's turn to end.
sys.setswitchinterval(0.001)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from studio.middleware import ServerTimingMiddleware  # noqa: E402
from studio.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": ServerTimingMiddleware(django_asgi_app),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
