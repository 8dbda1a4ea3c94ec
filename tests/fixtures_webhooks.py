"""A webhook receiver on loopback (shared by the webhook tests; the `loopback_hooks` fixture lets deliveries reach it)."""

from __future__ import annotations

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
