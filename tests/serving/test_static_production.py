"""Production serves its pages: static files collected exactly as the Dockerfile does, pages
answer 200 with hashed static names that resolve; without the manifest the studio refuses to start. The pages'
ES modules import each other by hashed name too (studio/staticfiles.py), and the workspace runs on them."""

from __future__ import annotations

import json
import posixpath
import re
import secrets
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import REPO, TEST_PASSWORD, login_by_form
from tests.fixtures_annotation import write_native_trace
from tests.ports import free_port


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


@pytest.mark.subprocess
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


@pytest.mark.subprocess
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


# The entry modules the templates load with <script type="module">.
MODULE_ENTRIES = (
    "js/workspace.js",
    "js/review.js",
    "js/prescore.js",
    "js/live.js",
    "js/dashboard.js",
    "js/round_dashboard.js",
    "js/prescore_start.js",
    "js/job_status.js",
)
_MODULE_SPECIFIER = re.compile(
    r"""\b(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"']+)["']|\bimport\s*["']([^"']+)["']"""
)


def test_module_imports_name_collected_hashed_files(collected_static):
    """Every import of every module the pages load, followed from the collected entry modules, names a hashed file
    of the manifest that was collected: a browser never asks for an unhashed (uncached, possibly stale) module."""
    manifest = json.loads((collected_static / "staticfiles.json").read_text())["paths"]
    hashed = set(manifest.values())
    todo = [manifest[name] for name in MODULE_ENTRIES]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        assert re.search(r"\.[0-9a-f]{12}\.js$", name), name
        for found in _MODULE_SPECIFIER.findall((collected_static / name).read_text(encoding="utf-8")):
            specifier = found[0] or found[1]
            target = posixpath.normpath(posixpath.join(posixpath.dirname(name), specifier))
            assert target in hashed, f"{name} imports {specifier}, which is not a hashed name of the manifest"
            assert (collected_static / target).is_file(), target
            todo.append(target)
    # The walk reached the modules (workspace/*, geometry, api, ...), not just the entries.
    assert {"js/geometry.js", "js/api.js", "js/workspace/overlay.js", "js/zoom.js"} <= {
        source for source, target in manifest.items() if target in seen
    }
    # static/js/package.json (Node's marker for the unit tests) is no file of the site.
    assert not (collected_static / "js" / "package.json").exists()


_SEED = """
import sys
import django

django.setup()
from studio.permissions import Role
from studio.services import user_create
from tests.fixtures_annotation import import_folder
from traces.models import Project
from traces.services import membership_add

annotator = user_create(username="ann", role=Role.ANNOTATOR, password=sys.argv[2])
project = Project.objects.create(name="P", platform="desktop")
membership_add(project=project, user=annotator)
import_folder(project, __import__("pathlib").Path(sys.argv[1]))
"""


@pytest.mark.browser
def test_production_workspace_runs_on_its_hashed_modules(tmp_path, collected_static, browser):
    """The annotator's workspace in production mode (collected static files, WhiteNoise, uvicorn) in Chromium: every
    module loads by its hashed name, the page gets ready, steps and draws the recorded action, with no error."""
    env = production_env(tmp_path, collected_static) | {"STUDIO_ALLOWED_HOSTS": "localhost,127.0.0.1"}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, check=True, capture_output=True
    )
    folder = write_native_trace(tmp_path / "trace", steps=3, size=(1280, 800))
    seeded = subprocess.run(
        [sys.executable, "-c", _SEED, str(folder), TEST_PASSWORD],
        cwd=REPO,
        env=env | {"DJANGO_SETTINGS_MODULE": "studio.settings"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert seeded.returncode == 0, seeded.stderr[-3000:]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "studio.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # localhost: a secure context, so Chromium keeps production's Secure session cookie over plain http.
    base = f"http://localhost:{port}"
    context = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/login/", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.3)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        problems: list[str] = []
        scripts: list[str] = []
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.on("console", lambda message: message.type == "error" and problems.append(f"console: {message.text}"))
        page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status} {r.url}"))
        page.on("request", lambda r: r.resource_type == "script" and scripts.append(r.url))
        login_by_form(page, base, "ann")  # the one browser login that types the form (production hasher)
        page.goto(f"{base}/queue/")
        page.click("[data-next-trace]")
        page.wait_for_url(re.compile(r"/annotations/\d+/$"))
        page.wait_for_selector("#ws[data-ready='1']", timeout=20000)
        page.wait_for_selector("#ws-stage .ws-overlay g.mark.recorded[data-action='click']")
        page.keyboard.press("j")
        assert page.inner_text("#ws-step-label") == "Step 2 of 3"
        modules = {url.split("/static/", 1)[1] for url in scripts if "/static/js/" in url}
        assert {re.sub(r"\.[0-9a-f]{12}\.js$", ".js", m) for m in modules} >= {
            "js/workspace.js",
            "js/workspace/overlay.js",
            "js/geometry.js",
            "js/api.js",
            "js/prescore.js",
        }, modules
        assert all(re.search(r"\.[0-9a-f]{12}\.js$", m) for m in modules), modules
        assert problems == []
    finally:
        if context is not None:
            context.close()
        server.terminate()
        server.wait(20)
