"""kombu's Redis transport, with a collected connection's channel answering a connection error, not a crash.

When Redis goes away, Celery's consumer closes its broker connection; kombu first clears the transport's
``client`` (``Connection.collect``) and a channel of that connection then still needs a Redis client: closing the
channel restores the running tasks' unacknowledged messages (kombu's ``QoS.restore_unacked_once``), and a task that
ends acknowledges its message. Building that client reads ``self.connection.client.hostname`` on None, an
``AttributeError`` that no connection-error handler catches, so the worker stopped with "Unrecoverable error"
(a busy worker only: an idle one holds no unacknowledged message). Here that moment is the connection
error it is: Celery ignores it while closing and reconnects, the messages stay in Redis's unacknowledged set
(given back after the visibility timeout) and the studio's watchdogs take the jobs over sooner.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection was closed after Redis went away; reconnecting")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel
