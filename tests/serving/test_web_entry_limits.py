"""What a client can make the web server hold, against real uvicorn started as every
launcher starts it: bodies refused by Content-Length and by role before a byte is read, chunked bodies cut off
at the route's cap, trickled bodies answered 408, and 8 slow senders + 8 stalled downloads leave every request
thread free for everyone else."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from exports.models import ExportJob
from studio.models import JobStatus
from studio.security import api_token_issue

pytestmark = pytest.mark.django_db(transaction=True)


def connect(port: int, *, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(10)
    return sock


def send_head(sock: socket.socket, method: str, path: str, headers: dict) -> None:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())


def read_answer(sock: socket.socket) -> tuple[int, dict]:
    """Status and JSON body of a short answer (the connection is closed after it, or Content-Length says)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(
        next(
            (line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
            b"0",
        )
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, (json.loads(body) if body.startswith(b"{") else {"raw": body.decode("latin1")})


def timed_get(port: int, path: str = "/login/") -> float:
    started = time.monotonic()
    sock = connect(port)
    try:
        send_head(sock, "GET", path, {"Connection": "close"})
        status, _ = read_answer(sock)
        assert status == 200, status
    finally:
        sock.close()
    return time.monotonic() - started


@pytest.mark.subprocess
def test_a_3_gb_login_post_is_refused_before_its_body_is_read(web_server):
    port = web_server()
    sock = connect(port)
    started = time.monotonic()
    send_head(
        sock,
        "POST",
        "/login/",
        {"Content-Length": str(3 * 1024**3), "Content-Type": "application/x-www-form-urlencoded"},
    )
    status, body = read_answer(sock)  # not a byte of the body sent
    assert status == 413 and "too large" in body["detail"] and time.monotonic() - started < 5
    sock.close()


@pytest.mark.subprocess
def test_an_annotator_upload_is_refused_before_its_body_is_read(web_server, project, annotator, lead):
    port = web_server()
    headers = {"Content-Length": str(100 * 1024**2), "Content-Type": "multipart/form-data; boundary=x"}
    for user, expected, kind in ((annotator, 403, "forbidden"), (None, 401, "signed_out")):
        sock = connect(port)
        extra = {"Authorization": f"Token {api_token_issue(user=user)}"} if user else {}
        send_head(sock, "POST", f"/api/projects/{project.pk}/imports/", {**headers, **extra})
        status, body = read_answer(sock)
        # The kind, as every surface sends it: the page tells a lost login by it (static/js/api.js).
        assert status == expected and body["detail"] and body["kind"] == kind, (user, status, body)
        sock.close()
    # the page route too, and an upload body where no upload belongs is refused by its size
    sock = connect(port)
    send_head(sock, "POST", f"/projects/{project.pk}/import/", headers)
    assert read_answer(sock)[0] == 401
    sock.close()
    sock = connect(port)
    send_head(
        sock, "POST", "/api/actions/validate/", {**headers, "Authorization": f"Token {api_token_issue(user=lead)}"}
    )
    status, body = read_answer(sock)
    assert status == 413 and "limit here is" in body["detail"]
    sock.close()


@pytest.mark.subprocess
def test_a_chunked_body_is_cut_off_at_the_cap(web_server, lead):
    port = web_server()
    sock = connect(port)
    send_head(
        sock,
        "POST",
        "/api/actions/validate/",
        {
            "Transfer-Encoding": "chunked",
            "Content-Type": "application/json",
            "Authorization": f"Token {api_token_issue(user=lead)}",
        },
    )
    piece = b"x" * (1024 * 1024)
    sent = 0
    try:
        for _ in range(64):  # 64 MiB offered; the cap here is 5 MiB
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
    except (BrokenPipeError, ConnectionResetError):
        pass
    status, body = read_answer(sock)
    assert status == 413 and "reading stopped" in body["detail"]
    assert sent < 64 * 1024 * 1024, "the server read the whole body"
    sock.close()


@pytest.fixture
def bundle(project, engineer):
    content = os.urandom(48 * 1024 * 1024)  # more than the kernel buffers on both ends hold
    name = default_storage.save("exports/slow-reader-bundle.zip", ContentFile(content))
    job = ExportJob.objects.create(
        project=project,
        format="trl",
        status=JobStatus.SUCCEEDED,
        bundle_name=name,
        bundle_sha256=hashlib.sha256(content).hexdigest(),
        bundle_size=len(content),
    )
    yield f"/api/exports/{job.pk}/bundle", api_token_issue(user=engineer)
    default_storage.delete(name)


@pytest.mark.subprocess
def test_slow_senders_and_stalled_downloads_leave_the_server_answering(web_server, bundle):
    """8 connections trickling a body (1 byte a second) and 8 downloads that stop reading, on a server with
    8 request threads: before, every other request waited (probes timed out at 10 s)."""
    port = web_server(STUDIO_WEB_THREADS="8", STUDIO_REQUEST_BODY_DEADLINE_S="6")
    path, token = bundle
    stop = threading.Event()
    trickle_answers: list[int] = []

    def trickle():
        sock = connect(port)
        sock.settimeout(30)
        send_head(
            sock, "POST", "/login/", {"Content-Length": "1000", "Content-Type": "application/x-www-form-urlencoded"}
        )
        try:
            while not stop.is_set():
                sock.sendall(b"a")
                if stop.wait(1):
                    break
                sock.settimeout(0.01)
                try:
                    if sock.recv(1, socket.MSG_PEEK):  # the server answered
                        break
                except (TimeoutError, BlockingIOError):
                    pass
                finally:
                    sock.settimeout(30)
            trickle_answers.append(read_answer(sock)[0])
        except OSError:
            trickle_answers.append(0)
        finally:
            sock.close()

    stalled = []
    for _ in range(8):
        sock = connect(port, receive_buffer=4096)
        send_head(sock, "GET", path, {"Authorization": f"Token {token}"})
        stalled.append(sock)  # never read
    senders = [threading.Thread(target=trickle) for _ in range(8)]
    for thread in senders:
        thread.start()
    try:
        time.sleep(2)  # every slow client is connected and holding what it can
        probes = [timed_get(port) for _ in range(10)]
        assert max(probes) < 2, probes
        for thread in senders:
            thread.join(30)
        assert trickle_answers == [408] * 8, trickle_answers
        assert max(timed_get(port) for _ in range(3)) < 2
    finally:
        stop.set()
        for sock in stalled:
            sock.close()
