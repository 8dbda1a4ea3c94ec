"""Shared fixtures: role users, projects, real traces, a real Celery worker process, a real browser."""

from __future__ import annotations

import os
import re
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
from tests.ports import free_port
from tests.processes import ReadyLineProcess

REPO = Path(__file__).resolve().parent.parent
TEST_PASSWORD = "correct-horse-battery-7"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# --- LLaMA-Factory's own preprocessing -------------------------------------------------------


@pytest.fixture(scope="session")
def llamafactory_python():
    """The python of the LLaMA-Factory virtualenv (tests/llamafactory_env.py), built on first use."""
    from tests.llamafactory_env import VenvBuildError, ensure_venv

    if os.environ.get("STUDIO_SKIP_LLAMAFACTORY") == "1":
        pytest.skip("STUDIO_SKIP_LLAMAFACTORY=1: LLaMA-Factory's preprocessing of the bundle is not checked")
    try:
        return ensure_venv()
    except VenvBuildError as error:
        problem = str(error)
    pytest.fail(
        f"cannot build LLaMA-Factory's virtualenv (it needs a package index; set STUDIO_SKIP_LLAMAFACTORY=1 to "
        f"skip this check on purpose):\n{problem}",
        pytrace=False,
    )


# --- the test databases ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request, django_db_modify_db_settings_parallel_suffix):
    """pytest-django's hook before it makes the test databases: copy them from a migrated template
    (tests/database_template.py) instead of migrating each."""
    if not request.config.getoption("nomigrations", default=False):
        from tests.database_template import test_databases_from_template

        test_databases_from_template()


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
def role_groups(transactional_db):
    """A transactional test's flush also removes the role groups the data migration made; bring them back."""
    from django.contrib.auth.models import Group

    from studio.permissions import GROUP_ROLES

    for role in GROUP_ROLES:
        Group.objects.get_or_create(name=role.value)


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


class WorkerProcess(ReadyLineProcess):
    """A `celery worker` child process on the test database; ``kill()`` sends SIGKILL like a crash. ``env``: extra
    environment variables (the worker's settings, e.g. ``STUDIO_PRESCORE_STATIC_DECODE``). ``command``: a whole
    worker command line instead of the solo pool on ``queues`` (runstudio's, to test what it starts)."""

    stop_wait_s = 20

    def __init__(self, queues: str = "default,gpu,webhooks", env: dict | None = None, command: list | None = None):
        super().__init__()
        self.queues = queues
        self.env = env or {}
        self.command = command

    def start(self, timeout: float = 60) -> WorkerProcess:
        self.launch(
            self.command
            or [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "studio",
                "worker",
                "-Q",
                self.queues,
                "--pool",
                "solo",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"test-{uuid.uuid4().hex[:8]}@%h",
                "--loglevel",
                "INFO",
            ],
            ready_text=" ready.",
            what="celery worker",
            timeout=timeout,
            cwd=REPO,
            env={**_worker_env(), **self.env},
        )
        return self


def worker_settings(env: dict) -> dict:
    """What a worker takes from its environment at start: the studio's settings (``STUDIO_*``), its database and its
    broker. A worker started on other values would run another test's configuration."""
    return {k: v for k, v in env.items() if k.startswith("STUDIO_") or k in ("DATABASE_URL", "REDIS_URL")}


def purge_broker() -> None:
    from studio.celery import app

    with app.connection_for_write() as conn:
        for queue in ("default", "gpu", "webhooks"):
            try:
                conn.default_channel.queue_purge(queue)
            except Exception:  # a queue that was never declared has nothing to purge
                pass


