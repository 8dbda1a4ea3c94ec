"""HTTP between uvicorn and Django's WSGI handler: a request thread is taken only for the view itself.

The event loop reads the whole request body before a thread is taken, and it writes the response: a client
that trickles its body, or stops reading its download, holds a connection and a little memory, never one of the
``STUDIO_WEB_THREADS`` request threads (eight such clients used to hang every request).
Before a byte of the body is read, the request is refused when its Content-Length passes its route's cap, and a
POST to an upload route is refused unless the sender may import (else an anonymous POST /login/ could
write gigabytes to disk). A chunked body is cut off as soon as it passes the cap.

- Body caps: the upload routes (``UPLOAD_ROUTES``) take ``IMPORT_MAX_UPLOAD_BYTES`` plus the multipart framing;
  every other route ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (Django refuses more than that in a form or JSON body anyway).
- Body deadline: ``REQUEST_BODY_DEADLINE_S`` plus one second per ``REQUEST_BODY_MIN_RATE`` bytes of the body, so
  an honest slow upload gets time in proportion to its size and a trickle gets 408. Bodies over
  ``BODY_IN_MEMORY_BYTES`` wait in a temporary file, handed to Django as ``wsgi.input``.
- Responses: the view's thread queues the answer (up to ``RESPONSE_BUFFER_BYTES`` not yet taken by the
  client) and goes back to the pool; a file response (Django's ``FileResponse``, a bundle download) is read in
  ``block_size`` pieces on a reader thread and sent from the loop, so a stalled reader holds no thread at all.
  A client that takes nothing for ``RESPONSE_SEND_TIMEOUT_S`` is disconnected.
- Password checks: a POST to a route that hashes a password (``PASSWORD_ROUTES``: the login form) runs on its own
  pool of ``STUDIO_WEB_PASSWORD_THREADS`` threads (a password check is the costliest CPU work of any request, and is
  made costly on purpose: studio/hashers.py), so a burst of logins queues there and never takes the request threads that serve the autosaves.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import io
import json
import logging
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import IO, TYPE_CHECKING, Any

from a2wsgi.wsgi import build_environ
from django.conf import settings
from django.urls import Resolver404, ResolverMatch, resolve
from django.utils import translation
from django.utils.translation import gettext

if TYPE_CHECKING:
    from wsgiref.types import WSGIApplication

    from _typeshed import OptExcInfo

    from studio.middleware import Message, Receive, Scope, Send

log = logging.getLogger(__name__)

# URL names whose POST carries an upload (a trace archive), with the permission action it needs.
UPLOAD_ROUTES = {
    "api-import-create": "trace.import",
    "import-upload": "trace.import",
    "api-trace-list": "trace.import",
    "api-trace-step-push": "trace.import",
    "api-trace-end": "trace.import",
}
MULTIPART_FRAMING_BYTES = 64 * 1024
BODY_IN_MEMORY_BYTES = 1024 * 1024
RESPONSE_BUFFER_BYTES = 4 * 1024 * 1024


class ClientTooSlow(Exception):
    """The client took none of the response for RESPONSE_SEND_TIMEOUT_S."""


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return int(value)  # ValueError for garbage: the caller answers 400
    return None


def _route(scope: Scope) -> ResolverMatch | None:
    try:
        return resolve(scope["path"])
    except Resolver404:
        return None


# Routes whose POST hashes a password: served on the password pool (HttpEntry.password_executor).
PASSWORD_ROUTES = frozenset({"login"})


def body_cap(route_name: str | None, method: str) -> int:
    if route_name in UPLOAD_ROUTES and method == "POST":
        return settings.IMPORT_MAX_UPLOAD_BYTES + MULTIPART_FRAMING_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def upload_refusal(environ: dict, action: str, project_id: int | None) -> tuple[int, str] | None:
    """Why this sender may not upload here (status, message), from its session cookie or API token alone; None
    when it may. Runs before the body is read, so the view's own checks still run afterwards. The message is in the
    request's language, chosen as the locale middleware would (the session's choice, else the browser's)."""
    from importlib import import_module

    from django.contrib.auth import get_user
    from django.contrib.auth.models import AnonymousUser
    from django.core.handlers.wsgi import WSGIRequest
    from django.db import close_old_connections
    from rest_framework.exceptions import AuthenticationFailed

    from studio.access import can, projects_scoped, refusal
    from studio.i18n import request_language_activate
    from studio.security import ApiTokenAuthentication

    request = WSGIRequest({**environ, "wsgi.input": io.BytesIO(), "CONTENT_LENGTH": "0"})
    engine = import_module(settings.SESSION_ENGINE)
    request.session = engine.SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
    try:
        request_language_activate(request)
        try:
            # DRF's authentication reads the headers only, which a plain Django request carries too.
            found = ApiTokenAuthentication().authenticate(request)  # type: ignore[arg-type]
        except AuthenticationFailed as exc:
            return 401, str(exc.detail)
        user = found[0] if found else get_user(request)
        if isinstance(user, AnonymousUser) or not user.is_authenticated:
            return 401, gettext("Not logged in (or the session expired): log in again before uploading.")
        if not can(user, action):
            return 403, refusal(action)
        if project_id is not None and not projects_scoped(user, action).filter(pk=project_id).exists():
            return 404, gettext("No such project among yours.")
        return None
    finally:
        translation.deactivate()
        close_old_connections()


