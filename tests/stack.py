"""The production stack on one machine, as docs/deploy.md's no-Docker steps run it, for the full-stack and outage tests.

Caddy (deploy/Caddyfile, TLS from its local CA) in front of uvicorn with 2 processes in production mode, a Celery
worker over a private Redis, S3 on a loopback moto server, PostgreSQL in a database of its own, static files
collected exactly as the Dockerfile collects them. Every service is a child process this module starts, so the
outage tests can kill, stop and restart them; nothing shared (the machine's Redis, another database) is touched.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
import requests
import urllib3

from studio.webserver import uvicorn_command
from tests.conftest import REPO, TEST_PASSWORD
from tests.factories import native_trace_folder
from tests.ports import free_port

urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # Caddy's local CA: this test trusts it
BUCKET = "trace-studio"
STEPS = 3


def wait_until(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (OSError, requests.RequestException):
            pass
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.2)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise AssertionError(f"{what} did not come up within {timeout}s\n{tail}")


def postgres_server_url() -> str | None:
    """The PostgreSQL server of this run (DATABASE_URL) or the local one, if it answers."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        url = "postgres://postgres@127.0.0.1:5432/postgres"
    parts = dj_database_url.parse(url)
    probe = (
        subprocess.run(
            ["pg_isready", "-h", parts["HOST"] or "127.0.0.1", "-p", str(parts["PORT"] or 5432)], capture_output=True
        )
        if shutil.which("pg_isready")
        else None
    )
    return url if probe is not None and probe.returncode == 0 else None


def running_stack(tmp_path_factory, static_root: Path):
    """The body of a module's ``stack`` fixture: start it all, yield it, stop it all (skips what cannot run)."""
    import pytest

    missing = [tool for tool in ("caddy", "redis-server", "psql") if not shutil.which(tool)]
    if missing:
        pytest.skip(f"the full stack needs {', '.join(missing)} (.ci/run installs caddy; Debian packages)")
    server = postgres_server_url()
    if server is None:
        pytest.skip("the full stack needs a PostgreSQL server (DATABASE_URL or 127.0.0.1:5432)")
    stack = Stack(tmp_path_factory.mktemp("fullstack"), static_root, server)
    try:
        yield stack.start()
    finally:
        stack.stop()


class Service:
    """One child process with its log in a file; ``kill`` is a SIGKILL, ``pause``/``resume`` a hang."""

    def __init__(self, name: str, argv: list[str], env: dict, workdir: Path):
        self.name, self.argv, self.env = name, argv, env
        self.log = workdir / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> Service:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def pause(self) -> None:
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if not self.alive():
            return
        os.killpg(self.proc.pid, signal.SIGCONT)
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.kill()


