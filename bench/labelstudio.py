"""Trace Studio's embedded stack and Label Studio side by side: server CPU per draft save, idle memory, a login burst.

    .venv/bin/python bench/labelstudio.py [--stack both|studio|labelstudio] [--annotators 50] [--solo-saves 1000]
        [--autosave-s 60] [--label-studio-venv /tmp/label-studio-venv] [--out report.json]
        [--no-login-burst] [--studio-database-url postgres://…/NAME --studio-redis-url redis://…/N]

Each stack runs on its own fresh data folder and its default single-machine server: Trace Studio's
``manage.py runstudio`` (the supervisor, uvicorn and one threaded Celery worker for jobs and webhook deliveries; DEBUG off) and
``label-studio start`` (one process). Label Studio is installed by pip into its own virtualenv (``--label-studio-venv``,
made when missing; never a project dependency). With ``--stack both`` the two run back to back, Trace Studio first,
and the load average is printed beside every phase: the machine is shared, and CPU time summed from
``/proc/<pid>/stat`` over every server process holds on a busy machine where latency does not.

Phases, the same for both stacks (users and tasks are made before the server starts, with one password hash):
1. idle memory after start: RSS and PSS (``/proc/<pid>/smaps_rollup``) of every server process, with the table;
2. one client saving one draft back to back ``--solo-saves`` times: CPU per save, the median over batches of 100;
3. ``--annotators`` autosavers, each saving every 2 s for ``--autosave-s`` seconds: CPU per save, latency
   p50/p95, served and errors; every acknowledged save is read back afterwards (its text is the draft's);
4. idle memory again, after the load;
5. a login burst: as many new logins as annotators, all at once through the login form, while the autosavers go on
   saving: login p50/p95/max and the saves' p95 during the burst (``--no-login-burst`` leaves it out).

Trace Studio runs on SQLite and the filesystem broker unless ``--studio-database-url`` (an empty PostgreSQL database
it migrates) and ``--studio-redis-url`` put it on the full stack's services. On PostgreSQL the database's own CPU per
save is reported beside the server's, phases 2 and 3: its backends serving the bench database (``DatabaseBackendCPU``,
sampled through the phase as backends come and go), not the server's shared processes.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parent.parent
PASSWORD = "bench-password-7731"
TICK = os.sysconf("SC_CLK_TCK")
LS_CONFIG = '<View><Text name="text" value="$text"/><TextArea name="note" toName="text"/></View>'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


# --- Processes ---------------------------------------------------------------------------------


def tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def cpu_by_process(root: int) -> dict[int, tuple[str, float]]:
    """pid -> (its role, user + system CPU seconds) for ``root`` and every process below it."""
    found = {}
    for pid in tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        found[pid] = (role_of(cmd), (int(fields[11]) + int(fields[12])) / TICK)
    return found


def role_of(cmd: str) -> str:
    for role in ("runstudio", "uvicorn", "celery", "label-studio"):
        if role in cmd:
            return role
    return cmd.split(" ")[0].rsplit("/", 1)[-1]


def cpu_s(root: int) -> float:
    return sum(seconds for _, seconds in cpu_by_process(root).values())


def cpu_delta_ms(before: dict, after: dict, per: float) -> dict[str, float]:
    """CPU ms per ``per`` (a save, a second) by role, between two ``cpu_by_process`` readings."""
    roles: dict[str, float] = {}
    for pid, (role, seconds) in after.items():
        roles[role] = roles.get(role, 0.0) + (seconds - before.get(pid, (role, 0.0))[1]) * 1000 / per
    return {role: round(ms, 2) for role, ms in sorted(roles.items())}


class DatabaseBackendCPU:
    """PostgreSQL's own CPU for one database: user + system time of the backends serving it (and autovacuum workers
    named after it), from ``/proc/<pid>/stat``. A backend's process title names its database
    (``postgres: [cluster:] user database host(port) state``), so only this bench's database counts, not other
    databases of a shared server, nor the server's shared processes (WAL writer, checkpointer), which no database owns.

    Backends come and go during a phase (the pool opens and closes connections), so a thread samples every backend
    each ``interval_s`` and keeps each one's last reading, keyed by pid and start time (a reused pid is another
    backend). A backend born during the phase counts from zero; one that ends during it counts up to its last sample,
    so at most ``interval_s`` of its CPU is missed, and ``ended`` says how many did."""

    def __init__(self, database: str, interval_s: float = 0.2):
        self.database = database
        self.interval_s = interval_s
        self.boot_ticks = 0
        self.first: dict[tuple[int, int], float] = {}
        self.last: dict[tuple[int, int], float] = {}
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    def serves(self, title: str) -> bool:
        words = title.split()
        if words[:1] != ["postgres:"]:
            return False
        words = words[1:]
        if words and words[0].endswith(":"):  # the cluster name (cluster_name), e.g. "15/main:"
            words = words[1:]
        if words[:2] == ["autovacuum", "worker"]:
            return words[2:3] == [self.database]
        return len(words) >= 3 and words[1] == self.database

    def read(self) -> dict[tuple[int, int], float]:
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if not self.serves(title):
                    continue
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # fields[19] is the start time (ticks since boot): with the pid, one backend's identity.
            found[(int(entry.name), int(fields[19]))] = (int(fields[11]) + int(fields[12])) / TICK
        return found

    def _sample(self, *, starting: bool = False) -> None:
        found = self.read()
        with self.lock:
            for key, seconds in found.items():
                if key not in self.first:
                    # Present at the start: counted from now. Born since: counted from its start (zero CPU then).
                    self.first[key] = seconds if starting else 0.0
                self.last[key] = seconds

    def _run(self) -> None:
        while not self.stop_event.wait(self.interval_s):
            self._sample()

    def start(self) -> DatabaseBackendCPU:
        self._sample(starting=True)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def seconds(self) -> float:
        """CPU seconds the database's backends used since ``start`` (sampled now)."""
        self._sample()
        with self.lock:
            return sum(self.last[key] - self.first[key] for key in self.last)

    def stop(self) -> dict:
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join()
        used = self.seconds()
        alive = {key for key in self.read()}
        with self.lock:
            seen = set(self.last)
        return {"cpu_s": used, "backends": len(seen), "ended": len(seen - alive)}


