"""Killing Redis killed the CPU worker on 2 of 3 `kill -9` (kombu's Redis transport, reconnecting:
`AttributeError("'NoneType' object has no attribute 'hostname'")`); the GPU worker, idle, survived. The cause: on the
lost connection Celery's consumer closes its broker connection; kombu has already cleared the transport's ``client``
and the channel's close restores the running tasks' unacknowledged messages, which needs a Redis client built from
``self.connection.client.hostname``: an AttributeError no connection-error handler catches, so a worker with a task
in flight stopped. studio/broker_redis.py makes that moment the connection error it is (a configured transport,
``CELERY_BROKER_TRANSPORT``); the workers also run without gossip, mingle and the event heartbeat
(``studio.celery.WORKER_STEPS_OFF``), whose restarts on the collected connection logged errors of the same kind.
A supervisor (systemd, compose's restart policy, runstudio) stays the second line. A private redis-server on a port
of its own is SIGKILLed three times under an idle, then a busy worker."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kombu import Connection

from studio.celery import WORKER_STEPS_OFF
from tests.conftest import REPO, _worker_env, wait_for
from tests.factories import native_trace_folder
from tests.ports import free_port
from traces import services as trace_services
from traces.models import ImportJob

pytestmark = pytest.mark.skipif(not shutil.which("redis-server"), reason="redis-server is not installed")


class PrivateRedis:
    def __init__(self, port: int, folder: Path):
        self.port, self.folder, self.proc = port, folder, None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(
            lambda: (
                subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True).stdout.strip()
                == b"PONG"
            ),
            10,
            message="redis up",
        )

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


# Celery's consumer logs where it stands with the broker (the URL it names is the configured transport's).
LOST = "Connection to broker lost"
CANNOT_CONNECT = "consumer: Cannot connect to "
CONNECTED = "celery.worker.consumer.connection: Connected to "


def _worker(url: str, log: Path, steps_off: tuple[str, ...]) -> subprocess.Popen:
    env = {**_worker_env(), "REDIS_URL": url, "STUDIO_JOB_WATCH_INTERVAL_S": "1", "STUDIO_JOB_STALE_AFTER_S": "6"}
    command = [sys.executable, "-m", "celery", "-A", "studio", "worker", "-Q", "default", "--concurrency", "2"]
    command += ["--prefetch-multiplier", "1", "-n", f"restart-{os.getpid()}@%h", "--loglevel", "INFO", *steps_off]
    with open(log, "w") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def _import(project, lead, folder: Path, url: str, count: int) -> ImportJob:
    for n in range(count):
        native_trace_folder(folder / f"t{n}", external_id=f"{folder.name}-{n}", steps=2, size=(48, 32))
    job = trace_services.import_job_create(
        project=project, user=lead, upload_name=str(folder), server_path=True, enqueue=False
    )
    from studio.celery import app

    with Connection(url) as connection:  # by the name an older release queued it under: the engine's alias runs it
        app.send_task("traces.tasks.run_import", args=(job.pk,), connection=connection, queue="default")
    return job


def _ended(job: ImportJob) -> bool:
    return ImportJob.objects.get(pk=job.pk).status in ("succeeded", "failed", "cancelled")


def rides_out_three_kills(project, lead, tmp_path, steps_off) -> tuple[bool, str]:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    redis = PrivateRedis(port, tmp_path)
    redis.start()
    log = tmp_path / "worker.log"
    worker = _worker(url, log, steps_off)
    try:
        wait_for(lambda: " ready." in log.read_text(), 60, message="worker ready")
        kills = 0

        def met_outage(outages: int) -> bool:
            text = log.read_text()
            return worker.poll() is not None or (text.count(LOST) >= outages and text.count(CANNOT_CONNECT) >= outages)

        def reconnected(outages: int) -> bool:  # the first connection, then one after each outage
            return worker.poll() is not None or log.read_text().count(CONNECTED) > outages

        for phase in ("idle", "busy"):
            for kill in range(3):
                if phase == "busy":  # tasks in flight at each kill: their messages are unacknowledged
                    job = _import(project, lead, tmp_path / f"busy{kill}", url, 12)
                    wait_for(lambda j=job: ImportJob.objects.get(pk=j.pk).progress_done >= 2, 60, message="shards")
                kills += 1
                redis.kill()
                # Redis stays down until the worker has met the outage: it lost its connection (the moment the
                # unacknowledged messages are restored) and failed to reconnect once; then it must come back.
                wait_for(lambda n=kills: met_outage(n), 60, 0.1, f"{phase}: the worker meets Redis's outage {kills}")
                redis.start()
                wait_for(lambda n=kills: reconnected(n), 60, 0.1, f"{phase}: the worker back after outage {kills}")
                if worker.poll() is not None:
                    return False, f"{phase}: worker exited {worker.returncode}\n" + log.read_text()[-3000:]
        # Still a working worker: a job sent after the kills runs to its end.
        job = _import(project, lead, tmp_path / "after", url, 2)
        wait_for(lambda: _ended(job), 90, message="a job after the kills")
        return ImportJob.objects.get(pk=job.pk).status == "succeeded", log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                worker.kill()
        redis.kill()


@pytest.mark.worker
def test_a_worker_rides_out_three_redis_kills_idle_and_busy(transactional_db, project, lead, settings, tmp_path):
    settings.IMPORT_SHARD_TRACES = 1
    survived, log = rides_out_three_kills(project, lead, tmp_path, WORKER_STEPS_OFF)
    assert survived, log
    assert "Unrecoverable error" not in log and "Error on restarting" not in log, log