class _SharedWorker:
    """The one Celery worker of this test process that ``celery_worker`` lends to consecutive tests (a worker's start
    is seconds of CPU). It is stopped before any test that does not ask for it, so no other test's queued message
    is ever run by it, and it is lent again only once it has finished every task it took and while the environment it
    was started with is the test's (a test's ``monkeypatch.setenv`` of a setting starts a worker that reads it); else
    the next test gets a fresh one."""

    TASK_LINE = re.compile(r"Task [\w.]+\[([0-9a-f-]+)\] (received|succeeded|raised|failed|ignored|rejected)")

    def __init__(self) -> None:
        self.worker: WorkerProcess | None = None
        self.settings: dict = {}

    def running(self) -> bool:
        return self.worker is not None and self.worker.proc is not None and self.worker.proc.poll() is None

    def idle(self) -> bool:
        received, ended = set(), set()
        for line in list(self.worker.log if self.worker else []):
            match = self.TASK_LINE.search(line)
            if match:
                (received if match.group(2) == "received" else ended).add(match.group(1))
        return received <= ended

    def lend(self) -> WorkerProcess:
        wanted = worker_settings(_worker_env())
        if self.running() and self.settings != wanted:
            self.stop()
        if not self.running():
            self.worker = WorkerProcess().start()
            self.settings = wanted
        return self.worker

    def settle(self, timeout: float = 3) -> None:
        """After a test: wait a moment for the worker's last task, then stop a worker still busy. Its warm shutdown
        lets a running task end all the same; a task it holds for later (a retry's countdown: a webhook to a closed
        port) goes back to the broker, which the next test empties, instead of holding the test up."""
        deadline = time.monotonic() + timeout
        while self.running() and not self.idle():
            if time.monotonic() > deadline:
                self.stop()
                return
            time.sleep(0.1)

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        self.worker = None


class _WorkerLease:
    """What a test sees of the shared worker: its log since the test began."""

    def __init__(self, worker: WorkerProcess) -> None:
        self.worker, self.start = worker, len(worker.log)

    @property
    def log(self) -> list[str]:
        return self.worker.log[self.start :]

    def settle(self) -> None:
        """Let the worker's task under way end (``_SharedWorker.settle``), e.g. before a receiver it calls goes away."""
        _shared_worker.settle()


_shared_worker = _SharedWorker()


@pytest.fixture(autouse=True)
def _shared_worker_only_for_its_tests(request):
    """Stops the shared worker before a test that does not ask for ``celery_worker``: a worker must never run what
    another test queued on purpose, and tests that kill workers start their own (``WorkerProcess``)."""
    if "celery_worker" not in request.fixturenames:
        _shared_worker.stop()
    yield


@pytest.fixture(scope="session")
def _shared_worker_stopped_at_the_end():
    yield
    _shared_worker.stop()


@pytest.fixture
def celery_worker(transactional_db, _shared_worker_stopped_at_the_end):
    """A real Celery worker on the test database, shared by consecutive tests that only need one (_SharedWorker);
    the broker's queues are emptied before each test and the worker's last task ends before the database flush.
    Settings a test puts in the environment (``monkeypatch.setenv``, ``loopback_hooks``) reach the worker when they are
    set before it: name those fixtures first. A test that must queue work while no worker runs asks for this one
    later, with ``request.getfixturevalue("celery_worker")``: the shared worker is stopped before such a test starts."""
    purge_broker()
    lease = _WorkerLease(_shared_worker.lend())
    yield lease
    _shared_worker.settle()


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


class _RequestCounter:
    """Requests the live server is handling now, and when the last one ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.last_end = time.monotonic()

    def request_started(self) -> None:
        with self.lock:
            self.in_flight += 1

    def request_ended(self) -> None:
        with self.lock:
            self.in_flight -= 1
            self.last_end = time.monotonic()

    def quiet_for(self, seconds: float) -> bool:
        with self.lock:
            return self.in_flight == 0 and time.monotonic() - self.last_end >= seconds


class _CountedResponse:
    """A WSGI response that tells the counter when the server has sent it (the server always calls ``close()``)."""

    def __init__(self, result, counter: _RequestCounter) -> None:
        self.result = result
        self.counter = counter

    def __iter__(self):
        return iter(self.result)

    def close(self) -> None:
        try:
            if hasattr(self.result, "close"):
                self.result.close()
        finally:
            self.counter.request_ended()


def _counting_server_class(counter: _RequestCounter):
    """The live server's class, counting requests, not connections: a browser keeps its connections open between
    requests (HTTP/1.1 keep-alive), so a connection count would never fall to zero while the browser is alive."""
    from django.core.servers.basehttp import ThreadedWSGIServer

    class CountingWSGIServer(ThreadedWSGIServer):
        def set_app(self, application):
            def counting_app(environ, start_response):
                counter.request_started()
                try:
                    return _CountedResponse(application(environ, start_response), counter)
                except BaseException:
                    counter.request_ended()
                    raise

            super().set_app(counting_app)

    return CountingWSGIServer


@pytest.fixture(scope="session")
def live_server(request):
    """pytest-django's live server, counting the requests it is handling (see ``_browser_closed_and_live_server_drained``)."""
    from pytest_django.live_server_helper import LiveServer

    addr = request.config.getvalue("liveserver") or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS") or "localhost"
    server = LiveServer(addr, start=False)
    server.request_counter = _RequestCounter()
    server.thread.server_class = _counting_server_class(server.request_counter)
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _browser_closed_and_live_server_drained(request):
    """After a browser test, its pages are closed: a page left open keeps its live socket reconnecting and its polls
    running against the live server for the rest of the session, CPU taken from every later test and requests
    arriving during tests that have no database. Then, as a browser test ends with requests still arriving (a
    closing page's lease-release beacon, a last draft save) and the live server outlives the test, one of them could
    meet the next flush of the test database half-way: wait until the server has been idle a moment first.

    ``transactional_db`` is requested first so that this teardown runs before the flush."""
    uses_server = "live_server" in request.fixturenames
    if uses_server:
        request.getfixturevalue("transactional_db")
    server = request.getfixturevalue("live_server") if uses_server else None
    browser = request.getfixturevalue("browser") if "browser" in request.fixturenames else None
    yield
    if browser is not None:
        for context in list(browser.contexts):
            context.close()
    if server is None:
        return
    deadline = time.monotonic() + 15
    while not server.request_counter.quiet_for(0.3) and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def artifacts_dir() -> Path:
    path = REPO / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path


