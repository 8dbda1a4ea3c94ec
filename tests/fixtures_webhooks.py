"""A webhook receiver on loopback (shared by the webhook tests; the `loopback_hooks` fixture lets deliveries reach it)."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """An HTTP endpoint on 127.0.0.1 that records every request; ``answers`` are the statuses it gives in turn."""

    def __init__(self, answers=(200,), delay_s: float = 0.0):
        self.requests: list[dict] = []
        self.answers = list(answers)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                owner.requests.append({"headers": dict(self.headers), "body": body, "at": time.monotonic()})
                time.sleep(delay_s)
                status = owner.answers.pop(0) if len(owner.answers) > 1 else owner.answers[0]
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"receiver broke")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class Trickler:
    """A receiver that reads the request, then answers ``HTTP/1.1 200 OK`` and a body one byte every ``interval_s``:
    each read gets a byte before any per-read timeout, so only an overall deadline ends the attempt. Counts the
    connections it is holding (``open``) and has taken (``taken``)."""

    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n" + b"x" * 40

    def __init__(self, interval_s: float = 5.0):
        self.interval_s = interval_s
        self.open = 0
        self.taken = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/hook"
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection):
        self.open += 1
        self.taken += 1
        try:
            connection.recv(65536)
            for byte in self.ANSWER:
                connection.sendall(bytes([byte]))
                if self.closed.wait(self.interval_s):
                    return
        except OSError:
            pass  # the studio cut it off
        finally:
            self.open -= 1
            connection.close()

    def close(self):
        self.closed.set()
        self.listener.close()
