"""Shared fixtures: role users, projects, real traces, a real Celery worker process, a real browser."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from studio.demo import user_create_with_role
from studio.permissions import Role

REPO = Path(__file__).resolve().parent.parent
TEST_PASSWORD = "correct-horse-battery-7"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]


# --- people and projects --------------------------------------------------------------------

@pytest.fixture
def make_user(db):
    def make(username: str, role: Role | None = Role.ANNOTATOR, *, superuser: bool = False):
        if superuser:
            from django.contrib.auth import get_user_model

            return get_user_model().objects.create_superuser(username, f"{username}@example.invalid", TEST_PASSWORD)
        return user_create_with_role(username=username, password=TEST_PASSWORD, role=role)

    return make


@pytest.fixture
def annotator(make_user):
    return make_user("ann", Role.ANNOTATOR)


@pytest.fixture
def lead(make_user):
    return make_user("leader", Role.LEAD)


@pytest.fixture
def engineer(make_user):
    return make_user("eng", Role.ENGINEER)


@pytest.fixture
def admin_user(make_user):
    return make_user("root", superuser=True)


@pytest.fixture
def project(db, annotator, lead, engineer):
    from traces.services import project_create

    return project_create(name="Test project", members=[annotator, lead, engineer])


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    def client_for(user=None):
        client = APIClient(enforce_csrf_checks=True)
        if user is not None:
            client.force_authenticate(user)
        return client

    return client_for


# --- real data ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def realtraces() -> Path:
    path = Path(settings.REALTRACES_DIR)
    if not path.is_dir():
        pytest.skip(f"real traces not found at {path} (set STUDIO_REALTRACES_DIR)")
    return path


# --- a real Celery worker -------------------------------------------------------------------

def _worker_env() -> dict:
    env = os.environ.copy()
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        env["STUDIO_SQLITE_PATH"] = str(db["NAME"])
    else:
        user = db.get("USER") or "postgres"
        env["DATABASE_URL"] = f"postgres://{user}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    env["PYTHONUNBUFFERED"] = "1"
    return env


class WorkerProcess:
    """A `celery worker` child process on the test database; ``kill()`` sends SIGKILL like a crash."""

    def __init__(self, queues: str = "default,gpu"):
        self.queues = queues
        self.proc: subprocess.Popen | None = None
        self.log: list[str] = []

    def start(self, timeout: float = 60) -> "WorkerProcess":
        ready = threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "studio", "worker", "-Q", self.queues, "--pool", "solo",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"test-{uuid.uuid4().hex[:8]}@%h",
             "--loglevel", "INFO"],
            cwd=REPO, env=_worker_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )

        def pump():
            for line in self.proc.stdout:
                self.log.append(line)
                if " ready." in line:
                    ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(timeout):
            self.stop()
            raise RuntimeError("celery worker did not start:\n" + "".join(self.log[-40:]))
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def purge_broker() -> None:
    from studio.celery import app

    with app.connection_for_write() as conn:
        for queue in ("default", "gpu"):
            try:
                conn.default_channel.queue_purge(queue)
            except Exception:  # a queue that was never declared has nothing to purge
                pass


@pytest.fixture
def celery_worker(transactional_db):
    purge_broker()
    worker = WorkerProcess().start()
    yield worker
    worker.stop()


def wait_for(predicate, timeout: float = 60, interval: float = 0.2, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


# --- a real browser -------------------------------------------------------------------------

@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's Chromium is not installed at {CHROMIUM} (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def artifacts_dir() -> Path:
    path = REPO / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


def login(page, base_url: str, username: str, password: str = TEST_PASSWORD) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
