"""A web process's first requests: every request that sends a task sends it, however many come at once right after
the server starts (the task registry is complete before the first request is served)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from studio.security import api_token_issue
from tests.conftest import REPO, purge_broker
from tests.factories import screen_png
from traces.models import Screenshot

pytestmark = pytest.mark.subprocess  # a server, or a Python that sets Django up


def queued_tasks() -> Counter:
    """The task names of the messages waiting in the queues (taken off them)."""
    from studio.celery import app

    names: Counter = Counter()
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        for queue in ("default", "gpu", "webhooks"):
            while (message := channel.basic_get(queue=queue, no_ack=True)) is not None:
                names[message.headers["task"]] += 1
    return names


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("start", range(3))
def test_concurrent_first_requests_of_a_fresh_server_send_every_task(
    start, web_server, project, lead, engineer, tmp_path
):
    """Eight step pushes (each asks for its screenshot's thumbnail), six clusterings, an export and a pre-scoring,
    all at once as a restarted server's first requests (three starts: the race took one start in two or three).
    Celery's autodiscovery answered a thread that asked while another was importing the tasks modules with nothing,
    so some sends failed: a thumbnail never asked for (the failure logged and swallowed), a clustering answered 500
    and left queued for ever."""
    purge_broker()
    # New images each time: a thumbnail is asked for once in a while per image (a shared cache remembers it).
    run = uuid.uuid4().hex
    shots = [screen_png(tmp_path / f"s{n}.png", size=(320, 200), label=f"{run} {n}", seed=n) for n in range(8)]
    lead_auth = {"Authorization": f"Token {api_token_issue(user=lead)}"}
    engineer_auth = {"Authorization": f"Token {api_token_issue(user=engineer)}"}
    port = web_server()
    base = f"http://127.0.0.1:{port}/api/projects/{project.pk}"

    def push(n: int) -> requests.Response:
        step = {"thought": f"Step of run {n}.", "action": "click(start_box='(10,20)')"}
        return requests.post(
            f"{base}/traces/run-{n}/steps/",
            headers=lead_auth,
            data={"index": "1", "step": json.dumps(step), "instruction": "Open it"},
            files={"screenshot": (shots[n].name, shots[n].read_bytes())},
            timeout=60,
        )

    requests_to_send = [lambda n=n: push(n) for n in range(8)]
    requests_to_send += [lambda: requests.post(f"{base}/clusters/", headers=lead_auth, timeout=60)] * 6
    requests_to_send.append(lambda: requests.post(f"{base}/exports/", headers=engineer_auth, json={"format": "trl"}))
    requests_to_send.append(lambda: requests.post(f"{base}/prescore/", headers=lead_auth, json={"scorer": "rules"}))
    together = threading.Barrier(len(requests_to_send))

    def send(request) -> requests.Response:
        together.wait()
        return request()

    with ThreadPoolExecutor(len(requests_to_send)) as pool:
        answers = list(pool.map(send, requests_to_send))

    assert [a.status_code for a in answers] == [201] * 8 + [202] * 8, [a.text[:200] for a in answers]
    assert Screenshot.objects.filter(thumbnail="").count() == 8  # pushes leave the decode to a worker
    assert queued_tasks() == {
        "traces.tasks.make_thumbnail": 8,
        "jobs.clustering.run": 1,  # six starts at once are one run (insights: one unfinished run a project)
        "jobs.export.run": 1,
        "jobs.prescore.run": 1,
    }


def run_python(script: str, tmp_path) -> str:
    env = dict(os.environ, STUDIO_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="studio.settings")
    env.pop("DATABASE_URL", None)
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


WORKER_TASKS = r"""
import django, json
django.setup()
from studio.celery import app
app.loader.import_default_modules()  # what `celery worker` imports at start
print(json.dumps(sorted(app.tasks)))
"""

WEB_START_TASKS = r"""
import django, json
django.setup()
import studio.asgi  # the web process's start, before its first request
from studio.celery import app
print(json.dumps(sorted(app._tasks)))  # the registry as it is, without the autodiscovery that reading app.tasks may do
"""


def test_the_web_process_registers_every_task_before_its_first_request(tmp_path):
    """Whatever a request sends is registered as the process starts, so no request's send waits for, or races,
    the import of the tasks modules."""
    every_task = set(json.loads(run_python(WORKER_TASKS, tmp_path)))
    assert {"traces.tasks.make_thumbnail", "jobs.clustering.run", "jobs.export.run"} <= every_task
    assert set(json.loads(run_python(WEB_START_TASKS, tmp_path))) >= every_task


CONCURRENT_FIRST_SENDS = r"""
import django, json, threading, time
django.setup()
from celery.loaders import base
from studio import engine

find = base.find_related_module

def slow_find(package, related_name):  # a busy machine's import: other threads ask meanwhile
    time.sleep(0.05)
    return find(package, related_name)

base.find_related_module = slow_find
names = ["traces.tasks.make_thumbnail", "jobs.clustering.run", "jobs.export.run"] * 3
together = threading.Barrier(len(names))
missing = []

def look_up(name):
    together.wait()
    try:
        engine._task(name)
    except KeyError as exc:
        missing.append(str(exc))

threads = [threading.Thread(target=look_up, args=(name,)) for name in names]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(missing))
"""


def test_threads_that_look_up_a_task_at_once_all_find_it(tmp_path):
    """Any process (a command, a test's live server): the first lookups of several threads wait for one load of
    every tasks module; Celery's autodiscovery answers a thread that asks while another's is under way with
    nothing."""
    assert json.loads(run_python(CONCURRENT_FIRST_SENDS, tmp_path)) == []
