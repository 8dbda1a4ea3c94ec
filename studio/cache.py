"""The Redis cache with one connection pool per process.

Django keeps a cache object per context, and the web entry point (studio/asgi.py) runs every request in a
fresh copy of the context: the stock backend then opens a new Redis connection (and pool) for every request.
Here the client, which holds the pool, is shared by every cache object of the process with the same servers
and options.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache.backends.redis import RedisCache
from django.utils.functional import cached_property

_clients: dict[tuple, object] = {}
_clients_lock = threading.Lock()


class SharedPoolRedisCache(RedisCache):
    @cached_property
    def _cache(self) -> Any:  # the client class the cache's options name (RedisCacheClient or another)
        # RedisCache's own attributes, which the stubs leave out.
        servers, options, client_class = self._servers, self._options, self._class  # type: ignore[attr-defined]
        key = (tuple(servers), repr(sorted(options.items())))
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = client_class(servers, **options)
        return client
