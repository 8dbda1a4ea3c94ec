"""Dependencies blink, the studio stays up: sessions do not depend on Redis, and pooled
PostgreSQL connections that the server dropped are replaced before a request gets one."""

from __future__ import annotations

import subprocess

import pytest
from django.db import connection
from django.test import Client

from tests.conftest import TEST_PASSWORD
from tests.ports import free_port


@pytest.fixture
def redis_gone(settings):
    """A cache whose Redis refuses connections (nothing listens on the port)."""
    port = free_port()
    settings.CACHES = {
        "default": {
            "BACKEND": "studio.cache.SharedPoolRedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }


def test_login_and_pages_work_while_redis_is_down(db, project, lead, redis_gone):
    client = Client()
    assert client.post("/login/", {"username": lead.username, "password": TEST_PASSWORD}).status_code == 302
    assert client.get(f"/projects/{project.pk}/traces/").status_code == 200
    assert client.get("/api/projects/", HTTP_ACCEPT="application/json").status_code == 200
    client.post("/logout/")
    assert client.get(f"/projects/{project.pk}/traces/").status_code == 302  # logged out stays logged out


@pytest.mark.django_db(transaction=True)
def test_pooled_connections_dropped_by_the_server_are_replaced(project, lead):
    if connection.vendor != "postgresql":
        pytest.skip("pooled connections exist on PostgreSQL only (this run uses SQLite)")
    # A pool of its own: connections earlier tests' server threads still hold are not this test's subject.
    connection.close_pool()
    client = Client()
    client.force_login(lead)
    assert client.get(f"/projects/{project.pk}/traces/").status_code == 200
    connection.close()  # back to the pool, as at the end of every request
    name = connection.settings_dict["NAME"]
    subprocess.run(
        [
            "psql",
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-qAtc",
            f"select pg_terminate_backend(pid) from pg_stat_activity where datname = '{name}' "
            "and pid <> pg_backend_pid()",
        ],
        check=True,
        capture_output=True,
    )
    statuses = []
    for _ in range(5):
        statuses.append(client.get(f"/projects/{project.pk}/traces/").status_code)
        connection.close()
    assert statuses == [200] * 5


def test_channel_layer_reconnects_after_a_redis_restart(tmp_path):
    """The first channel-layer calls after Redis came back failed on the pool's dead connections (the first
    WebSocket handshakes answered 500); the layer's hosts now reconnect and send again."""
    import asyncio
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from channels_redis.core import RedisChannelLayer
    from redis.exceptions import ConnectionError

    from studio.channel_layer import redis_layer_host
    from tests.jobs.test_faults import PrivateRedis

    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    redis = PrivateRedis(tmp_path).start()
    url = f"redis://127.0.0.1:{redis.port}/0"

    async def first_calls_after_restart(host) -> list[str]:
        layer = RedisChannelLayer(hosts=[host])
        channel = await layer.new_channel()
        await layer.group_add("g", channel)
        await layer.group_send("g", {"type": "before"})
        assert (await layer.receive(channel))["type"] == "before"
        redis.kill()
        redis.start()
        outcomes = []
        for attempt in range(2):
            try:
                await layer.group_add("g", channel)
                await layer.group_send("g", {"type": f"after-{attempt}"})
                outcomes.append((await asyncio.wait_for(layer.receive(channel), 5))["type"])
            except ConnectionError:
                outcomes.append("error")
        await layer.flush()
        return outcomes

    def run(coroutine):  # on a thread of its own: Playwright's sync API may hold this thread's event loop
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coroutine).result()

    try:
        assert run(first_calls_after_restart(url)) == ["error", "after-1"]  # the stock host: one failure
        assert run(first_calls_after_restart(redis_layer_host(url))) == ["after-0", "after-1"]
    finally:
        redis.kill()
