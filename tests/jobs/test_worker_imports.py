"""The CPU worker starts without the model libraries: torch and transformers are the gpu queue's tasks' business,
imported when such a task runs, never by a worker that only consumes the default queue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess  # each test starts a Python that sets Django up

REPO = Path(__file__).resolve().parent.parent.parent

# What `celery -A studio worker` does before it consumes: Django set up, the app and every task module loaded.
WORKER_IMPORT_PATH = r"""
import json, sys
import django
django.setup()
from studio.celery import app
app.loader.import_default_modules()
app.finalize()
print(json.dumps(sorted(m for m in ("torch", "transformers", "accelerate", "safetensors") if m in sys.modules)))
"""


def test_cpu_worker_import_path_leaves_out_torch_and_transformers(tmp_path):
    env = dict(os.environ, STUDIO_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="studio.settings")
    env.pop("DATABASE_URL", None)
    out = subprocess.run(
        [sys.executable, "-c", WORKER_IMPORT_PATH], cwd=REPO, env=env, check=True, capture_output=True, text=True
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == [], f"the CPU worker's start imports {loaded}"


def test_the_check_sees_torch_when_a_task_module_imports_it(tmp_path):
    """The check itself can fail: importing the gpu scorer (what a gpu task does) brings torch in."""
    env = dict(os.environ, STUDIO_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="studio.settings")
    env.pop("DATABASE_URL", None)
    script = WORKER_IMPORT_PATH.replace("app.finalize()", "app.finalize()\nimport torch  # noqa")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, check=True, capture_output=True, text=True)
    assert "torch" in json.loads(out.stdout.strip().splitlines()[-1])


WEB_IMPORT_PATH = r"""
import json, sys
import django
django.setup()
import studio.asgi  # the web process's start: every view module imported
print(json.dumps(sorted(m for m in ("torch", "transformers", "numpy", "krippendorff", "twisted") if m in sys.modules)))
"""


def test_web_process_start_leaves_out_what_no_request_needs_at_start(tmp_path):
    """numpy and krippendorff serve one dashboard figure and are imported there; Twisted came with the daphne app."""
    env = dict(os.environ, STUDIO_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="studio.settings")
    env.pop("DATABASE_URL", None)
    out = subprocess.run(
        [sys.executable, "-c", WEB_IMPORT_PATH], cwd=REPO, env=env, check=True, capture_output=True, text=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


URLCONF_PROBE = WORKER_IMPORT_PATH.replace(
    'print(json.dumps(sorted(m for m in ("torch", "transformers", "accelerate", "safetensors") if m in sys.modules)))',
    'print(json.dumps(sorted(m for m in ("studio.urls", "drf_spectacular.views") if m in sys.modules)))',
)


def _urlconf_modules_at_worker_start(tmp_path, extra_env: dict) -> list[str]:
    env = dict(os.environ, STUDIO_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="studio.settings", **extra_env)
    env.pop("DATABASE_URL", None)
    if "CELERY_SKIP_CHECKS" not in extra_env:
        env.pop("CELERY_SKIP_CHECKS", None)
    out = subprocess.run(
        [sys.executable, "-c", URLCONF_PROBE], cwd=REPO, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_embedded_worker_starts_without_the_url_conf(tmp_path):
    """Celery runs Django's system checks as a worker starts, and the URL check imports every view, API and schema
    module (~23 MB). runstudio ran the checks already, so its worker is started without them."""
    from studio.management.commands.runstudio import embedded_worker_environment

    assert _urlconf_modules_at_worker_start(tmp_path, embedded_worker_environment()) == []


def test_a_worker_started_with_the_checks_imports_the_url_conf(tmp_path):
    """The control: the probe sees the URL conf when the checks run (a worker started outside runstudio)."""
    assert _urlconf_modules_at_worker_start(tmp_path, {}) == ["drf_spectacular.views", "studio.urls"]