def login(page, base_url: str, username: str) -> None:
    """Log ``page``'s browser in as ``username`` by its session cookie (Django's ``force_login`` on the test
    database), then open the page a login lands on. ``login_by_form`` types the form, as a person does."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": base_url}])
    page.goto(f"{base_url}/")
    page.wait_for_url(lambda url: "/login/" not in url)


def login_by_form(page, base_url: str, username: str, password: str = TEST_PASSWORD) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


# --- production static files ------------------------------------------------------------------


def dockerfile_collectstatic_env() -> dict:
    """The environment the Dockerfile's collectstatic step runs with (read from the Dockerfile itself)."""
    import re
    import shlex

    line = next(line for line in (REPO / "Dockerfile").read_text().splitlines() if "collectstatic" in line)
    words = shlex.split(line.removeprefix("RUN "))
    return dict(re.match(r"(\w+)=(.*)", word).groups() for word in words if re.match(r"\w+=", word))


@pytest.fixture(scope="session")
def collected_static(tmp_path_factory, worker_id) -> Path:
    """Static files collected exactly as the Dockerfile collects them (production mode, with the manifest), once per
    run: the test processes of a parallel run share the run's temporary folder (pytest-xdist puts each process's
    folder in it), and the first process to ask collects while the others wait on the lock. The tests only read it."""
    import fcntl
    import shutil

    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    root = shared / "staticfiles-collected"
    with open(shared / "staticfiles-collected.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "staticfiles.json").is_file():
            partial = shared / "staticfiles-collecting"
            shutil.rmtree(partial, ignore_errors=True)
            env = {"PATH": "/usr/bin:/bin", **dockerfile_collectstatic_env(), "STUDIO_STATIC_ROOT": str(partial)}
            result = subprocess.run(
                [sys.executable, "manage.py", "collectstatic", "--noinput"],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 0, result.stdout + result.stderr
            partial.rename(root)
    return root


# --- the web server as every launcher starts it ----------------------------------------------------


@pytest.fixture
def web_server(transactional_db):
    """``start(**env)`` → the port of uvicorn started by ``studio.webserver.uvicorn_command`` (the flags every
    launcher uses) on the test database, with extra environment variables; stopped after the test."""
    import socket

    from django.db import connections

    from studio.webserver import uvicorn_command

    started = []

    def start(**extra_env) -> int:
        port = free_port()
        proc = subprocess.Popen(
            uvicorn_command("127.0.0.1", port),
            cwd=REPO,
            env={**_worker_env(), **extra_env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        started.append(proc)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the web server did not start") from None
                time.sleep(0.2)

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    connections.close_all()


# --- webhooks to a receiver on loopback (tests/fixtures_webhooks.Receiver) ---------------------------------


@pytest.fixture
def loopback_hooks(settings, monkeypatch):
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["127.0.0.1"]
    monkeypatch.setenv("STUDIO_WEBHOOKS_ALLOW_HTTP_HOSTS", "127.0.0.1")
    monkeypatch.setenv("STUDIO_WEBHOOKS_RETRY_BASE_S", "0.5")
