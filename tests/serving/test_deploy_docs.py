"""docs/deploy.md's host-without-Docker block, run as written (a `migrate` before `collectstatic` and
failed with studio.E002, no static manifest). Each line of the block in its order: the install and the exports are
the test's environment (SQLite and local files in a temporary folder, the filesystem broker), the one-shot commands
run as they are, the long-running ones are started and must come up (the web server answers a page with its hashed
static files, each worker says it is ready under its own node name); Caddy is checked where it is installed."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import REPO
from tests.ports import free_port


def documented_block() -> list[str]:
    text = (REPO / "docs" / "deploy.md").read_text()
    section = text[text.index("## On a host without Docker") :]
    block = section[section.index("```sh\n") + len("```sh\n") : section.index("```\n", section.index("```sh\n") + 6)]
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split("   #")[0].strip()
        if line:
            commands.append(re.sub(r"\s+", " ", line))
    return commands


def test_the_block_orders_collectstatic_before_migrate_and_names_each_worker():
    commands = documented_block()
    order = [c for c in commands if "manage.py" in c]
    assert "collectstatic" in order[0] and "migrate" in order[1], order
    # pip installs no manage.py: the block goes into the checkout (and the virtualenv) before the first command.
    before = commands[: commands.index(order[0])]
    assert "cd /path/to/trace-studio" in before and ". /opt/studio/venv/bin/activate" in before, before
    settings = " ".join(c for c in commands if c.startswith("export "))
    assert "STUDIO_DATA_DIR=" in settings, settings
    workers = [c for c in commands if c.startswith("celery ") or " celery " in c]
    names = [shlex.split(c)[shlex.split(c).index("-n") + 1] for c in workers]
    assert len(workers) == 3 and all(n.endswith("@%h") for n in names) and len(set(names)) == 3, workers
    assert {shlex.split(c)[shlex.split(c).index("-Q") + 1] for c in workers} == {"default", "webhooks", "gpu"}


def _split(command: str) -> tuple[dict, list[str]]:
    words = shlex.split(command)
    env = {}
    while words and re.match(r"^[A-Z0-9_]+=", words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return env, words


@pytest.mark.worker
def test_the_documented_block_runs_in_order_as_written(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STUDIO_", "DATABASE_URL", "REDIS_URL"))}
    env.update(
        STUDIO_MODE="production",
        STUDIO_SECRET_KEY="deploy-docs-test-" + "k" * 50,
        STUDIO_ALLOWED_HOSTS="127.0.0.1",
        STUDIO_CSRF_TRUSTED_ORIGINS="https://127.0.0.1",
        STUDIO_DATA_DIR=str(tmp_path / "data"),
        STUDIO_STORAGE="local",
        STUDIO_STATIC_ROOT=str(tmp_path / "static"),
        PYTHONUNBUFFERED="1",
    )
    running: list[tuple[str, subprocess.Popen, object]] = []
    try:
        for command in documented_block():
            extra, words = _split(command)
            if words[0].startswith("python3") and "venv" in words:
                continue  # the install: this checkout's virtualenv
            if words[0] == "export":
                continue  # the site's settings: the test's above
            if words[0] in (".", "cd"):
                continue  # the virtualenv and the checkout: the test runs this checkout's, in it
            if words[0] == "python":
                result = subprocess.run(
                    [sys.executable, *words[1:]],
                    cwd=REPO,
                    env={**env, **extra},
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
                continue
            if words[0] == "caddy":
                if not shutil.which("caddy"):
                    continue
                validate = ["caddy", "validate", "--config", str(REPO / "deploy/Caddyfile"), "--adapter", "caddyfile"]
                result = subprocess.run(validate, env={**env, **extra}, capture_output=True, text=True, timeout=60)
                assert result.returncode == 0, result.stderr[-2000:]
                continue
            if words[0] == "uvicorn":
                words = [w if w != "8000" else str(port) for w in words]
                words[words.index("--workers") + 1] = "1"
                words = [sys.executable, "-m", *words]
            elif words[0] == "celery":
                words = [sys.executable, "-m", *words]
            elif words[0].startswith("CUDA_VISIBLE_DEVICES"):
                continue
            else:
                pytest.fail(f"a line the test does not know how to run: {command}")
            log = tmp_path / f"{len(running)}.log"
            with open(log, "w") as out:
                process = subprocess.Popen(words, cwd=REPO, env={**env, **extra}, stdout=out, stderr=subprocess.STDOUT)
            running.append((command, process, log))

        def page() -> str | None:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/login/", headers={"X-Forwarded-Proto": "https"})
            try:
                return urllib.request.urlopen(request, timeout=3).read().decode()
            except OSError:
                return None

        def node(command: str) -> str:
            words = shlex.split(command)
            return words[words.index("-n") + 1].split("@")[0] + "@"

        def up() -> bool:  # the documented lines log at WARNING: a worker is up once its banner names it
            workers = [(c, log) for c, _, log in running if "celery" in c]
            return bool(page()) and all(
                node(c) in log.read_text() and "[queues]" in log.read_text() for c, log in workers
            )

        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not up():
            for command, process, log in running:
                assert process.poll() is None, f"{command} exited:\n{log.read_text()[-3000:]}"
            time.sleep(1)
        assert up(), "\n".join(log.read_text()[-1500:] for _, _, log in running)
        time.sleep(3)
        for command, process, log in running:
            assert process.poll() is None, f"{command} exited:\n{log.read_text()[-3000:]}"
        html = page()
        assert html and re.search(r"/static/[\w/.-]+\.[0-9a-f]{12}\.(css|js)", html), (
            "no hashed static file on the page"
        )
    finally:
        for _, process, _ in running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _, process, _ in running:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
