"""Load benchmark: autosaving annotators against a web server, first alone, then beside slow clients; the saves
they were told succeeded are read back through the API afterwards.

    .venv/bin/python bench/load.py --minutes 2 --slow-clients 8                       # embedded SQLite, own server
    .venv/bin/python bench/load.py --minutes 2 --slow-clients 32 --web-workers 4 \\
        --database-url postgres://postgres@127.0.0.1:5432/bench_load --redis-url redis://127.0.0.1:6379/9
    .venv/bin/python bench/load.py --url https://studio.example.org --project 3 \\
        --username-pattern 'load{i}' --password '...' --slow-clients 32 [--insecure]  # a running deployment

Against a running deployment (``--url``) the benchmark has no database of its own: the annotator accounts
(``--username-pattern`` with ``{i}`` = 0…N-1, one ``--password``) and a project with enough open traces
(``--project``) must exist there. Without ``--url`` it makes a database, those users and traces, and starts the
studio's web server itself (``studio.webserver.uvicorn_command``, ``--web-workers`` processes).

Each annotator logs in through the login form (a browser's session and CSRF token; one keep-alive connection),
takes a trace, autosaves its draft every 2 s while "stepping" through it (tau moves), sets a verdict, submits,
and takes the next. The first ``--minutes`` run without slow clients; the next ``--minutes`` add
``--slow-clients`` anonymous connections that each trickle a POST /login/ body one byte every 2 s (reconnecting
when the server cuts them off), as the hostile tests did. Reported per phase: saves, saves/s, save latency
p50/p95/p99, status counts, 5xx and transport errors; and the check: every acknowledged (200) save's note
and version is what the server returns for that annotation (or a later acknowledged save replaced it), every
refusal was a 4xx with a JSON detail, and `database is locked` never reached a client.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode, urlsplit

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable

SETUP = r"""
import json, sys, tempfile
from pathlib import Path
from studio.demo import user_create_with_role
from studio.permissions import Role
from tests.factories import native_trace_folder
from traces import services
n_users, n_traces, pattern, password = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
users = [user_create_with_role(username=pattern.format(i=i), password=password, role=Role.ANNOTATOR) for i in range(n_users)]
project = services.project_create(name="Load", members=users)
root = Path(tempfile.mkdtemp(prefix="load-traces-"))
for t in range(n_traces):
    native_trace_folder(root / f"t{t}", external_id=f"load-{t}", steps=4, size=(400, 300))
job = services.import_job_create(project=project, user=None, upload_name=str(root), original_name="load",
                                 fmt="native", server_path=True, enqueue=False)
job = services.import_job_run(job_id=job.pk)
assert job.status == "succeeded", job.message
print(json.dumps({"project": project.pk}))
"""

SERVER_COMMAND = r"""
import json
from studio.webserver import uvicorn_command
print(json.dumps(uvicorn_command("127.0.0.1", PORT, workers=WORKERS)))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Target:
    """Where the server is (http or https, host, port); makes connections to it."""

    def __init__(self, url: str, insecure: bool):
        parts = urlsplit(url)
        self.base = url.rstrip("/")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.context = ssl._create_unverified_context() if insecure else ssl.create_default_context()

    def connection(self, timeout: float = 60) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def socket(self) -> socket.socket:
        raw = socket.create_connection((self.host, self.port), timeout=30)
        return self.context.wrap_socket(raw, server_hostname=self.host) if self.https else raw


def entry_of(kind: str, status: int, elapsed: float, *, payload_ok: bool = True, locked: bool = False) -> dict:
    return {
        "kind": kind,
        "status": status,
        "latency": elapsed,
        "at": time.monotonic(),
        "payload_ok": payload_ok,
        "locked": locked,
    }


