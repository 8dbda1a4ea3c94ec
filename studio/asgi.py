"""ASGI entry point: WebSockets through Channels, HTTP through Django's WSGI handler on a pool of threads.

Django's own ASGI handler runs a sync view through three thread hand-overs per request (into the
middleware, back to the event loop, into the view), starts a thread per request, and serves a
streaming response with a synchronous iterator (our bundle downloads) by reading all of it into
memory first. Every view here is synchronous, so HTTP goes to the WSGI handler instead: one
hand-over to a pooled thread, and responses stream in chunks. The event loop is left to the
WebSocket consumers and to moving bytes: studio.web_entry reads request bodies (with size caps, the
upload role check and a deadline) and writes responses there, so a slow client holds no thread.
"""

import gc
import os
import sys

from django.core.wsgi import get_wsgi_application

# Each request hands the interpreter lock between the event loop and its worker thread; under load the
# default 5 ms switch interval makes every hand-over wait for a busy thread's turn to end.
sys.setswitchinterval(0.001)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
django_wsgi_app = get_wsgi_application()

from studio.checks import static_manifest_problem  # noqa: E402

if problem := static_manifest_problem():  # refuse to start rather than answer 500 on every page
    raise RuntimeError(problem)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from studio.engine import tasks_load_every  # noqa: E402
from studio.middleware import ClientAddressMiddleware, ServerTimingMiddleware  # noqa: E402
from studio.routing import websocket_urlpatterns  # noqa: E402
from studio.web_entry import HttpEntry  # noqa: E402

application = ClientAddressMiddleware(
    ProtocolTypeRouter(
        {
            "http": ServerTimingMiddleware(HttpEntry(django_wsgi_app, threads=settings.WEB_THREADS)),
            "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)

# Register every task a request may send before the first request comes: request threads that ask Celery for its
# tasks at once found its registry half filled (studio.engine.tasks_load_every).
tasks_load_every()

# Import every view now rather than on the first request, then move these long-lived objects out of the
# collector's sight: a full collection walks every object the process holds, and on a 2-core box one took
# 70–124 ms, pausing every request of the process meanwhile.
get_resolver().url_patterns  # noqa: B018 - reading it imports every view module now
gc.collect()
gc.freeze()
