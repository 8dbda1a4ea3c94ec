"""The PostgreSQL backend (settings.DATABASES' ENGINE): Django's, whose connection pool checks a connection before it
lends it to a request (``CONN_HEALTH_CHECKS``) without a round trip where it can.

psycopg's own check (``ConnectionPool.check_connection``, what Django gives its pool) sends an
empty query and waits for the answer: one more round trip, and one more transaction in PostgreSQL, on every request.
A connection PostgreSQL dropped while it sat in the pool (a restart, ``pg_terminate_backend``, the server process
killed) has something on its socket by then: the server's last message (FATAL 57P01 on a shutdown or termination)
and the end of the stream, or an error when the peer reset it. So a connection that is idle (no transaction), whose
client side is still sound and whose socket has nothing to read is lent without a query; anything else (something
to read, a broken or busy connection) gets psycopg's round-trip check, which the pool answers by discarding a dead
connection and lending another. Nothing is read from the socket here: whatever waits there stays for that check.

Only silence on the socket is taken for health. A connection lost without the peer's word (a network cut) looks
healthy to both checks alike: the empty query would wait on it as the request's first query does.
"""

from __future__ import annotations

import select
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base


def socket_has_input(fd: int) -> bool:
    """Whether ``fd`` has anything to read, an end of stream or an error, without waiting."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)  # POLLHUP and POLLERR are always reported
    return bool(poller.poll(0))


def connection_check(conn: Any) -> None:
    """Return quietly for a connection that can be lent; raise (psycopg's check) for one that cannot."""
    from psycopg import pq
    from psycopg_pool import ConnectionPool

    pgconn = conn.pgconn
    if (
        not conn.closed
        and pgconn.status == pq.ConnStatus.OK
        and pgconn.transaction_status == pq.TransactionStatus.IDLE
        and not socket_has_input(pgconn.socket)
    ):
        return
    ConnectionPool.check_connection(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> Any:
        """Django's pool (the same options, opened on first use, one per alias and process), checking connections
        with ``connection_check`` where Django's passes psycopg's round-trip check."""
        pool_options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not pool_options:
            return None
        # Django's class-wide table of pools and its connection setup: private, and not in the stubs.
        pools: dict[str, Any] = self._connection_pools  # type: ignore[attr-defined]
        if self.alias not in pools:
            if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
                raise ImproperlyConfigured("Pooling doesn't support persistent connections.")
            from psycopg_pool import ConnectionPool

            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True  # as Django's: it sets the connection's mode itself later
            pool = ConnectionPool(
                kwargs=connect_kwargs,
                open=False,
                configure=self._configure_connection,  # type: ignore[attr-defined]
                check=connection_check if self.settings_dict["CONN_HEALTH_CHECKS"] else None,
                **({} if pool_options is True else pool_options),
            )
            # Threads starting at once may each make one: the first set wins (none is opened before it is used).
            pools.setdefault(self.alias, pool)
        return pools[self.alias]