class Annotator(threading.Thread):
    """One person: logs in through the form (session + CSRF token, as a browser), then takes, saves, submits."""

    def __init__(
        self, index: int, username: str, password: str, project: int, target: Target, deadline: float, log: list, lock
    ):
        super().__init__(daemon=True)
        self.index, self.username, self.password, self.project = index, username, password, project
        self.target, self.deadline, self.log, self.lock = target, deadline, log, lock
        self.conn = target.connection()
        self.rng = random.Random(index)
        self.cookies: dict[str, str] = {}
        self.acknowledged: dict[int, list] = {}  # annotation id -> [note, version] of its last 200 save

    def _raw(self, method: str, path: str, data: bytes | None, headers: dict):
        headers = {
            "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()),
            "X-CSRFToken": self.cookies.get("csrftoken", ""),
            "Referer": self.target.base + "/",
            **headers,
        }
        started = time.monotonic()
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
            status = response.status
            for key, value in response.getheaders():
                if key.lower() == "set-cookie" and "=" in value:
                    name, rest = value.split("=", 1)
                    self.cookies[name.strip()] = rest.split(";", 1)[0]
        except (OSError, http.client.HTTPException) as exc:
            self.conn.close()
            self.conn = self.target.connection()
            raw, status = str(exc).encode(), 0
        return status, raw, time.monotonic() - started

    def call(self, method: str, path: str, body: dict | None = None, kind: str = "other"):
        data = json.dumps(body).encode() if body is not None else None
        status, raw, elapsed = self._raw(method, path, data, {"Content-Type": "application/json"})
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        entry = entry_of(
            kind, status, elapsed, payload_ok=isinstance(payload, dict), locked=b"database is locked" in raw.lower()
        )
        return status, payload, entry

    def login(self) -> dict:
        started = time.monotonic()
        status, page, _ = self._raw("GET", "/login/", None, {})
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if status == 200 and token:
            form = urlencode(
                {"csrfmiddlewaretoken": token.group(1).decode(), "username": self.username, "password": self.password}
            ).encode()
            status, _, _ = self._raw("POST", "/login/", form, {"Content-Type": "application/x-www-form-urlencoded"})
        logged_in = status == 302 and "sessionid" in self.cookies
        return entry_of("login", 200 if logged_in else status, time.monotonic() - started)

    def record(self, entry: dict) -> None:
        with self.lock:
            self.log.append(entry)

    def save(self, pk: int, version: int, body: dict, note: str) -> int:
        status, answer, entry = self.call(
            "PUT", f"/api/annotations/{pk}/draft/", {"version": version, **body}, kind="save"
        )
        if status == 200:
            version = answer["version"]
            self.acknowledged[pk] = [note, version]
        elif status == 409 and answer and "version" in json.dumps(answer):
            version = (answer.get("current") or {}).get("version", version)
        self.record(entry)
        return version

    def run(self) -> None:
        time.sleep(self.rng.random() * 2)  # spread the logins
        entry = self.login()
        self.record(entry)
        if entry["status"] != 200:
            return
        while time.monotonic() < self.deadline:
            status, claim, entry = self.call("POST", f"/api/projects/{self.project}/next-trace/", kind="next")
            self.record(entry)
            if status != 200:
                time.sleep(2)
                continue
            annotation = claim["annotation"]
            pk, version, note = annotation["id"], annotation["version"], annotation.get("note", "")
            for n in range(self.rng.randint(15, 30)):  # 30-60 s on a trace, like a person
                if time.monotonic() >= self.deadline:
                    return
                time.sleep(2)
                note = f"annotator {self.index} save {n} on {pk} at {time.time():.3f}"
                version = self.save(pk, version, {"note": note, "tau": n % 4 + 1}, note)
            version = self.save(pk, version, {"verdict": "no_error"}, note)
            _, _, entry = self.call("POST", f"/api/annotations/{pk}/submit/", {"version": version}, kind="submit")
            self.record(entry)

    def lost_saves(self) -> list[dict]:
        """Acknowledged saves the server no longer returns (read back through the API: no database access)."""
        lost = []
        for pk, (note, version) in self.acknowledged.items():
            status, row, _ = self.call("GET", f"/api/annotations/{pk}/")
            held = (row or {}).get("version", 0)
            if status != 200 or held < version or (held == version and row.get("note") != note):
                lost.append(
                    {
                        "annotation": pk,
                        "acknowledged": [note, version],
                        "server": [status, (row or {}).get("note"), held],
                    }
                )
        return lost