def database_name(url: str) -> str:
    """The database a postgres:// URL names ("" for none)."""
    from urllib.parse import urlparse

    return urlparse(url).path.lstrip("/") if url.startswith(("postgres://", "postgresql://")) else ""


def memory(root: int) -> list[dict]:
    rows = []
    for pid in tree(root):
        try:
            rss = int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))
            pss = int(re.search(r"^Pss:\s+(\d+)", Path(f"/proc/{pid}/smaps_rollup").read_text(), re.M).group(1))
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:90]
        except (OSError, AttributeError):
            continue
        rows.append({"pid": pid, "rss_mb": rss / 1024, "pss_mb": pss / 1024, "cmd": cmd})
    return rows


def memory_line(rows: list[dict]) -> str:
    rss, pss = sum(r["rss_mb"] for r in rows), sum(r["pss_mb"] for r in rows)
    return f"{rss:.0f} MB RSS / {pss:.0f} MB PSS ({len(rows)} processes)"


# --- HTTP --------------------------------------------------------------------------------------


class Browser:
    """One user's keep-alive connection with its cookies and CSRF token (as the page's fetch() sends them)."""

    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        all_headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **(headers or {})}
        if method not in ("GET", "HEAD"):
            all_headers |= {
                "X-CSRFToken": self.cookies.get("csrftoken", ""),
                "Referer": f"http://127.0.0.1:{self.port}/",
            }
        for attempt in range(2):
            try:
                self.connection.request(method, path, body=body, headers=all_headers)
                response = self.connection.getresponse()
                content = response.read()
                break
            except (http.client.HTTPException, OSError):
                self.connection.close()
                if attempt:
                    raise
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, content

    def json(self, method: str, path: str, data) -> tuple[int, dict]:
        status, content = self.request(method, path, json.dumps(data).encode(), {"Content-Type": "application/json"})
        try:
            return status, json.loads(content or b"{}")
        except ValueError:
            return status, {"raw": content[:200].decode(errors="replace")}

    def login(self, path: str, fields: dict) -> float:
        self.request("GET", path)
        body = urlencode({**fields, "csrfmiddlewaretoken": self.cookies.get("csrftoken", "")}).encode()
        t0 = time.perf_counter()
        status, content = self.request("POST", path, body, {"Content-Type": "application/x-www-form-urlencoded"})
        elapsed = time.perf_counter() - t0
        if status != 302 or "sessionid" not in self.cookies:
            raise RuntimeError(f"login to {path} answered {status}: {content[:200]!r}")
        return elapsed


