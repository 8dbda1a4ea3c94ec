"""The Channels layer's Redis connections survive a Redis restart.

channels_redis keeps a pool of connections per event loop. After Redis restarts, every pooled connection is dead,
and redis-py's default is to fail the first command on each (the first WebSocket handshakes after Redis came back
answered 500). With these options a command that meets a dead connection reconnects and is sent
again, a few times with a short backoff, before the error reaches a consumer.
"""

from __future__ import annotations

from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError, TimeoutError

RECONNECT_ATTEMPTS = 3


def redis_layer_host(url: str) -> dict:
    """One entry of ``CHANNEL_LAYERS[...]["CONFIG"]["hosts"]`` for the Redis at ``url``."""
    return {
        "address": url,
        "retry": Retry(ExponentialBackoff(cap=0.5, base=0.05), RECONNECT_ATTEMPTS),
        "retry_on_error": [ConnectionError, TimeoutError],
        "socket_connect_timeout": 1,
    }