class SlowClient(threading.Thread):
    """An anonymous POST /login/ whose body comes one byte every 2 s; reconnects when the server cuts it off."""

    BODY_BYTES = 100_000

    def __init__(self, target: Target, start_at: float, stop_at: float):
        super().__init__(daemon=True)
        self.target, self.start_at, self.stop_at = target, start_at, stop_at
        self.connections = 0
        self.ended_by = Counter()  # how the server ended each connection: its status, or "closed"

    def run(self) -> None:
        time.sleep(max(0.0, self.start_at - time.monotonic()))
        while time.monotonic() < self.stop_at:
            try:
                sock = self.target.socket()
            except OSError:
                self.ended_by["connect failed"] += 1
                time.sleep(1)
                continue
            self.connections += 1
            try:
                sock.sendall(
                    (
                        f"POST /login/ HTTP/1.1\r\nHost: {self.target.host}\r\n"
                        f"Content-Length: {self.BODY_BYTES}\r\n"
                        "Content-Type: application/x-www-form-urlencoded\r\n\r\n"
                    ).encode()
                )
                sock.settimeout(2)
                while time.monotonic() < self.stop_at:
                    sock.sendall(b"a")
                    try:
                        answer = sock.recv(64)
                    except (TimeoutError, ssl.SSLWantReadError):
                        continue  # nothing from the server yet: keep trickling
                    match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
                    self.ended_by[match.group(1).decode() if match else "closed"] += 1
                    break
            except OSError:
                self.ended_by["closed"] += 1
            finally:
                sock.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, round(q / 100 * (len(values) - 1)))]


def phase_report(entries: list[dict], seconds: float) -> dict:
    saves = [e for e in entries if e["kind"] == "save"]
    latencies = [e["latency"] * 1000 for e in saves]
    refused = [e for e in entries if e["status"] != 200 and e["kind"] not in ("next", "login")]
    return {
        "seconds": round(seconds, 1),
        "requests": len(entries),
        "saves": len(saves),
        "saves_per_s": round(len(saves) / seconds, 2) if seconds else 0,
        "save_latency_ms": {
            "p50": round(percentile(latencies, 50), 1),
            "p95": round(percentile(latencies, 95), 1),
            "p99": round(percentile(latencies, 99), 1),
            "mean": round(statistics.fmean(latencies), 1) if latencies else 0,
        },
        "status_counts": {
            f"{kind}:{status}": n
            for (kind, status), n in sorted(Counter((e["kind"], e["status"]) for e in entries).items())
        },
        "errors_5xx_or_transport": sum(1 for e in entries if e["status"] >= 500 or e["status"] == 0),
        "refusals_without_clear_json": sum(1 for e in refused if not (400 <= e["status"] < 500 and e["payload_ok"])),
        "database_is_locked_seen_by_clients": sum(1 for e in entries if e["locked"]),
    }