# --- The two stacks: setup, server, a draft save ------------------------------------------------


class Studio:
    name = "Trace Studio"

    def __init__(self, root: Path, users: int, database_url: str = "", redis_url: str = ""):
        self.data = root / "studio"
        self.env = dict(
            os.environ,
            STUDIO_DATA_DIR=str(self.data),
            STUDIO_DEBUG="false",
            STUDIO_LOG_LEVEL="WARNING",
            DJANGO_SETTINGS_MODULE="studio.settings",
            PYTHONPATH=str(REPO),
        )
        self.env.pop("DATABASE_URL", None)
        self.env.pop("REDIS_URL", None)
        if database_url:
            self.env["DATABASE_URL"] = database_url
        if redis_url:
            self.env["REDIS_URL"] = redis_url
        self.python = sys.executable
        self.users = users
        self.database = database_name(database_url)  # its backends' CPU is reported beside the server's

    def setup(self) -> None:
        subprocess.run(
            [self.python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=self.env, check=True
        )
        script = r"""
import json, sys, tempfile
from pathlib import Path
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from studio.demo import user_create_with_role
from studio.permissions import Role
from tests.factories import native_trace_folder
from traces import services
n, password = int(sys.argv[1]), sys.argv[2]
encoded = make_password(password)  # one hash (the production hasher) for every bench user
users = []
for i in range(n):
    user = user_create_with_role(username=f"bench{i}", password=None, role=Role.ANNOTATOR)
    User.objects.filter(pk=user.pk).update(password=encoded)
    users.append(user)
project = services.project_create(name="Bench", members=users)
root = Path(tempfile.mkdtemp(prefix="bench-ls-traces-"))
for t in range(n):
    native_trace_folder(root / f"t{t}", external_id=f"bench-{t}", steps=4, size=(400, 300))
job = services.import_job_create(project=project, user=None, upload_name=str(root), original_name="bench",
                                 fmt="native", server_path=True, enqueue=False)
assert services.import_job_run(job_id=job.pk).status == "succeeded"
print(json.dumps({"project": project.pk}))
"""
        out = subprocess.run(
            [self.python, "-c", f"import django; django.setup()\n{script}", str(self.users), PASSWORD],
            cwd=REPO,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        self.project = json.loads(out.strip().splitlines()[-1])["project"]

    def start(self, port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [self.python, "manage.py", "runstudio", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    ready_path = "/login/"

    def login(self, browser: Browser, i: int) -> float:
        return browser.login("/login/", {"username": f"bench{i}", "password": PASSWORD})

    def open_draft(self, browser: Browser, i: int) -> dict:
        status, claim = browser.json("POST", f"/api/projects/{self.project}/next-trace/", {})
        assert status == 200, claim
        return {"id": claim["annotation"]["id"], "version": claim["annotation"]["version"]}

    def save(self, browser: Browser, draft: dict, text: str) -> int:
        status, body = browser.json(
            "PUT", f"/api/annotations/{draft['id']}/draft/", {"version": draft["version"], "note": text}
        )
        if status == 200:
            draft["version"] = body["version"]
        return status

    def read_back(self, browser: Browser, draft: dict) -> str:
        status, body = browser.json("GET", f"/api/annotations/{draft['id']}/", None)
        return body.get("note", f"<{status}>")


class LabelStudio:
    name = "Label Studio"

    def __init__(self, root: Path, users: int, venv: Path):
        self.data = root / "labelstudio"
        self.venv = venv
        self.python = str(venv / "bin" / "python")
        self.users = users
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("STUDIO_", "DJANGO_", "DATABASE_", "REDIS_"))
        }
        self.env |= {
            "LABEL_STUDIO_BASE_DATA_DIR": str(self.data),
            "LOG_LEVEL": "WARNING",
            "DEBUG": "false",
            "PYTHONPATH": "",
        }

    def install(self) -> None:
        if not (self.venv / "bin" / "label-studio").exists():
            subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
            # The release the figures name; its Sentry setup passes an option sentry-sdk 3 refuses at start.
            subprocess.run(
                [str(self.venv / "bin" / "pip"), "install", "-q", "label-studio==1.23.2", "sentry-sdk<3"], check=True
            )

    def setup(self) -> None:
        self.install()
        package = subprocess.run(
            [self.python, "-c", "import label_studio, os; print(os.path.dirname(label_studio.__file__))"],
            check=True,
            capture_output=True,
            text=True,
            env=self.env,
        ).stdout.strip()
        self.manage = [self.python, os.path.join(package, "manage.py")]
        self.env["DJANGO_SETTINGS_MODULE"] = "core.settings.label_studio"
        subprocess.run([*self.manage, "migrate", "--noinput", "-v", "0"], env=self.env, check=True, cwd=package)
        script = r"""
import json, sys
from django.contrib.auth.hashers import make_password
from organizations.models import Organization
from projects.models import Project
from tasks.models import Task
from users.models import User
n, password, config = int(sys.argv[1]), sys.argv[2], sys.argv[3]
encoded = make_password(password)
users = []
for i in range(n):
    user = User.objects.create(email=f"bench{i}@example.invalid", username=f"bench{i}", password=encoded)
    if i == 0:
        org = Organization.create_organization(created_by=user, title="Bench")
    else:
        org.add_user(user)
    user.active_organization = org
    user.save(update_fields=["active_organization"])
    users.append(user)
project = Project.objects.create(title="Bench", organization=org, created_by=users[0], label_config=config)
tasks = [Task.objects.create(project=project, data={"text": f"task {i}"}) for i in range(n)]
print(json.dumps({"tasks": [t.pk for t in tasks]}))
"""
        out = subprocess.run(
            [
                *self.manage,
                "shell",
                "-c",
                f"import sys; sys.argv = ['x', *{[str(self.users), PASSWORD, LS_CONFIG]!r}]\n{script}",
            ],
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            cwd=package,
        ).stdout
        self.tasks = json.loads(out.strip().splitlines()[-1])["tasks"]

    def start(self, port: int) -> subprocess.Popen:
        env = {k: v for k, v in self.env.items() if k != "DJANGO_SETTINGS_MODULE"}
        return subprocess.Popen(
            [str(self.venv / "bin" / "label-studio"), "start", "--no-browser", "--port", str(port), "--host", ""],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    ready_path = "/user/login/"

    def login(self, browser: Browser, i: int) -> float:
        return browser.login("/user/login/", {"email": f"bench{i}@example.invalid", "password": PASSWORD})

    def open_draft(self, browser: Browser, i: int) -> dict:
        status, body = browser.json("POST", f"/api/tasks/{self.tasks[i]}/drafts", {"result": [], "lead_time": 1})
        assert status == 201, (status, body)
        return {"id": body["id"]}

    def save(self, browser: Browser, draft: dict, text: str) -> int:
        result = [{"from_name": "note", "to_name": "text", "type": "textarea", "value": {"text": [text]}, "id": "n1"}]
        status, _ = browser.json("PATCH", f"/api/drafts/{draft['id']}/", {"result": result, "lead_time": 2})
        return status

    def read_back(self, browser: Browser, draft: dict) -> str:
        status, body = browser.json("GET", f"/api/drafts/{draft['id']}/", None)
        try:
            return body["result"][0]["value"]["text"][0]
        except (KeyError, IndexError, TypeError):
            return f"<{status}>"


# --- One run -----------------------------------------------------------------------------------


def wait_ready(port: int, path: str, server: subprocess.Popen, limit_s: float = 300) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", path)
            if connection.getresponse().status < 500:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the server did not answer in time")


def autosavers(stack, sessions, drafts, seconds: float, stop: threading.Event | None = None):
    """Every session saves its draft every 2 s (first at a random moment within the first 2 s)."""
    import random

    latencies: list[tuple[float, float]] = []  # (when, ms)
    errors: list[str] = []
    acknowledged: dict[int, str] = {}
    end = time.monotonic() + seconds

    def run(i: int):
        rng = random.Random(i)
        time.sleep(rng.uniform(0, 2))
        k = 0
        while time.monotonic() < end and not (stop and stop.is_set()):
            text = f"annotator {i} save {k} " + "words " * 30
            t0 = time.perf_counter()
            try:
                status = stack.save(sessions[i], drafts[i], text)
            except Exception as exc:  # noqa: BLE001 - counted as an error
                errors.append(repr(exc))
                status = 0
            latencies.append((time.monotonic(), (time.perf_counter() - t0) * 1000))
            if status == 200:
                acknowledged[i] = text
            else:
                errors.append(str(status))
            k += 1
            time.sleep(max(0.0, 2.0 - (time.perf_counter() - t0)))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sessions))]
    for t in threads:
        t.start()
    return threads, latencies, errors, acknowledged


