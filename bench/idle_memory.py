"""The embedded stack's memory, process by process: idle after start and idle after a load of autosavers.

    .venv/bin/python bench/idle_memory.py [--annotators 50] [--autosave-s 60] [--settle-s 10] [--repo PATH]
        [--out report.json]

Runs ``manage.py runstudio`` (DEBUG off, SQLite and the filesystem broker, a fresh data folder) as
``bench/labelstudio.py`` does, with its users, traces, sessions and autosavers, and reads RSS and PSS
(``/proc/<pid>/smaps_rollup``) of every process under the supervisor: once ``--settle-s`` after the login page
answers (one page served), and again ``--settle-s`` after ``--annotators`` autosavers have saved every 2 s for
``--autosave-s`` seconds. ``--repo`` runs another checkout's studio (e.g. ``git worktree add /tmp/base HEAD~1``
with this virtualenv linked into it) so two versions are measured by the same script. Label Studio 1.23.2's
``label-studio start``, one process, measured by ``bench/labelstudio.py`` on this kind of machine: 287–291 MB RSS /
273–275 MB PSS idle.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import labelstudio  # noqa: E402 - the side-by-side harness's stack, sessions and memory reading
from labelstudio import Browser, Studio, autosavers, free_port, loadavg, memory, memory_line, wait_ready  # noqa: E402


def table(rows: list[dict]) -> str:
    lines = [f"    {'pid':>7} {'RSS MB':>7} {'PSS MB':>7}  process"]
    for row in rows:
        lines.append(f"    {row['pid']:>7} {row['rss_mb']:7.1f} {row['pss_mb']:7.1f}  {row['cmd'][:100]}")
    lines.append("    " + memory_line(rows))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--autosave-s", type=float, default=60)
    parser.add_argument("--settle-s", type=float, default=10)
    parser.add_argument("--repo", default=str(labelstudio.REPO), help="the checkout whose studio runs")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    labelstudio.REPO = Path(args.repo).resolve()
    stack = Studio(Path(tempfile.mkdtemp(prefix="bench-idle-memory-")), args.annotators)
    stack.env["PYTHONPATH"] = str(labelstudio.REPO)
    stack.setup()
    port = free_port()
    server = stack.start(port)
    report: dict = {"repo": str(labelstudio.REPO)}
    try:
        wait_ready(port, stack.ready_path, server)
        time.sleep(args.settle_s)
        report["idle_start"], report["load_idle_start"] = memory(server.pid), loadavg()
        print(f"idle after start (load {report['load_idle_start']}):\n{table(report['idle_start'])}", flush=True)

        sessions = [Browser(port) for _ in range(args.annotators)]
        for i, browser in enumerate(sessions):
            stack.login(browser, i)
        drafts = [stack.open_draft(sessions[i], i) for i in range(args.annotators)]
        threads, latencies, errors, acknowledged = autosavers(stack, sessions, drafts, args.autosave_s)
        for thread in threads:
            thread.join()
        lost = [i for i, text in acknowledged.items() if stack.read_back(sessions[i], drafts[i]) != text]
        report["autosave"] = {
            "saves": len(latencies),
            "errors": len(errors),
            "read_back": f"{len(acknowledged) - len(lost)}/{len(acknowledged)}",
            "load": loadavg(),
        }
        print(f"{args.annotators} autosavers: {report['autosave']}", flush=True)
        time.sleep(args.settle_s)
        report["idle_after_load"], report["load_idle_after_load"] = memory(server.pid), loadavg()
        print(f"idle after the load (load {report['load_idle_after_load']}):\n{table(report['idle_after_load'])}")
    finally:
        server.terminate()
        server.wait(30)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
