"""Load benchmark: simulated annotators against a real server on loopback, then the database is checked
against the clients' log.

    .venv/bin/python bench/load.py --minutes 5 --annotators 50                       # embedded SQLite
    .venv/bin/python bench/load.py --minutes 5 --annotators 50 \\
        --database-url postgres://postgres@127.0.0.1:5432/bench_load --redis-url redis://127.0.0.1:6379/9

Each annotator (API token; one thread with a keep-alive connection) takes a trace, autosaves its draft
every 2 s while "stepping" through it (tau moves), then sets a verdict and submits, and takes the next.
Bounded: loopback only, a fixed number of clients, a fixed duration. Reported: saves/s, latency
p50/p95/p99 of the saves, status counts, and the check: every acknowledged (200) save's note and
version is what the database holds for that annotation, or a later acknowledged save replaced it;
every refusal was a 4xx/409 with a JSON detail; `database is locked` never reached a client.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable

SETUP = r"""
import json, sys, tempfile
from pathlib import Path
from studio.demo import user_create_with_role
from studio.permissions import Role
from studio.security import api_token_issue
from tests.factories import native_trace_folder
from traces import services
n_users, n_traces = int(sys.argv[1]), int(sys.argv[2])
users = [user_create_with_role(username=f"load{i}", password="load-pass-1234-x", role=Role.ANNOTATOR) for i in range(n_users)]
project = services.project_create(name="Load", members=users)
root = Path(tempfile.mkdtemp(prefix="load-traces-"))
for t in range(n_traces):
    native_trace_folder(root / f"t{t}", external_id=f"load-{t}", steps=4, size=(400, 300))
job = services.import_job_create(project=project, user=None, upload_name=str(root), original_name="load",
                                 fmt="native", server_path=True, enqueue=False)
job = services.import_job_run(job_id=job.pk)
assert job.status == "succeeded", job.message
print(json.dumps({"project": project.pk, "tokens": [api_token_issue(user=u) for u in users]}))
"""

VERIFY = r"""
import json, sys
from annotation.models import Annotation
expected = json.load(open(sys.argv[1]))
rows = {a.pk: a for a in Annotation.objects.filter(pk__in=[int(k) for k in expected])}
lost = []
for key, (note, version) in expected.items():
    row = rows.get(int(key))
    if row is None or row.note != note or row.version < version:
        lost.append({"annotation": key, "acknowledged": [note, version], "database": [row and row.note, row and row.version]})