def run_stack(stack, args) -> dict:
    report: dict = {"stack": stack.name}
    t0 = time.monotonic()
    stack.setup()
    print(f"[{stack.name}] set up in {time.monotonic() - t0:.0f} s", flush=True)
    port = free_port()
    server = stack.start(port)
    try:
        wait_ready(port, stack.ready_path, server)
        time.sleep(args.settle_s)
        idle_before, t_idle = cpu_by_process(server.pid), time.monotonic()
        time.sleep(args.settle_s)
        report["idle_cpu_ms_per_s"] = cpu_delta_ms(idle_before, cpu_by_process(server.pid), time.monotonic() - t_idle)
        print(f"[{stack.name}] idle CPU, ms per second: {report['idle_cpu_ms_per_s']}", flush=True)
        report["idle_start"] = memory(server.pid)
        report["load_idle_start"] = loadavg()
        print(f"[{stack.name}] idle after start: {memory_line(report['idle_start'])}", flush=True)

        n = args.annotators
        sessions = [Browser(port) for _ in range(n)]
        for i, browser in enumerate(sessions):
            stack.login(browser, i)
        drafts = [stack.open_draft(sessions[i], i) for i in range(n)]

        # 2. one client, back to back
        solo, draft = sessions[0], drafts[0]
        batch_cpu, solo_latencies, solo_errors = [], [], 0
        report["load_solo"] = loadavg()
        database = getattr(stack, "database", "")
        solo_database = DatabaseBackendCPU(database).start() if database else None
        batch_database_cpu = []
        solo_before = cpu_by_process(server.pid)
        for b in range(max(1, args.solo_saves // 100)):
            before = cpu_s(server.pid)
            database_before = solo_database.seconds() if solo_database else 0.0
            for k in range(100):
                t = time.perf_counter()
                status = stack.save(solo, draft, f"solo {b}.{k}")
                solo_latencies.append((time.perf_counter() - t) * 1000)
                solo_errors += status != 200
            batch_cpu.append((cpu_s(server.pid) - before) * 1000 / 100)
            if solo_database:
                batch_database_cpu.append((solo_database.seconds() - database_before) * 1000 / 100)
        report["solo"] = {
            "saves": len(solo_latencies),
            "errors": solo_errors,
            "cpu_ms_median_of_batches": statistics.median(batch_cpu),
            "cpu_ms_batches": batch_cpu,
            "cpu_ms_per_save_by_process": cpu_delta_ms(solo_before, cpu_by_process(server.pid), len(solo_latencies)),
            "p50_ms": pct(solo_latencies, 0.5),
            "p95_ms": pct(solo_latencies, 0.95),
            "load": loadavg(),
        }
        if solo_database:
            backends = solo_database.stop()
            report["solo"]["postgresql"] = {
                "cpu_ms_median_of_batches": statistics.median(batch_database_cpu),
                "cpu_ms_batches": batch_database_cpu,
                "cpu_ms_per_save": backends["cpu_s"] * 1000 / len(solo_latencies),
                "backends": backends["backends"],
                "ended_during": backends["ended"],
            }
        print(f"[{stack.name}] 1 client: {report['solo']}", flush=True)

        # 3. autosavers
        report["load_autosave"] = loadavg()
        before_by_process = cpu_by_process(server.pid)
        before = sum(seconds for _, seconds in before_by_process.values())
        autosave_database = DatabaseBackendCPU(database).start() if database else None
        threads, latencies, errors, acknowledged = autosavers(stack, sessions, drafts, args.autosave_s)
        for t in threads:
            t.join()
        after_by_process = cpu_by_process(server.pid)
        autosave_backends = autosave_database.stop() if autosave_database else None
        used = (sum(seconds for _, seconds in after_by_process.values()) - before) * 1000
        served = sum(1 for _ in latencies) - len(errors)
        lost = [i for i, text in acknowledged.items() if stack.read_back(sessions[i], drafts[i]) != text]
        report["autosave"] = {
            "annotators": n,
            "seconds": args.autosave_s,
            "attempted": len(latencies),
            "served": served,
            "errors": len(errors),
            "error_kinds": sorted(set(errors))[:5],
            "cpu_ms_per_save": used / max(1, served),
            "cpu_ms_per_save_by_process": cpu_delta_ms(before_by_process, after_by_process, max(1, served)),
            "p50_ms": pct([ms for _, ms in latencies], 0.5),
            "p95_ms": pct([ms for _, ms in latencies], 0.95),
            "acknowledged_read_back": f"{len(acknowledged) - len(lost)}/{len(acknowledged)}",
            "load": loadavg(),
        }
        if autosave_backends:
            report["autosave"]["postgresql"] = {
                "cpu_ms_per_save": autosave_backends["cpu_s"] * 1000 / max(1, served),
                "backends": autosave_backends["backends"],
                "ended_during": autosave_backends["ended"],
            }
        print(f"[{stack.name}] {n} autosavers: {report['autosave']}", flush=True)
        time.sleep(args.settle_s)
        report["idle_after_load"] = memory(server.pid)
        print(f"[{stack.name}] idle after the load: {memory_line(report['idle_after_load'])}", flush=True)

        if not args.login_burst:
            return report
        # 5. a login burst beside the autosavers
        burst_sessions = [Browser(port) for _ in range(n)]
        stop = threading.Event()
        threads, latencies, errors, _ = autosavers(stack, sessions, drafts, 3600, stop)
        time.sleep(4)
        started = time.monotonic()
        login_times: list[float] = []
        login_errors: list[str] = []

        def login(i: int):
            try:
                login_times.append(stack.login(burst_sessions[i], i))
            except Exception as exc:  # noqa: BLE001 - counted
                login_errors.append(repr(exc)[:200])

        logins = [threading.Thread(target=login, args=(i,)) for i in range(n)]
        for t in logins:
            t.start()
        for t in logins:
            t.join()
        ended = time.monotonic()
        stop.set()
        for t in threads:
            t.join()
        during = [ms for when, ms in latencies if started <= when <= ended]
        report["login_burst"] = {
            "logins": len(login_times),
            "login_errors": len(login_errors),
            "burst_s": ended - started,
            "login_p50_s": pct(login_times, 0.5),
            "login_p95_s": pct(login_times, 0.95),
            "login_max_s": max(login_times, default=float("nan")),
            "saves_during": len(during),
            "save_errors": len(errors),
            "save_p50_ms": pct(during, 0.5),
            "save_p95_ms": pct(during, 0.95),
            "load": loadavg(),
        }
        print(f"[{stack.name}] login burst: {report['login_burst']}", flush=True)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    return report


def table(reports: list[dict]) -> str:
    by = {r["stack"]: r for r in reports}
    s, ls = by.get("Trace Studio"), by.get("Label Studio")

    def mem(r, key, field):
        return sum(row[field] for row in r[key])

    lines = ["| | Trace Studio | Label Studio | ratio (LS / TS) |", "|---|---|---|---|"]

    def row(label, fs, unit, get):
        a = get(s) if s else None
        b = get(ls) if ls else None
        ratio = f"{b / a:.2f}×" if a and b else ""
        lines.append(f"| {label} | {fs(a, unit)} | {fs(b, unit)} | {ratio} |")

    def f(v, unit):
        return "—" if v is None else f"{v:.1f} {unit}"

    row(
        "server CPU per save, 1 client (median of batches of 100)",
        f,
        "ms",
        lambda r: r["solo"]["cpu_ms_median_of_batches"],
    )
    row("save p95, 1 client", f, "ms", lambda r: r["solo"]["p95_ms"])
    if any("postgresql" in r["solo"] for r in reports):

        def postgresql(phase: str, key: str):
            return lambda r: r[phase]["postgresql"][key] if "postgresql" in r[phase] else None

        row(
            "PostgreSQL CPU per save, 1 client (its backends for the bench database; median of batches)",
            f,
            "ms",
            postgresql("solo", "cpu_ms_median_of_batches"),
        )
    row("server CPU per save, autosavers every 2 s", f, "ms", lambda r: r["autosave"]["cpu_ms_per_save"])
    if any("postgresql" in r["autosave"] for r in reports):
        row("PostgreSQL CPU per save, autosavers", f, "ms", postgresql("autosave", "cpu_ms_per_save"))
    row("autosave p95", f, "ms", lambda r: r["autosave"]["p95_ms"])
    row("autosaves served", f, "", lambda r: r["autosave"]["served"])
    row("idle RSS after start, all processes", f, "MB", lambda r: mem(r, "idle_start", "rss_mb"))
    row("idle PSS after start, all processes", f, "MB", lambda r: mem(r, "idle_start", "pss_mb"))
    row("RSS after the autosave load", f, "MB", lambda r: mem(r, "idle_after_load", "rss_mb"))
    row("PSS after the autosave load", f, "MB", lambda r: mem(r, "idle_after_load", "pss_mb"))
    if all("login_burst" in r for r in reports):
        row("login burst: login p95", f, "s", lambda r: r["login_burst"]["login_p95_s"])
        row("login burst: saves' p95 meanwhile", f, "ms", lambda r: r["login_burst"]["save_p95_ms"])
    for r in reports:
        lines.append("")
        lines.append(
            f"{r['stack']}: load average solo {r['load_solo']}, autosave {r['load_autosave']}, "
            f"autosave read back {r['autosave']['acknowledged_read_back']}, errors {r['autosave']['errors']}"
        )
        for key in ("idle_start", "idle_after_load"):
            lines.append(f"  {key}:")
            for p in r[key]:
                lines.append(f"    {p['pid']:>7} {p['rss_mb']:7.1f} MB RSS {p['pss_mb']:7.1f} MB PSS  {p['cmd']}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", choices=["both", "studio", "labelstudio"], default="both")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--solo-saves", type=int, default=1000)
    parser.add_argument("--autosave-s", type=float, default=60)
    parser.add_argument("--settle-s", type=float, default=10)
    parser.add_argument("--label-studio-venv", default=str(Path(tempfile.gettempdir()) / "label-studio-venv"))
    parser.add_argument("--out", default="")
    parser.add_argument("--no-login-burst", dest="login_burst", action="store_false")
    parser.add_argument("--studio-database-url", default="", help="Trace Studio's database (default: SQLite)")
    parser.add_argument("--studio-redis-url", default="", help="Trace Studio's Redis (default: none)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-side-by-side-"))
    stacks = []
    if args.stack in ("both", "studio"):
        stacks.append(Studio(root, args.annotators, args.studio_database_url, args.studio_redis_url))
    if args.stack in ("both", "labelstudio"):
        stacks.append(LabelStudio(root, args.annotators, Path(args.label_studio_venv)))
    reports = [run_stack(stack, args) for stack in stacks]
    print(table(reports))
    if args.out:
        Path(args.out).write_text(json.dumps(reports, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
