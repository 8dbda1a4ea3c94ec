"""What `pip install .` ships is a studio that starts: the wheel built from the checkout, installed (not editable) into
a fresh virtualenv, runs from a folder outside the checkout: migrate, runstudio's web server answers its health check,
the login page and a static file, and its worker answers a ping. The wheel carries every page file (templates,
static files) beside the packages, where the settings look for them in a checkout.

The fresh virtualenv takes its dependencies from this one's site-packages (a path file), so nothing is downloaded;
that folder's own path files are not read, so this checkout's editable install does not reach the fresh one."""

from __future__ import annotations

import os
import shutil
import signal
import site
import subprocess
import sys
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, wait_for
from tests.ports import free_port

pytestmark = pytest.mark.subprocess

# Not sources of the wheel: the virtualenv, what runs and builds write, the repository's history.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv*", "var", "staticfiles", "test-artifacts", "build", "*.egg-info", "__pycache__", "node_modules"
)


def tracked_files(folder: str) -> set[str]:
    listing = subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True, check=True)
    return set(listing.stdout.split())


def wheel_build(into: Path) -> Path:
    """The wheel of a copy of the checkout (a build writes its egg-info and build folder into the source)."""
    source = into / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCES)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(into),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = into.glob("trace_studio-*.whl")
    return wheel


def venv_with_this_ones_dependencies(folder: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dependencies = [path for path in site.getsitepackages() if Path(path).is_dir()]
    (Path(purelib) / "trace_studio_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    return python


def studio_environment(data: Path) -> dict[str, str]:
    """Only what a person's shell would carry: the test run's settings, database and broker are not the installed
    studio's (demo mode: SQLite and the filesystem broker under its data folder)."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        DJANGO_SETTINGS_MODULE="studio.settings",
        STUDIO_MODE="demo",
        STUDIO_DATA_DIR=str(data),
        STUDIO_STATIC_ROOT=str(data / "staticfiles"),
        PYTHONUNBUFFERED="1",
    )
    return env


def answer(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except OSError:
        return 0


def test_the_installed_wheel_starts_a_studio_and_its_worker(tmp_path):
    wheel = wheel_build(tmp_path / "wheel")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    page_files = tracked_files("frontend_templates") | tracked_files("static")
    assert len(page_files) > 50, page_files
    assert sorted(page_files - shipped) == []

    python = venv_with_this_ones_dependencies(tmp_path / "venv")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = studio_environment(tmp_path / "data")

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(python), *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=timeout
        )

    where = run("-c", "import studio, insights; print(studio.__file__); print(insights.__file__)")
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(tmp_path / "venv")) for line in where.stdout.split()), where.stdout

    migrated = run("-m", "django", "migrate", "--noinput")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr

    port = free_port()
    log = tmp_path / "runstudio.log"
    with open(log, "w") as out:
        studio = subprocess.Popen(
            [str(python), "-m", "django", "runstudio", "--port", str(port)],
            cwd=elsewhere,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: answer(f"{base}/healthz") == 200, 90, message=f"the installed studio's /healthz; {log}")
        assert answer(f"{base}/login/") == 200, log.read_text()[-3000:]
        assert answer(f"{base}/static/css/studio.css") == 200, log.read_text()[-3000:]

        def pong() -> bool:
            ping = run("-m", "celery", "-A", "studio", "inspect", "ping", "--timeout", "5", timeout=60)
            return ping.returncode == 0 and "pong" in ping.stdout

        wait_for(pong, 90, interval=1, message=f"the installed studio's worker answering a ping; {log}")
    finally:
        os.killpg(studio.pid, signal.SIGTERM)
        try:
            studio.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(studio.pid, signal.SIGKILL)
            studio.wait(10)
