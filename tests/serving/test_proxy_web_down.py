"""The proxy (real Caddy with deploy/Caddyfile) while the web server is down, as during a restart: the API gets the
studio's JSON 503 with Retry-After (what its clients and pages retry on), pages a short page; once the web server
answers again, its answers pass through."""

from __future__ import annotations

import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from tests.conftest import REPO
from tests.ports import free_port
from tests.stack import Service

pytestmark = [
    pytest.mark.subprocess,  # a Caddy process
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),  # Caddy's local CA signs it
]


@pytest.fixture
def proxy(tmp_path):
    """Caddy on loopback in front of an upstream port where nothing listens; yields (base URL, upstream port)."""
    if not shutil.which("caddy"):
        pytest.skip("caddy (Debian package) is not installed; .ci/run installs it")
    ports = {name: free_port() for name in ("web", "http", "https", "s3_public", "admin")}
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "caddy"),
        "XDG_CONFIG_HOME": str(tmp_path / "caddy"),
        "STUDIO_SITE_HOST": "127.0.0.1",
        "STUDIO_PROXY_HTTP_PORT": str(ports["http"]),
        "STUDIO_PROXY_HTTPS_PORT": str(ports["https"]),
        "STUDIO_S3_PUBLIC_PORT": str(ports["s3_public"]),
        "STUDIO_WEB_UPSTREAM": f"127.0.0.1:{ports['web']}",
        "STUDIO_S3_UPSTREAM": f"127.0.0.1:{free_port()}",
        "STUDIO_PROXY_STATIC_ROOT": str(tmp_path),
        "STUDIO_PROXY_ADMIN": f"127.0.0.1:{ports['admin']}",
    }
    caddy = Service(
        "caddy",
        ["caddy", "run", "--config", str(REPO / "deploy" / "Caddyfile"), "--adapter", "caddyfile"],
        env,
        tmp_path,
    ).start()
    base = f"https://127.0.0.1:{ports['https']}"
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(f"{base}/login/", verify=False, timeout=5)
            break
        except requests.ConnectionError:
            if not caddy.alive() or time.monotonic() > deadline:
                raise AssertionError(f"caddy did not start:\n{caddy.log.read_text()[-3000:]}") from None
            time.sleep(0.2)
    yield base, ports["web"]
    caddy.stop()


class _Up(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"up": true}')

    def log_message(self, *args):
        pass


def test_while_the_web_server_is_down_the_proxy_answers_the_studios_503(proxy):
    base, web_port = proxy
    api = requests.get(f"{base}/api/projects/", verify=False, timeout=10)
    assert api.status_code == 503 and api.headers["Retry-After"] == "5", (api.status_code, api.text)
    assert api.headers["Content-Type"].startswith("application/json")
    assert api.json()["retryable"] is True and "try again in a moment" in api.json()["detail"]

    page = requests.get(f"{base}/projects/", verify=False, timeout=10)
    assert page.status_code == 503 and page.headers["Retry-After"] == "5"
    assert page.headers["Content-Type"].startswith("text/html") and "Temporarily unavailable" in page.text

    upstream = ThreadingHTTPServer(("127.0.0.1", web_port), _Up)  # the web server is back
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        # Caddy's active health check (deploy/Caddyfile: health_uri /healthz every 10 s) takes the upstream back
        # at its next pass; until then every answer is still the studio's retryable 503, never an empty one.
        deadline = time.monotonic() + 15
        while True:
            back = requests.get(f"{base}/api/projects/", verify=False, timeout=10)
            if back.status_code != 503 or time.monotonic() > deadline:
                break
            assert back.headers["Retry-After"] == "5" and back.json()["retryable"] is True, back.text
            time.sleep(0.5)
        assert back.status_code == 200 and back.json() == {"up": True} and "Retry-After" not in back.headers
    finally:
        upstream.shutdown()
        upstream.server_close()
