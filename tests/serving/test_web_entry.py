"""The web entry point (studio/asgi.py): HTTP through Django's WSGI handler on a thread pool, streamed downloads,
the Server-Timing header, and one Redis connection pool per process for the cache."""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from exports.models import ExportJob
from studio.models import JobStatus
from studio.security import api_token_issue

BUNDLE_BYTES = 32 * 1024 * 1024


def http_scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }


def call(application, scope: dict, on_body) -> dict:
    """Run one request through the ASGI application; ``on_body`` sees each body message as it is sent. Its own
    thread and event loop: the browser tests' Playwright keeps a loop running in the main thread."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _call(application, scope, on_body)).result()


async def _call(application, scope: dict, on_body) -> dict:
    start = {}
    requested = False

    async def receive():
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            on_body(message)

    await application(scope, receive, send)
    return start


@pytest.mark.django_db(transaction=True)
def test_a_bundle_download_streams_through_the_web_entry_point(project, engineer):
    """Django's own ASGI handler reads a synchronous streaming response (our bundle download) wholly into
    memory before sending it; served through the WSGI handler it goes out chunk by chunk."""
    from studio.asgi import application

    content = os.urandom(BUNDLE_BYTES)
    name = default_storage.save("exports/big-test-bundle.zip", ContentFile(content))
    job = ExportJob.objects.create(
        project=project,
        format="trl",
        status=JobStatus.SUCCEEDED,
        bundle_name=name,
        bundle_sha256=hashlib.sha256(content).hexdigest(),
        bundle_size=len(content),
    )
    token = api_token_issue(user=engineer)
    del content
    digest, messages, received = hashlib.sha256(), [], [0]

    def on_body(message):
        digest.update(message.get("body", b""))
        received[0] += len(message.get("body", b""))
        messages.append(len(message.get("body", b"")))

    tracemalloc.start()
    try:
        start = call(
            application,
            http_scope(f"/api/exports/{job.pk}/bundle", [(b"authorization", f"Token {token}".encode())]),
            on_body,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        default_storage.delete(name)
    assert start["status"] == 200
    headers = dict(start["headers"])
    assert headers[b"content-length"] == str(BUNDLE_BYTES).encode()
    assert headers[b"server-timing"].startswith(b"app;dur=")
    assert received[0] == BUNDLE_BYTES and digest.hexdigest() == job.bundle_sha256
    assert len(messages) > 8, "the bundle should go out in many chunks"
    assert peak < BUNDLE_BYTES / 2, (
        f"the download held {peak / 2**20:.1f} MiB at once (bundle: {BUNDLE_BYTES / 2**20:.0f} MiB)"
    )


@pytest.mark.django_db(transaction=True)
def test_pages_answer_through_the_web_entry_point(annotator):
    from studio.asgi import application

    body = bytearray()
    start = call(application, http_scope("/login/", []), lambda m: body.extend(m.get("body", b"")))
    assert start["status"] == 200 and b"csrfmiddlewaretoken" in bytes(body)
    assert dict(start["headers"])[b"server-timing"].startswith(b"app;dur=")
    # Browsers ask every page's icon of the server: the pages name one the server has.
    icon = re.search(rb'<link rel="icon" href="([^"]+)"', bytes(body)).group(1).decode()
    icon_body = bytearray()
    icon_start = call(application, http_scope(icon, []), lambda m: icon_body.extend(m.get("body", b"")))
    assert icon_start["status"] == 200 and dict(icon_start["headers"])[b"content-type"].startswith(b"image/svg+xml")
    assert icon_body.startswith(b"<svg")


@pytest.mark.django_db(transaction=True)
def test_an_answer_held_in_memory_goes_out_as_one_body_message(annotator):
    """A page or an API answer (Django's HttpResponse) is sent whole from the event loop once the view's thread is
    done: one body message, the last, rather than each message handed over from the thread and an empty last one."""
    from studio.asgi import application

    messages: list[dict] = []
    start = call(application, http_scope("/login/", []), messages.append)
    assert start["status"] == 200
    assert [m["more_body"] for m in messages] == [False], [(len(m["body"]), m["more_body"]) for m in messages]
    assert b"csrfmiddlewaretoken" in messages[0]["body"]
    assert dict(start["headers"])[b"content-length"] == str(len(messages[0]["body"])).encode()


def test_cache_objects_of_a_process_share_one_redis_pool():
    """Django makes a cache object per request context; each would open its own Redis connection."""
    from studio.cache import SharedPoolRedisCache

    url = os.environ.get("STUDIO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    first = SharedPoolRedisCache(url, {"KEY_PREFIX": "studio-test"})
    second = SharedPoolRedisCache(url, {"KEY_PREFIX": "studio-test"})
    other_server = SharedPoolRedisCache("redis://127.0.0.1:6379/14", {"KEY_PREFIX": "studio-test"})
    assert first._cache is second._cache
    assert other_server._cache is not first._cache
    try:
        first.set("shared-pool-probe", "1", 30)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no Redis at {url}: {exc}")
    assert second.get("shared-pool-probe") == "1"
    first.delete("shared-pool-probe")


def test_a_body_refused_before_django_speaks_the_browsers_language():
    """The entry point refuses a body before Django reads a session: a Content-Length that is no number, or one over
    the route's cap, is answered in the language the Accept-Language header asks for, English without one."""
    import json

    from studio.asgi import application

    def refusal(headers: list[tuple[bytes, bytes]]) -> tuple[int, str]:
        scope = {**http_scope("/login/", headers), "method": "POST"}
        body = bytearray()
        start = call(application, scope, lambda m: body.extend(m.get("body", b"")))
        return start["status"], json.loads(bytes(body))["detail"]

    chinese = [(b"accept-language", b"zh-CN,zh;q=0.9")]
    assert refusal([(b"content-length", b"many")]) == (400, "The Content-Length header is not a number.")
    assert refusal([(b"content-length", b"many"), *chinese]) == (400, "Content-Length 请求头不是数字。")
    status, words = refusal([(b"content-length", b"3000000000"), *chinese])
    assert status == 413 and words.startswith("请求体过大（3000000000 字节；此处上限为 "), words
    status, words = refusal([(b"content-length", b"3000000000")])
    assert status == 413 and words.startswith("The request body is too large (3000000000 bytes;"), words