print(json.dumps({"checked": len(expected), "lost": lost}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Annotator(threading.Thread):
    def __init__(self, index: int, token: str, project: int, port: int, deadline: float, log: list, lock):
        super().__init__(daemon=True)
        self.index, self.token, self.project, self.port, self.deadline = index, token, project, port, deadline
        self.log, self.lock = log, lock
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.rng = random.Random(index)

    def call(self, method: str, path: str, body: dict | None = None, kind: str = "other"):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        started = time.monotonic()
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as exc:
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            raw, status = str(exc).encode(), 0
        elapsed = time.monotonic() - started
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        entry = {"kind": kind, "status": status, "latency": elapsed, "payload_ok": isinstance(payload, dict),
                 "locked": b"database is locked" in raw.lower()}
        return status, payload, entry

    def record(self, entry: dict) -> None:
        with self.lock:
            self.log.append(entry)

    def run(self) -> None:
        time.sleep(self.rng.random() * 2)  # spread the first requests
        while time.monotonic() < self.deadline:
            status, claim, entry = self.call("POST", f"/api/projects/{self.project}/next-trace/", kind="next")
            self.record(entry)
            if status != 200:
                time.sleep(2)
                continue
            annotation = claim["annotation"]
            pk, version = annotation["id"], annotation["version"]
            steps = self.rng.randint(15, 30)  # 30-60 s on a trace, like a person
            for n in range(steps):
                if time.monotonic() >= self.deadline:
                    return
                time.sleep(2)
                note = f"annotator {self.index} save {n} on {pk} at {time.time():.3f}"
                status, body, entry = self.call("PUT", f"/api/annotations/{pk}/draft/",
                                                {"version": version, "note": note, "tau": n % 4 + 1}, kind="save")
                entry.update(annotation=pk, note=note)
                if status == 200:
                    version = body["version"]
                    entry["version"] = version
                elif status == 409 and body and "version" in json.dumps(body):
                    version = (body.get("current") or {}).get("version", version)
                self.record(entry)
            status, body, entry = self.call("PUT", f"/api/annotations/{pk}/draft/",
                                            {"version": version, "verdict": "no_error"}, kind="save")
            entry.update(annotation=pk, note=note)
            if status == 200:
                version = body["version"]
                entry["version"] = version
            self.record(entry)
            status, body, entry = self.call("POST", f"/api/annotations/{pk}/submit/", {"version": version}, kind="submit")
            self.record(entry)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--traces", type=int, default=600)
    parser.add_argument("--web-workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--database-url", default="", help="PostgreSQL URL (its database is dropped and recreated)")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--out", default="", help="write the report JSON here too")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="trace-studio-load-"))
    env = {**os.environ, "STUDIO_DATA_DIR": str(workdir), "STUDIO_MODE": "dev", "STUDIO_DEBUG": "0",
           "STUDIO_LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1"}
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
        name = args.database_url.rsplit("/", 1)[1]
        base = args.database_url.rsplit("/", 1)[0] + "/postgres"
        subprocess.run([PY, "-c", f"import psycopg; c=psycopg.connect({base!r}, autocommit=True); "
                                  f"c.execute('DROP DATABASE IF EXISTS {name} WITH (FORCE)'); c.execute('CREATE DATABASE {name}')"],
                       check=True)
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    setup = subprocess.run([PY, "manage.py", "shell", "-c", SETUP.replace("sys.argv[1]", str(args.annotators))
                            .replace("sys.argv[2]", str(args.traces))], cwd=REPO, env=env, check=True,
                           capture_output=True, text=True)
    world = json.loads(setup.stdout.strip().splitlines()[-1])

    port = free_port()
    server = subprocess.Popen([PY, "-m", "uvicorn", "studio.asgi:application", "--host", "127.0.0.1", "--port", str(port),
                               "--workers", str(args.web_workers), "--log-level", "warning"],
                              cwd=REPO, env=env, start_new_session=True)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                time.sleep(0.3)
        log: list[dict] = []
        lock = threading.Lock()
        started = time.monotonic()
        deadline = started + args.minutes * 60
        clients = [Annotator(i, token, world["project"], port, deadline, log, lock) for i, token in enumerate(world["tokens"])]
        for client in clients:
            client.start()
        for client in clients:
            client.join(args.minutes * 60 + 120)
        elapsed = time.monotonic() - started
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)

    saves = [e for e in log if e["kind"] == "save"]
    latencies = [e["latency"] * 1000 for e in saves]
    acknowledged: dict[str, list] = {}
    for e in saves:  # in log order per annotation; versions only grow
        if e["status"] == 200:
            current = acknowledged.get(str(e["annotation"]))
            if current is None or e["version"] > current[1]:
                acknowledged[str(e["annotation"])] = [e["note"], e["version"]]
    expected_file = workdir / "acknowledged.json"
    expected_file.write_text(json.dumps(acknowledged))
    verify = subprocess.run([PY, "manage.py", "shell", "-c", VERIFY.replace("sys.argv[1]", repr(str(expected_file)))],
                            cwd=REPO, env=env, check=True, capture_output=True, text=True)
    check = json.loads(verify.stdout.strip().splitlines()[-1])
    refused = [e for e in log if e["status"] != 200 and e["kind"] != "next"]
    report = {
        "database": "postgresql+redis" if args.database_url else "sqlite (embedded)",
        "annotators": args.annotators, "seconds": round(elapsed, 1), "web_workers": args.web_workers,
        "requests": len(log), "saves": len(saves), "saves_per_s": round(len(saves) / elapsed, 2),
        "save_latency_ms": {"p50": round(percentile(latencies, 50), 1), "p95": round(percentile(latencies, 95), 1),
                            "p99": round(percentile(latencies, 99), 1),
                            "mean": round(statistics.fmean(latencies), 1) if latencies else 0},
        "status_counts": {f"{e_kind}:{status}": n for (e_kind, status), n in
                          sorted(Counter((e["kind"], e["status"]) for e in log).items())},
        "submits_accepted": sum(1 for e in log if e["kind"] == "submit" and e["status"] == 200),
        "errors_5xx_or_transport": sum(1 for e in log if e["status"] >= 500 or e["status"] == 0),
        "refusals_without_clear_json": sum(1 for e in refused if not (400 <= e["status"] < 500 and e["payload_ok"])),
        "database_is_locked_seen_by_clients": sum(1 for e in log if e["locked"]),
        "acknowledged_annotations_checked": check["checked"], "acknowledged_saves_lost": len(check["lost"]),
        "lost_examples": check["lost"][:5],
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
