"""A login POST hashes its password on the web process's password pool, never on a request thread: a burst of
logins (each a costly hash on purpose, studio/hashers.py) waits there while the autosaves keep the request threads."""

from __future__ import annotations

import asyncio
import threading

from studio.web_entry import HttpEntry


def _serve(entry: HttpEntry, method: str, path: str) -> None:
    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        pass

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"content-length", b"0")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    # On a thread of its own: a test before this one in the process may have left an event loop running here.
    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(entry(scope, receive, send))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            failed.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    runner.join()
    if failed:
        raise failed[0]


def test_login_post_runs_on_the_password_pool_and_the_rest_on_the_request_threads(settings):
    ran_on: list[tuple[str, str, str]] = []

    def app(environ, start_response):
        ran_on.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], threading.current_thread().name))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    entry = HttpEntry(app, threads=2)
    _serve(entry, "POST", "/login/")
    _serve(entry, "GET", "/login/")
    _serve(entry, "PUT", "/api/annotations/1/draft/")
    assert [(m, p) for m, p, _ in ran_on] == [
        ("POST", "/login/"),
        ("GET", "/login/"),
        ("PUT", "/api/annotations/1/draft/"),
    ]
    threads = [name for _, _, name in ran_on]
    assert threads[0].startswith("web-password"), threads
    assert threads[1].startswith("web_") and threads[2].startswith("web_"), threads
    assert entry.password_executor._max_workers == settings.WEB_PASSWORD_THREADS
