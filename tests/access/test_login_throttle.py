"""The login throttle counts what the login form authenticates from the address the web entry
trusts: padded or full-width variants of a name share its counter, and a client that writes its own
X-Forwarded-For does not get a fresh address unless it is a trusted proxy."""

from __future__ import annotations

import asyncio
import http.client
import re
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import pytest
from django.test import Client

from studio.middleware import ClientAddressMiddleware
from studio.security import LOGIN_MAX_FAILURES, LOGIN_MAX_FAILURES_PER_ADDRESS
from tests.conftest import TEST_PASSWORD


@pytest.mark.django_db
def test_variants_of_a_name_share_its_counter(annotator):
    client = Client()
    for _ in range(LOGIN_MAX_FAILURES):
        assert client.post("/login/", {"username": "ann", "password": "wrong"}).status_code == 200
    for variant in (" ann ", "ａｎｎ", "\tann\n", "ann"):
        refused = client.post("/login/", {"username": variant, "password": TEST_PASSWORD})
        assert refused.status_code == 429 and int(refused["Retry-After"]) > 0, variant
    # the counter is the name, not the account's existence: another address may still log in
    assert (
        Client(REMOTE_ADDR="10.9.8.7").post("/login/", {"username": " ann ", "password": TEST_PASSWORD}).status_code
        == 302
    )


@pytest.mark.django_db
def test_one_address_spraying_many_names_is_throttled(annotator):
    client = Client(REMOTE_ADDR="10.1.1.1")
    for i in range(LOGIN_MAX_FAILURES_PER_ADDRESS):
        assert client.post("/login/", {"username": f"guess{i}", "password": "wrong"}).status_code == 200
    assert client.post("/login/", {"username": "ann", "password": TEST_PASSWORD}).status_code == 429
    assert (
        Client(REMOTE_ADDR="10.1.1.2").post("/login/", {"username": "ann", "password": TEST_PASSWORD}).status_code
        == 302
    )


def scope_seen(middleware_trusted: list[str], peer: str, headers: list[tuple[bytes, bytes]]) -> dict:
    seen = {}

    async def app(scope, receive, send):
        seen.update(scope)

    scope = {"type": "http", "client": (peer, 1234), "headers": headers}
    # its own thread: a browser test's Playwright keeps an event loop running in the main thread
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, ClientAddressMiddleware(app, trusted=middleware_trusted)(scope, None, None)).result()
    return seen


def test_forwarded_headers_count_only_from_a_trusted_proxy():
    spoof = [(b"x-forwarded-for", b"203.0.113.9"), (b"x-forwarded-proto", b"https"), (b"host", b"studio")]
    untrusted = scope_seen([], "127.0.0.1", spoof)
    assert untrusted["client"][0] == "127.0.0.1" and untrusted["headers"] == [(b"host", b"studio")]
    # behind the proxy: the right-most address the proxy did not add itself; what the client wrote is further left
    chain = [(b"x-forwarded-for", b"198.51.100.7, 203.0.113.9, 10.0.0.3")]
    behind = scope_seen(["10.0.0.0/24"], "10.0.0.2", chain)
    assert behind["client"][0] == "203.0.113.9" and behind["headers"] == chain
    assert scope_seen(["10.0.0.2"], "10.0.0.2", [(b"x-forwarded-for", b"not-an-address")])["client"][0] == "10.0.0.2"


def login_attempt(port: int, username: str, password: str, forwarded_for: str) -> int:
    """GET the form, then POST it, from this host, with a made-up X-Forwarded-For on both."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/login/", headers={"X-Forwarded-For": forwarded_for})
        response = connection.getresponse()
        page = response.read()
        cookie = next(v for k, v in response.getheaders() if k.lower() == "set-cookie" and v.startswith("csrftoken="))
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
        body = urlencode({"csrfmiddlewaretoken": token, "username": username, "password": password})
        connection.request(
            "POST",
            "/login/",
            body=body,
            headers={
                "X-Forwarded-For": forwarded_for,
                "Cookie": cookie.split(";")[0],
                "Content-Type": "application/x-www-form-urlencoded",
            },
        )
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.subprocess
def test_a_same_host_client_rotating_forwarded_for_is_still_throttled(web_server, annotator):
    port = web_server()
    for i in range(LOGIN_MAX_FAILURES):
        assert login_attempt(port, "ann", "wrong", f"198.51.100.{i}") == 200
    assert login_attempt(port, "ann", TEST_PASSWORD, "198.51.100.99") == 429