class Stack:
    def __init__(self, workdir: Path, static_root: Path, postgres_url: str, *, web_workers: int = 2):
        self.workdir = workdir
        server = dj_database_url.parse(postgres_url)
        self.db_name = f"{server['NAME'] if server['NAME'] != 'postgres' else 'studio'}_fullstack_{os.getpid()}"
        self.pg = {
            "host": server["HOST"] or "127.0.0.1",
            "port": str(server["PORT"] or 5432),
            "user": server["USER"] or "postgres",
        }
        self.ports = {name: free_port() for name in ("redis", "s3", "web", "http", "https", "s3_public", "caddy_admin")}
        self.base = f"https://127.0.0.1:{self.ports['https']}"
        self.s3_public = f"https://127.0.0.1:{self.ports['s3_public']}"
        self.s3_internal = f"http://127.0.0.1:{self.ports['s3']}"
        base_env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": str(workdir),
            "PYTHONUNBUFFERED": "1",
            "LANG": "C.UTF-8",
        }
        self.env = {
            **base_env,
            "STUDIO_MODE": "production",
            "STUDIO_SECRET_KEY": secrets.token_urlsafe(64),
            "STUDIO_ALLOWED_HOSTS": "127.0.0.1",
            "STUDIO_CSRF_TRUSTED_ORIGINS": self.base,
            "STUDIO_DATA_DIR": str(workdir / "data"),
            "STUDIO_STATIC_ROOT": str(static_root),
            "DATABASE_URL": f"postgres://{self.pg['user']}@{self.pg['host']}:{self.pg['port']}/{self.db_name}",
            "REDIS_URL": f"redis://127.0.0.1:{self.ports['redis']}/0",
            "STUDIO_STORAGE": "s3",
            "STUDIO_S3_ENDPOINT_URL": self.s3_internal,
            "STUDIO_S3_PUBLIC_ENDPOINT_URL": self.s3_public,
            "STUDIO_S3_BUCKET": BUCKET,
            "STUDIO_S3_ACCESS_KEY_ID": "studio",
            "STUDIO_S3_SECRET_ACCESS_KEY": "studio-secret",
            "STUDIO_WEB_THREADS": "4",
            # Shorter than the defaults (10 s, 3 attempts) so that the hung-S3 test's upload ends in seconds.
            "STUDIO_S3_READ_TIMEOUT_S": "3",
            "STUDIO_S3_MAX_ATTEMPTS": "2",
        }
        caddy_env = {
            **base_env,
            "XDG_DATA_HOME": str(workdir / "caddy"),
            "XDG_CONFIG_HOME": str(workdir / "caddy"),
            "STUDIO_SITE_HOST": "127.0.0.1",
            "STUDIO_PROXY_HTTP_PORT": str(self.ports["http"]),
            "STUDIO_PROXY_HTTPS_PORT": str(self.ports["https"]),
            "STUDIO_S3_PUBLIC_PORT": str(self.ports["s3_public"]),
            "STUDIO_WEB_UPSTREAM": f"127.0.0.1:{self.ports['web']}",
            "STUDIO_S3_UPSTREAM": f"127.0.0.1:{self.ports['s3']}",
            "STUDIO_PROXY_STATIC_ROOT": str(static_root),
            # An admin address of its own: Caddy's default (localhost:2019) is taken by any other Caddy on the host.
            "STUDIO_PROXY_ADMIN": f"127.0.0.1:{self.ports['caddy_admin']}",
        }
        py = sys.executable
        self.redis = Service(
            "redis",
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.ports["redis"]),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--dir",
                str(workdir),
            ],
            base_env,
            workdir,
        )
        self.s3 = Service(
            "s3", [py, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.ports["s3"])], base_env, workdir
        )
        # The one uvicorn command line (studio/webserver.py); the proxy on loopback is the one trusted address.
        self.env["STUDIO_TRUSTED_PROXIES"] = "127.0.0.1"
        self.web = Service(
            "web", uvicorn_command("127.0.0.1", self.ports["web"], workers=web_workers), self.env, workdir
        )
        self.worker = Service(
            "worker",
            [
                py,
                "-m",
                "celery",
                "-A",
                "studio",
                "worker",
                "-Q",
                "default",
                "--concurrency",
                "1",
                "--prefetch-multiplier",
                "1",
                "-n",
                "fullstack@%h",
                "--loglevel",
                "INFO",
            ],
            self.env,
            workdir,
        )
        self.proxy = Service(
            "proxy",
            ["caddy", "run", "--config", str(REPO / "deploy" / "Caddyfile"), "--adapter", "caddyfile"],
            caddy_env,
            workdir,
        )
        self.services = [self.redis, self.s3, self.proxy, self.web, self.worker]

    # --- life cycle ------------------------------------------------------------------------------

    def psql(self, sql: str, database: str = "postgres") -> str:
        return subprocess.run(
            ["psql", "-h", self.pg["host"], "-p", self.pg["port"], "-U", self.pg["user"], "-d", database, "-qAtc", sql],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def manage(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def start(self) -> Stack:
        self.psql(f'drop database if exists "{self.db_name}"')
        self.psql(f'create database "{self.db_name}"')
        self.redis.start()
        self.s3.start()
        self.proxy.start()
        migrate = self.manage("migrate", "--noinput")
        wait_until(
            lambda: requests.put(f"{self.s3_internal}/{BUCKET}", timeout=2).status_code == 200,
            30,
            "S3",
            self.s3.proc,
            self.s3.log,
        )
        out, _ = migrate.communicate(timeout=300)
        assert migrate.returncode == 0, out[-3000:]
        people = [
            self.manage(
                "create_user",
                name,
                "--role",
                role,
                "--password-from-env",
                "FIRST_PASSWORD",
                env={"FIRST_PASSWORD": TEST_PASSWORD},
            )
            for name, role in (
                ("lead", "lead"),
                ("annotator", "annotator"),
                ("checker", "annotator"),  # a second annotator: one answers the other's gold trace
                ("engineer", "engineer"),
            )
        ]
        self.web.start()
        self.worker.start()
        for proc in people:
            out, _ = proc.communicate(timeout=120)
            assert proc.returncode == 0, out[-2000:]
        project = self.manage(
            "create_project",
            "Full stack",
            *(arg for name in ("lead", "annotator", "checker", "engineer") for arg in ("--member", name)),
        )
        out, _ = project.communicate(timeout=120)
        assert project.returncode == 0, out[-2000:]
        self.project_id = int(out.split("(id ")[1].split(")")[0])
        self.wait_web()
        wait_until(
            lambda: "ready." in self.worker.log.read_text(), 60, "celery worker", self.worker.proc, self.worker.log
        )
        return self

    def wait_web(self, timeout: float = 60) -> None:
        wait_until(
            lambda: requests.get(f"{self.base}/login/", verify=False, timeout=5).status_code == 200,
            timeout,
            "the studio through the proxy",
            self.web.proc,
            self.web.log,
        )

    def stop(self) -> None:
        for service in reversed(self.services):
            service.stop()
        try:
            self.psql(f"select pg_terminate_backend(pid) from pg_stat_activity where datname = '{self.db_name}'")
            self.psql(f'drop database if exists "{self.db_name}"')
        except subprocess.CalledProcessError:
            pass

    # --- clients -----------------------------------------------------------------------------------

    def login(self, username: str) -> Browserless:
        return Browserless(self, username)

    def import_traces(self, client: Browserless, count: int, prefix: str) -> dict:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for n in range(count):
                folder = native_trace_folder(
                    self.workdir / "traces" / f"{prefix}{n}", external_id=f"{prefix}{n}", steps=STEPS, size=(1280, 800)
                )
                for file in folder.iterdir():
                    archive.write(file, f"{prefix}{n}/{file.name}")
        response = client.post(
            f"/api/projects/{self.project_id}/imports/",
            files={"file": (f"{prefix}.zip", buffer.getvalue(), "application/zip")},
        )
        assert response.status_code in (200, 201, 202), response.text[:500]
        return response.json()

    def wait_job(self, client: Browserless, url: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = client.get(url).json()
            if job["status"] in ("succeeded", "failed", "cancelled"):
                return job
            time.sleep(0.3)
        raise AssertionError(f"job {url} still {job['status']} after {timeout}s: {job}")


class Browserless:
    """A logged-in HTTP client going through the proxy, as a script or the CLI would (CSRF token and Referer)."""

    def __init__(self, stack: Stack, username: str):
        self.stack = stack
        self.session = requests.Session()
        self.session.verify = False
        self.session.trust_env = False
        self.session.get(f"{stack.base}/login/", timeout=10)
        response = self.session.post(
            f"{stack.base}/login/",
            data={
                "username": username,
                "password": TEST_PASSWORD,
                "csrfmiddlewaretoken": self.session.cookies["csrftoken"],
            },
            headers={"Referer": f"{stack.base}/login/"},
            allow_redirects=False,
            timeout=10,
        )
        assert response.status_code == 302, (response.status_code, response.text[:300])

    def _headers(self) -> dict:
        return {
            "X-CSRFToken": self.session.cookies.get("csrftoken", ""),
            "Referer": f"{self.stack.base}/",
            "Accept": "application/json",
        }

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = {**self._headers(), **kwargs.pop("headers", {})}
        return self.session.request(
            method, self.stack.base + path, headers=headers, timeout=kwargs.pop("timeout", 30), **kwargs
        )

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs) -> requests.Response:
        return self.request("PUT", path, **kwargs)


def run_async(coroutine):
    """Run a coroutine on a thread of its own: Playwright's sync API may hold this thread's event loop."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
