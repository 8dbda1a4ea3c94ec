"""Debian's Prometheus against a small studio (two uvicorn processes and a Celery worker sharing one metrics
folder): it loads deploy/prometheus/alerts.yml, sees the studio's target up, and StudioWorkerGone fires once the
worker is killed. The rules' `for:` waits are cut to none and the heartbeat to a second, so it fires in seconds."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from studio.celery import WORKER_STEPS_OFF
from studio.webserver import uvicorn_command
from tests.ports import free_port
from tests.stack import Service, wait_until

REPO = Path(__file__).resolve().parent.parent.parent

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(
        shutil.which("prometheus") is None,
        reason="prometheus (Debian package prometheus) is not installed; .ci/run installs it",
    ),
]


def _alerts(prometheus: str) -> list[dict]:
    return requests.get(f"{prometheus}/api/v1/alerts", timeout=5).json()["data"]["alerts"]


def _query(prometheus: str, expr: str) -> list[dict]:
    return requests.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=5).json()["data"]["result"]


def test_prometheus_scrapes_the_studio_and_fires_worker_gone_when_the_worker_dies(tmp_path):
    web_port, prometheus_port = free_port(), free_port()
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "STUDIO_MODE": "dev",
        "STUDIO_DATA_DIR": str(tmp_path / "data"),
        "STUDIO_METRICS_DIR": str(tmp_path / "metrics"),
        "STUDIO_LOG_FORMAT": "json",
        "STUDIO_JOB_WATCH_INTERVAL_S": "1",
    }
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert migrate.returncode == 0, migrate.stdout[-2000:] + migrate.stderr[-2000:]
    rules = (REPO / "deploy" / "prometheus" / "alerts.yml").read_text()
    (tmp_path / "alerts.yml").write_text(re.sub(r"for: \d+m", "for: 0s", rules))
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "rule_files: [alerts.yml]\n"
        "scrape_configs:\n"
        "  - job_name: trace-studio\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{web_port}']}}]\n"
    )
    web = Service("web", uvicorn_command("127.0.0.1", web_port, workers=2), env, tmp_path)
    worker = Service(
        "worker",
        [sys.executable, "-m", "celery", "-A", "studio", "worker", "-Q", "default", "--concurrency", "1",
         "-n", "metrics@%h", *WORKER_STEPS_OFF],
        env,
        tmp_path,
    )  # fmt: skip
    prometheus = Service(
        "prometheus",
        [
            "prometheus",
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prometheus_port}",
        ],
        {**env, "PATH": "/usr/bin:/bin"},
        tmp_path,
    )
    api = f"http://127.0.0.1:{prometheus_port}"
    services = [web.start(), worker.start(), prometheus.start()]
    try:
        wait_until(
            lambda: requests.get(f"http://127.0.0.1:{web_port}/healthz", timeout=2).ok, 60, "uvicorn", web.proc, web.log
        )
        wait_until(
            lambda: requests.get(f"{api}/-/ready", timeout=2).ok, 60, "prometheus", prometheus.proc, prometheus.log
        )

        def target_up() -> bool:
            targets = requests.get(f"{api}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
            return any(t["labels"]["job"] == "trace-studio" and t["health"] == "up" for t in targets)

        wait_until(target_up, 60, "the studio's target up in Prometheus", prometheus.proc, prometheus.log)
        beats = lambda: _query(api, 'studio_worker_heartbeat_timestamp_seconds{queues="default"}')  # noqa: E731
        wait_until(lambda: bool(beats()), 90, "the worker's heartbeat in Prometheus", worker.proc, worker.log)
        time.sleep(5)  # several beats and evaluations with the worker alive
        assert not [a for a in _alerts(api) if a["labels"]["alertname"] == "StudioWorkerGone"], _alerts(api)
        assert _query(api, 'up{job="trace-studio"}')[0]["value"][1] == "1"

        worker.kill()

        def worker_gone() -> list[dict]:
            return [
                a for a in _alerts(api) if a["labels"]["alertname"] == "StudioWorkerGone" and a["state"] == "firing"
            ]

        wait_until(lambda: bool(worker_gone()), 60, "StudioWorkerGone firing", prometheus.proc, prometheus.log)
        assert worker_gone()[0]["labels"]["queues"] == "default"
        assert "default" in worker_gone()[0]["annotations"]["summary"]
    finally:
        for service in reversed(services):
            service.stop()
    assert os.listdir(tmp_path / "metrics")  # every process wrote its counters into the one folder
