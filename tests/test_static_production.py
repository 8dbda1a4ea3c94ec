"""Production serves its pages (issue 20, item 1): static files collected exactly as the Dockerfile does, pages
answer 200 with hashed static names that resolve; without the manifest the studio refuses to start."""

from __future__ import annotations

import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import REPO


def production_env(tmp_path, static_root) -> dict:
    return {
        "PATH": "/usr/bin:/bin",
        "STUDIO_MODE": "production",
        "STUDIO_SECRET_KEY": secrets.token_urlsafe(64),
        "STUDIO_ALLOWED_HOSTS": "127.0.0.1",
        "STUDIO_DATA_DIR": str(tmp_path / "data"),
        "STUDIO_STATIC_ROOT": str(static_root),
        "STUDIO_SSL_REDIRECT": "false",
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_production_pages_and_their_static_files_answer_200(tmp_path, collected_static):
    assert (collected_static / "staticfiles.json").is_file()
    env = production_env(tmp_path, collected_static)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "studio.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                page = urllib.request.urlopen(f"{base}/login/", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.3)
        assert page.status == 200
        html = page.read().decode()
        static = set(re.findall(r'(?:href|src)="(/static/[^"]+)"', html))
        assert any(re.search(r"\.[0-9a-f]{12}\.", url) for url in static), static  # hashed names from the manifest
        for url in static:
            assert urllib.request.urlopen(base + url, timeout=5).status == 200, url
    finally:
        server.terminate()
        server.wait(20)


def test_without_the_manifest_production_refuses_to_start(tmp_path):
    env = production_env(tmp_path, tmp_path / "empty-static")
    check = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert check.returncode != 0 and "studio.E002" in check.stderr and "collectstatic" in check.stderr
    start = subprocess.run(
        [sys.executable, "-c", "import studio.asgi"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert start.returncode != 0 and "no static files manifest" in start.stderr


@pytest.mark.parametrize("name", ["chart.umd.min.js"])
def test_vendored_assets_name_no_missing_source_map(name):
    text = next((REPO / "static" / "vendor").rglob(name)).read_text()
    assert "sourceMappingURL" not in text