async def _answer(send: Send, status: int, detail: str, *, close: bool = True) -> None:
    from studio.errors import STATUS_BY_KIND

    # The kind of the refusal (studio.errors), as every other surface sends it: a page reads the kind, not the words.
    kind = next((k.value for k, answered in STATUS_BY_KIND.items() if answered == status), None)
    body = json.dumps({"detail": detail, **({"kind": kind} if kind else {})}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # the body was not read: this connection cannot carry another request
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class FileToStream:
    """``wsgi.file_wrapper``: Django hands a FileResponse's file here instead of iterating it in the thread."""

    def __init__(self, filelike: IO[bytes], block_size: int = 64 * 1024) -> None:
        self.filelike = filelike
        self.block_size = max(64 * 1024, block_size or 0)

    def __iter__(
        self,
    ) -> Iterator[bytes]:  # only for a WSGI server that ignores file wrappers; ours streams it from the loop
        while chunk := self.filelike.read(self.block_size):
            yield chunk

    def close(self) -> None:
        getattr(self.filelike, "close", lambda: None)()


class HttpEntry:
    """The ASGI ``http`` application: limits and body reading here, the view on a pooled thread (Django WSGI)."""

    def __init__(self, wsgi_app: WSGIApplication, *, threads: int) -> None:
        self.wsgi_app = wsgi_app
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="web")
        # File reads of downloads: short and never waiting on a client, apart from the request threads.
        self.readers = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="web-file")
        self.password_executor = ThreadPoolExecutor(
            max_workers=settings.WEB_PASSWORD_THREADS, thread_name_prefix="web-password"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            raise ValueError(f"HttpEntry serves http only, not {scope['type']}")
        loop = asyncio.get_running_loop()
        from studio.i18n import header_language  # the accounts' models: loaded once the apps are

        # Refusals made here come before Django reads the session: they speak the browser's Accept-Language.
        language = header_language(scope)
        try:
            declared = _declared_length(scope)
        except ValueError:
            with translation.override(language):
                return await _answer(send, 400, gettext("The Content-Length header is not a number."))
        # Only a POST can be an upload or a password check; any other method has the one default body cap.
        match = _route(scope) if scope["method"] == "POST" else None
        route_name = match.url_name if match else None
        cap = body_cap(route_name, scope["method"])
        if declared is not None and declared > cap:
            with translation.override(language):
                words = gettext("The request body is too large (%(size)s bytes; the limit here is %(cap)s bytes).")
            return await _answer(send, 413, words % {"size": declared, "cap": cap})
        # The body is read here, below; a2wsgi's environ gets a file in its place. A plain dict: the studio adds the
        # keys Django reads (wsgi.file_wrapper) that a2wsgi's type leaves out.
        environ: dict[str, Any] = dict(build_environ(scope, io.BytesIO()))  # type: ignore[arg-type]
        if match is not None and route_name in UPLOAD_ROUTES and scope["method"] == "POST":
            check = functools.partial(
                upload_refusal, environ, UPLOAD_ROUTES[route_name], match.kwargs.get("project_id")
            )
            refusal = await loop.run_in_executor(self.executor, contextvars.copy_context().run, check)
            if refusal:
                return await _answer(send, *refusal)
        body = await self._read_body(receive, send, declared, cap, language)
        if body is None:
            return  # answered (408/413) or the client left
        size = body.seek(0, io.SEEK_END)
        body.seek(0)
        environ["wsgi.input"] = body
        environ["CONTENT_LENGTH"] = str(size)  # also for a chunked body, which Django would otherwise read as empty
        environ["wsgi.file_wrapper"] = FileToStream
        try:
            executor = (
                self.password_executor if route_name in PASSWORD_ROUTES and scope["method"] == "POST" else self.executor
            )
            await _Response(loop, send, executor, self.readers).run(self.wsgi_app, environ)
        finally:
            body.close()

    async def _read_body(
        self, receive: Receive, send: Send, declared: int | None, cap: int, language: str
    ) -> tempfile.SpooledTemporaryFile[bytes] | None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        rate = settings.REQUEST_BODY_MIN_RATE
        body = tempfile.SpooledTemporaryFile(max_size=BODY_IN_MEMORY_BYTES, dir=settings.FILE_UPLOAD_TEMP_DIR)  # noqa: SIM115 (handed to Django, closed by the caller)
        received = 0
        try:
            while True:
                expected = declared if declared is not None else received
                deadline = started + settings.REQUEST_BODY_DEADLINE_S + expected / rate
                try:
                    async with asyncio.timeout(max(0.0, deadline - loop.time())):
                        message = await receive()
                except TimeoutError:
                    with translation.override(language):
                        words = gettext(
                            "The request body came too slowly: %(size)s bytes in %(seconds)s s. Send it again."
                        )
                    await _answer(send, 408, words % {"size": received, "seconds": f"{loop.time() - started:.0f}"})
                    body.close()
                    return None
                if message["type"] == "http.disconnect":
                    body.close()
                    return None
                chunk = message.get("body", b"")
                received += len(chunk)
                if received > cap:
                    with translation.override(language):
                        words = gettext(
                            "The request body is too large (more than %(cap)s bytes here); reading stopped."
                        )
                    await _answer(send, 413, words % {"cap": cap})
                    body.close()
                    return None
                if chunk:
                    body.write(chunk)
                if not message.get("more_body", False):
                    return body
        except BaseException:
            body.close()
            raise


class _Response:
    """One response. A response whose body is already in memory (Django's ``HttpResponse``: the API's answers, the
    pages) comes back from the view's thread with its result and is sent from the loop in one piece, with no hand-over
    per message. A streaming one is queued by the view's thread message by message, and a file response is streamed
    from the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send: Send, executor: Executor, readers: Executor) -> None:
        self.loop, self.send, self.executor, self.readers = loop, send, executor, readers
        self.queue: asyncio.Queue = asyncio.Queue()
        self.unsent = 0
        self.room = asyncio.Condition()
        self.sender: asyncio.Future | None = None  # started by the first queued message
        self.file: FileToStream | None = None
        self.start: dict | None = None  # the start message, until it is sent or queued
        self.started = False
        self.whole_body: bytes | None = None
        self.failed: BaseException | None = None

    async def run(self, wsgi_app: WSGIApplication, environ: dict[str, Any]) -> None:
        try:
            await self.loop.run_in_executor(
                self.executor, contextvars.copy_context().run, self._wsgi, wsgi_app, environ
            )
            if self.whole_body is not None:
                return await self._send_whole(self.whole_body)
            if self.start is not None:
                await self._queue(self.start)
                self.start = None
            if self.file is not None:
                await self._stream_file()
            if self.sender is None:
                self.sender = asyncio.ensure_future(self._sender())
            self.queue.put_nowait(None)
            await self.sender
        finally:
            if self.sender is not None and not self.sender.done():
                self.sender.cancel()
            if self.file is not None:
                await self.loop.run_in_executor(self.readers, self.file.close)

    async def _send_whole(self, body: bytes) -> None:
        assert self.start is not None, "a body is kept whole only with its start message (_wsgi)"
        try:
            async with asyncio.timeout(settings.RESPONSE_SEND_TIMEOUT_S):
                await self.send(self.start)
                await self.send({"type": "http.response.body", "body": body, "more_body": False})
        except TimeoutError:
            raise ClientTooSlow(f"no byte taken for {settings.RESPONSE_SEND_TIMEOUT_S} s") from None

    # --- the view's thread -------------------------------------------------------------------------

    def _push(self, message: Message) -> None:
        """Queue a message; wait (at most RESPONSE_SEND_TIMEOUT_S) only while the client is behind by more
        than RESPONSE_BUFFER_BYTES."""
        if self.start is not None:  # the start message goes first
            start, self.start = self.start, None
            self._push(start)
        future = asyncio.run_coroutine_threadsafe(self._queue(message), self.loop)
        try:
            future.result(timeout=settings.RESPONSE_SEND_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise ClientTooSlow("the client took none of the response in time") from None

    def _start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None
    ) -> Callable[[bytes], None]:
        if exc_info and self.started:
            raise exc_info[1].with_traceback(exc_info[2])  # type: ignore[union-attr]  # PEP 3333: given, it holds an exception
        self.started = True
        self.start = {
            "type": "http.response.start",
            "status": int(status.split(" ", 1)[0]),
            "headers": [(k.strip().lower().encode("latin1"), v.strip().encode("latin1")) for k, v in headers],
        }
        return lambda chunk: self._push({"type": "http.response.body", "body": chunk, "more_body": True})

    def _wsgi(self, wsgi_app: WSGIApplication, environ: dict[str, Any]) -> None:
        iterable = wsgi_app(environ, self._start_response)
        if isinstance(iterable, FileToStream):
            self.file = iterable  # sent from the loop; closed there too
            return
        try:
            if getattr(iterable, "streaming", True) is False and self.start is not None:
                # Django's HttpResponse: its content is in memory already; the loop sends it in one piece.
                self.whole_body = b"".join(iterable)
                return
            for chunk in iterable:
                if chunk:
                    self._push({"type": "http.response.body", "body": chunk, "more_body": True})
        except ClientTooSlow:
            log.info("response dropped: %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
        finally:
            getattr(iterable, "close", lambda: None)()

    # --- the loop ----------------------------------------------------------------------------------

    async def _queue(self, message: Message) -> None:
        if self.sender is None:
            self.sender = asyncio.ensure_future(self._sender())
        size = len(message.get("body", b""))
        async with self.room:
            await self.room.wait_for(lambda: self.unsent < RESPONSE_BUFFER_BYTES or self.failed is not None)
            if self.failed is not None:
                raise ClientTooSlow(str(self.failed))
            self.unsent += size
        self.queue.put_nowait(message)

    async def _sender(self) -> None:
        while (message := await self.queue.get()) is not None:
            try:
                await asyncio.wait_for(self.send(message), settings.RESPONSE_SEND_TIMEOUT_S)
            except BaseException as exc:  # a timeout, or the client went away: stop sending, tell the thread
                self.failed = exc
                async with self.room:
                    self.room.notify_all()
                if isinstance(exc, asyncio.TimeoutError):
                    raise ClientTooSlow(f"no byte taken for {settings.RESPONSE_SEND_TIMEOUT_S} s") from None
                raise
            async with self.room:
                self.unsent -= len(message.get("body", b""))
                self.room.notify_all()
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stream_file(self) -> None:
        file = self.file
        assert file is not None, "a file response is streamed only once its file is known"
        while self.failed is None:
            chunk = await self.loop.run_in_executor(self.readers, file.filelike.read, file.block_size)
            if not chunk:
                return
            await self._queue({"type": "http.response.body", "body": chunk, "more_body": True})
