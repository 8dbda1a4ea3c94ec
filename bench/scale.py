"""Scale-out benchmark: one sharded rules pre-scoring job over 1, 2, … CPU workers on the same Redis + PostgreSQL.

    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python bench/scale.py [--steps 200000] [--workers 1,2,4]

Loads a project of ``--steps`` steps (traces of ``--trace-steps``, eight shared 640×400 screenshots, so the
"no change on screen" rule decodes and compares images as it does on real data) straight into the database, then
for each worker count starts that many ``celery worker --pool solo -Q default`` processes, queues one rules
pre-scoring job and times it from queueing to its end. Reports steps/s per worker count and the scaling efficiency
(throughput ÷ (workers × single-worker throughput); goal ≥ 0.8 up to the machine's cores) with the cores and the
load average seen. The project and its rows are deleted at the end. Imports and exports are single-task jobs today
(one worker each), so they are not part of this run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ACTIONS = [
    "click(start_box='<|box_start|>({x},{y})<|box_end|>')",
    "type(content='report {n}')",
    "scroll(start_box='<|box_start|>({x},{y})<|box_end|>', direction='down')",
    "hotkey(key='ctrl s')",
    "wait()",
]


def _setup_django(data_dir: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ["STUDIO_DATA_DIR"] = str(data_dir)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _screens(count: int) -> list:
    from django.core.files.base import ContentFile
    from PIL import Image, ImageDraw

    from traces.models import Screenshot

    shots = []
    for n in range(count):
        image = Image.new("RGB", (640, 400), (240, 240, 245))
        draw = ImageDraw.Draw(image)
        for row in range(20):
            draw.text((20 + 7 * n, 20 + row * 18), f"row {row} screen {n} " * 4, fill=(30, 30, 30))
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        data = buffer.getvalue()
        import hashlib

        sha = hashlib.sha256(data).hexdigest()
        shot = Screenshot.objects.filter(sha256=sha).first()
        if shot is None:
            shot = Screenshot(sha256=sha, format="PNG", width=640, height=400, byte_size=len(data))
            shot.image.save(f"{sha}.png", ContentFile(data), save=False)
            shot.save()
        shots.append(shot)
    return shots


def _load(project, *, steps: int, trace_steps: int) -> int:
    from django.db import transaction

    from traces import actions as grammar
    from traces.models import Step, Trace

    shots = _screens(8)
    made = 0
    number = 0
    while made < steps:
        batch_traces = []
        for _ in range(min(200, (steps - made + trace_steps - 1) // trace_steps)):
            batch_traces.append(
                Trace(
                    project=project,
                    coordinate_convention=project.coordinate_convention,
                    external_id=f"scale-{number}",
                    instruction="Save the report.",
                    source="native",
                    step_count=trace_steps,
                    final_screenshot=shots[number % 8],
                )
            )
            number += 1
        with transaction.atomic():
            Trace.objects.bulk_create(batch_traces)
            rows = []
            for t, trace in enumerate(batch_traces):
                for index in range(1, trace_steps + 1):
                    text = ACTIONS[(t + index) % len(ACTIONS)].format(x=100 + 13 * index, y=80 + 7 * index, n=index)
                    rows.append(
                        Step(
                            trace=trace,
                            index=index,
                            screenshot=shots[(t + index) % 8],
                            action_text=text,
                            parsed_actions=[a.to_json() for a in grammar.parse_actions(text)],
                        )
                    )
            Step.objects.bulk_create(rows, batch_size=2000)
        made += len(batch_traces) * trace_steps
    return made


def _worker(env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "studio",
            "worker",
            "-Q",
            "default",
            "--pool",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"scale-{uuid.uuid4().hex[:8]}@%h",
            "--loglevel",
            "WARNING",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _run(project, lead, workers: int, env: dict) -> dict:
    from studio.models import JobShard
    from traces.models import PrescoreJob
    from traces.prescoring.services import prescore_job_create

    procs = [_worker(env) for _ in range(workers)]
    try:
        time.sleep(6)  # the workers connect
        load_before = os.getloadavg()[0]
        started = time.perf_counter()
        job = prescore_job_create(project=project, user=lead, scorer="rules")
        while True:
            job.refresh_from_db()
            if job.is_finished:
                break
            time.sleep(0.2)
        seconds = time.perf_counter() - started
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
    shards = JobShard.objects.filter(job_model="traces.PrescoreJob", job_id=job.pk).count()
    result = {
        "workers": workers,
        "status": job.status,
        "steps": job.steps_scored,
        "shards": shards,
        "seconds": round(seconds, 2),
        "steps_per_s": round(job.steps_scored / seconds, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    PrescoreJob.objects.filter(pk=job.pk).delete()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--trace-steps", type=int, default=20)
    parser.add_argument("--shard-steps", type=int, default=2000)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        sys.exit("bench/scale.py measures workers sharing Redis and PostgreSQL: set DATABASE_URL and REDIS_URL")
    data_dir = Path(tempfile.mkdtemp(prefix="studio-scale-"))
    os.environ["STUDIO_PRESCORE_SHARD_STEPS"] = str(args.shard_steps)
    _setup_django(data_dir)
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Project

    lead = user_create_with_role(
        username=f"scale-lead-{uuid.uuid4().hex[:6]}", password=uuid.uuid4().hex, role=Role.LEAD
    )
    project = Project.objects.create(name=f"scale-{uuid.uuid4().hex[:6]}")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        t0 = time.perf_counter()
        steps = _load(project, steps=args.steps, trace_steps=args.trace_steps)
        print(f"loaded {steps} steps in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        results = []
        for count in [int(n) for n in args.workers.split(",")]:
            results.append(_run(project, lead, count, env))
            print(json.dumps(results[-1]), file=sys.stderr)
        base = results[0]["steps_per_s"] / results[0]["workers"]
        for r in results:
            r["efficiency"] = round(r["steps_per_s"] / (r["workers"] * base), 2)
        print(
            json.dumps(
                {"cores": os.cpu_count(), "steps": steps, "shard_steps": args.shard_steps, "runs": results}, indent=2
            )
        )
    finally:
        project.delete()
        lead.delete()


if __name__ == "__main__":
    main()