def start_own_server(args, password: str) -> tuple[subprocess.Popen, str, int]:
    """A fresh database with the annotators and traces, and the studio's web server on a loopback port."""
    workdir = Path(tempfile.mkdtemp(prefix="trace-studio-load-"))
    env = {
        **os.environ,
        "STUDIO_DATA_DIR": str(workdir),
        "STUDIO_MODE": "dev",
        "STUDIO_DEBUG": "0",
        "STUDIO_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
        name = args.database_url.rsplit("/", 1)[1]
        base = args.database_url.rsplit("/", 1)[0] + "/postgres"
        subprocess.run(
            [
                PY,
                "-c",
                f"import psycopg; c=psycopg.connect({base!r}, autocommit=True); "
                f"c.execute('DROP DATABASE IF EXISTS {name} WITH (FORCE)'); c.execute('CREATE DATABASE {name}')",
            ],
            check=True,
        )
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
    subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    script = (
        SETUP.replace("sys.argv[1]", str(args.annotators))
        .replace("sys.argv[2]", str(args.traces))
        .replace("sys.argv[3]", repr(args.username_pattern))
        .replace("sys.argv[4]", repr(password))
    )
    setup = subprocess.run(
        [PY, "manage.py", "shell", "-c", script], cwd=REPO, env=env, check=True, capture_output=True, text=True
    )
    project = json.loads(setup.stdout.strip().splitlines()[-1])["project"]
    port = free_port()
    command = subprocess.run(
        [
            PY,
            "manage.py",
            "shell",
            "-c",
            SERVER_COMMAND.replace("PORT", str(port)).replace("WORKERS", str(args.web_workers)),
        ],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    server = subprocess.Popen(
        json.loads(command.stdout.strip().splitlines()[-1]), cwd=REPO, env=env, start_new_session=True
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            break
        except OSError:
            time.sleep(0.3)
    return server, f"http://127.0.0.1:{port}", project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--minutes", type=float, default=2, help="length of each phase (without, then with slow clients)"
    )
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--slow-clients", type=int, default=8, help="8 for the embedded server, 32 for the full stack")
    parser.add_argument("--url", default="", help="a running deployment (no database of the benchmark's own)")
    parser.add_argument("--project", type=int, default=0, help="with --url: the project the annotators work in")
    parser.add_argument("--username-pattern", default="load{i}", help="annotator usernames, {i} = 0…N-1")
    parser.add_argument("--password", default="", help="the annotators' password (with --url; made up otherwise)")
    parser.add_argument("--insecure", action="store_true", help="with an https --url: do not verify its certificate")
    parser.add_argument("--traces", type=int, default=600, help="without --url: traces imported for the run")
    parser.add_argument("--web-workers", type=int, default=2, help="without --url: uvicorn worker processes")
    parser.add_argument("--database-url", default="", help="without --url: PostgreSQL URL (dropped and recreated)")
    parser.add_argument("--redis-url", default="")
    parser.add_argument("--out", default="", help="write the report JSON here too")
    args = parser.parse_args()
    if args.url and not (args.project and args.password):
        parser.error("--url needs --project and --password (the annotator accounts must exist there)")

    server = None
    if args.url:
        base, project, password = args.url, args.project, args.password
    else:
        password = args.password or "load-pass-1234-x"
        server, base, project = start_own_server(args, password)
    target = Target(base, args.insecure)
    try:
        log: list[dict] = []
        lock = threading.Lock()
        started = time.monotonic()
        slow_from = started + args.minutes * 60
        deadline = slow_from + args.minutes * 60
        clients = [
            Annotator(i, args.username_pattern.format(i=i), password, project, target, deadline, log, lock)
            for i in range(args.annotators)
        ]
        slow = [SlowClient(target, slow_from, deadline) for _ in range(args.slow_clients)]
        for thread in [*clients, *slow]:
            thread.start()
        for thread in [*clients, *slow]:
            thread.join(args.minutes * 120 + 120)
        lost = [item for client in clients for item in client.lost_saves()]
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)

    report = {
        "target": f"running deployment {base}"
        if args.url
        else ("own server, PostgreSQL + Redis" if args.database_url else "own server, embedded SQLite"),
        "annotators": args.annotators,
        "slow_clients": args.slow_clients,
        "web_workers": None if args.url else args.web_workers,
        "logins": dict(Counter(e["status"] for e in log if e["kind"] == "login")),
        "without_slow_clients": phase_report([e for e in log if e["at"] < slow_from], args.minutes * 60),
        "with_slow_clients": phase_report([e for e in log if e["at"] >= slow_from], args.minutes * 60),
        "slow_client_connections": sum(c.connections for c in slow),
        "slow_connections_ended_by": dict(sum((c.ended_by for c in slow), Counter())),
        "submits_accepted": sum(1 for e in log if e["kind"] == "submit" and e["status"] == 200),
        "acknowledged_annotations_checked": sum(len(c.acknowledged) for c in clients),
        "acknowledged_saves_lost": len(lost),
        "lost_examples": lost[:5],
    }
    quiet = report["without_slow_clients"]["save_latency_ms"]["p95"]
    busy = report["with_slow_clients"]["save_latency_ms"]["p95"]
    report["p95_with_over_without"] = round(busy / quiet, 2) if quiet else None
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
