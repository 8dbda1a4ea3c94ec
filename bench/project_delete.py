"""Project deletion benchmark: a project of ``--pairs`` annotated traces deleted in a fresh child process.

    [DATABASE_URL=postgres://…] .venv/bin/python bench/project_delete.py [--pairs 200000] [--batch 500] [--orm]

Loads bench/export.py's data (``--pairs`` traces of ``--steps`` steps sharing ``--images`` screenshots, one accepted
error annotation each) into a temporary data folder (SQLite unless DATABASE_URL is set), then a child process
deletes the project — with ``traces.services.project_delete`` (traces in batches of ``--batch``; what the admin
does), or with ``--orm`` the plain ``Project.delete()`` (what the admin did before: Django's collector reads every
dependent row into memory first) — and the parent reports the child's wall time and peak RSS (wait4 rusage).
Target: the memory does not grow with the project (≤ 500 MB, as for a worker).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _setup(data_dir: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ["STUDIO_DATA_DIR"] = data_dir
    os.environ["STUDIO_DEBUG"] = "0"  # no query log, as in production
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def child(project_id: int, *, orm: bool, batch: int) -> None:
    from traces.models import Project
    from traces.services import project_delete

    project = Project.objects.get(pk=project_id)
    started = time.perf_counter()
    if orm:
        project.delete()
    else:
        project_delete(project=project, batch=batch)
    print(json.dumps({"seconds": round(time.perf_counter() - started, 1)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200_000)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--orm", action="store_true", help="Project.delete(), the collector's one pass")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _setup(args.data_dir)
        child(args.child, orm=args.orm, batch=args.batch)
        return

    data_dir = tempfile.mkdtemp(prefix="delete-bench-")
    _setup(data_dir)
    from django.core.management import call_command

    from bench.export import load_pairs
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Project

    call_command("migrate", verbosity=0)
    annotator = user_create_with_role(username=f"del-{os.getpid()}", password="bench-pass-1234", role=Role.ANNOTATOR)
    project = Project.objects.create(name=f"delete-bench-{os.getpid()}")
    started = time.perf_counter()
    load_pairs(project, annotator, pairs=args.pairs, n_images=args.images, n_steps=args.steps)
    loaded = time.perf_counter() - started
    command = [sys.executable, __file__, "--child", str(project.pk), "--data-dir", data_dir, "--batch", str(args.batch)]
    proc = subprocess.Popen([*command, *(["--orm"] if args.orm else [])], stdout=subprocess.PIPE, env=os.environ)
    _, status, usage = os.wait4(proc.pid, 0)
    out = json.loads(proc.stdout.read() or "{}") if proc.stdout else {}
    report = {
        "pairs": args.pairs,
        "steps_per_trace": args.steps,
        "method": "Project.delete()" if args.orm else f"project_delete, batches of {args.batch}",
        "database": "postgresql" if os.environ.get("DATABASE_URL") else "sqlite",
        "loaded_s": round(loaded, 1),
        "exit_status": os.waitstatus_to_exitcode(status),
        "seconds": out.get("seconds"),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "left_traces": project.traces.count(),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(report, indent=2))
    if Project.objects.filter(pk=project.pk).exists():  # the --orm child may have been killed for memory
        Project.objects.filter(pk=project.pk).delete()
    annotator.delete()


if __name__ == "__main__":
    main()
