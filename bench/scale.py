"""Scale-out benchmark: sharded jobs over 1, 2, … CPU workers on the same Redis + PostgreSQL.

    DATABASE_URL=postgres://… REDIS_URL=redis://… .venv/bin/python bench/scale.py [--jobs prescore,export,import]
        [--steps 200000] [--pairs 200000] [--import-steps 20000] [--workers 1,2,4]

``prescore``: loads a project of ``--steps`` steps (traces of ``--trace-steps``, eight shared 640×400 screenshots,
so the "no change on screen" rule decodes and compares images as it does on real data) straight into the database,
then for each worker count starts that many ``celery worker --pool solo -Q default`` processes, queues one rules
pre-scoring job and times it from queueing to its end.

Each load ends with ``ANALYZE`` (what autovacuum does on a deployed PostgreSQL soon after a big load; the report
says whether the server runs autovacuum), so the planner knows the rows it plans for.

``export``: loads ``--pairs`` annotated traces (bench/export.py's data: one accepted error annotation per trace, so
one DPO pair and one error-correction sample each, screenshots shared) and times one ``trl`` export per worker count
from queueing to its end (shards of ``--export-shard`` annotations, then the assembly of one bundle); every run's
bundle must have the same sha256.

``import``: writes a native zip of ``--import-steps`` steps (traces of ``--trace-steps``, a distinct 320×200 PNG per
step and a final screen per trace: imports decode, hash, store and thumbnail every screenshot), a new archive and
project per worker count (screenshots are stored once by hash, so a second run of the same images would store
none), stores it as an upload and times one import from queueing to its end (the plan: unpack, cut into shards of
``--import-shard`` trace folders and store each shard's part; then the shards on every worker).

Reports throughput per worker count, each worker's peak resident memory (``peak_rss_mb``: its VmHWM, read before
it is stopped; ``--pool solo`` runs the tasks in the worker process itself), the CPU seconds each worker spent on the
job (``worker_cpu_s``, all its threads) and the cores they kept busy on average (``cores_busy``: an import worker
decodes, hashes and writes screenshots on ``STUDIO_IMPORT_WRITE_THREADS`` threads, so one worker alone may keep
more than one core busy, and the room left for a second worker on the same machine is what it did not use), and the
scaling efficiency (throughput ÷ (workers × single-worker throughput); goal ≥ 0.8 up to the machine's cores) with
the cores and the load average seen, and where each run's time went (``phases_s``: the plan until the shards exist,
the shards, and the job's end after the last shard, an export's assembly of its bundle; polled every 0.2 s). DEBUG is off in the bench and its workers, as in production. The projects and their rows are deleted at the
end.
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

    from traces import grammar
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


def _analyze() -> str:
    """Give PostgreSQL's planner the statistics of what was just loaded, as autovacuum does on a deployed database
    within a minute of a big load; returns the server's autovacuum setting, for the report. Without them (a server
    running with autovacuum off, as the development machine's does) the planner took a million-pair project for a
    small one and read all its annotations for each 500 ids of an export shard (479 ms a query against 4.4 ms)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("SHOW autovacuum")
        return cursor.fetchone()[0]


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


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB; with ``--pool solo`` the worker runs its tasks itself."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) * 1024 / 1e6, 1)
    return 0.0


def _cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system, all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(workers: int, env: dict, create) -> tuple:
    """Start ``workers`` workers, queue the job ``create()`` makes, wait for its end; (job, seconds, load before,
    each worker's peak RSS in MB and the CPU seconds it spent on the job, read before it is stopped)."""
    procs = [_worker(env) for _ in range(workers)]
    peaks: list = []
    cpu: list = []
    try:
        time.sleep(6)  # the workers connect
        load_before = os.getloadavg()[0]
        idle_cpu = [_cpu_seconds(proc.pid) for proc in procs]
        started = time.perf_counter()
        job = create()
        marks: dict = {}
        while True:
            job.refresh_from_db()
            if job.is_finished:
                break
            _phase_marks(job, marks, time.perf_counter() - started)
            time.sleep(0.2)
        seconds = time.perf_counter() - started
        peaks = [_peak_rss_mb(proc.pid) for proc in procs]
        cpu = [round(_cpu_seconds(proc.pid) - idle, 1) for proc, idle in zip(procs, idle_cpu)]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
    return (
        job,
        seconds,
        load_before,
        {
            "peak_rss_mb": peaks,
            "worker_cpu_s": cpu,
            "cores_busy": round(sum(cpu) / seconds, 2),
            "phases_s": _phases(marks, seconds),
        },
    )


def _phase_marks(job, marks: dict, now: float) -> None:
    """Note when the job's plan had made its shards and when the last of them ended (polled, so within ~0.2 s)."""
    from studio.models import JobShard, ShardStatus

    shards = JobShard.objects.filter(job_model=job._meta.label, job_id=job.pk)
    if "planned" not in marks and shards.exists():
        marks["planned"] = now
    if "planned" in marks and "shards_ended" not in marks:
        if not shards.filter(status__in=[ShardStatus.QUEUED, ShardStatus.RUNNING]).exists():
            marks["shards_ended"] = now


def _phases(marks: dict, seconds: float) -> dict:
    """Split a run's seconds into the plan (until the shards exist), the shards, and the end (the job's last task:
    an export's assembly of the bundle; nothing much for pre-scoring and import, whose last shard ends the job)."""
    planned = marks.get("planned", seconds)
    shards_ended = marks.get("shards_ended", seconds)
    return {
        "plan": round(planned, 1),
        "shards": round(shards_ended - planned, 1),
        "end": round(seconds - shards_ended, 1),
    }


def _shard_count(job) -> int:
    from studio.models import JobShard

    return JobShard.objects.filter(job_model=job._meta.label, job_id=job.pk).count()


def _run(project, lead, workers: int, env: dict) -> dict:
    from prescoring.services import prescore_job_create
    from studio.jobs import job_delete

    job, seconds, load_before, usage = _timed(
        workers, env, lambda: prescore_job_create(project=project, user=lead, scorer="rules")
    )
    result = {
        "workers": workers,
        "status": job.status,
        "steps": job.steps_scored,
        "shards": _shard_count(job),
        "seconds": round(seconds, 2),
        "per_s": round(job.steps_scored / seconds, 1),
        **usage,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    job_delete(job)  # its suggestions in batches, its shards
    return result


def _run_export(project, engineer, workers: int, env: dict) -> dict:
    from exports.services import export_job_create
    from studio.jobs import job_delete

    job, seconds, load_before, usage = _timed(
        workers, env, lambda: export_job_create(project=project, user=engineer, fmt="trl")
    )
    pairs = (job.counts or {}).get("by_kind", {}).get("dpo", 0)
    result = {
        "workers": workers,
        "status": job.status,
        "message": job.message if job.status != "succeeded" else "",
        "dpo_pairs": pairs,
        "shards": _shard_count(job),
        "seconds": round(seconds, 2),
        "per_s": round(pairs / seconds, 1),
        "bundle_mb": round(job.bundle_size / 1e6, 1),
        "bundle_sha256": job.bundle_sha256,
        **usage,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    job_delete(job)  # its shards, bundle and parts
    return result


def _import_archive(path: Path, *, steps: int, trace_steps: int, salt: str) -> int:
    import zipfile

    from PIL import Image, ImageDraw

    def png(label: str) -> bytes:
        image = Image.new("RGB", (320, 200), (240, 240, 245))
        ImageDraw.Draw(image).text((10, 10), label, fill=(30, 30, 30))
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        return buffer.getvalue()

    made = 0
    with zipfile.ZipFile(path, "w") as zf:
        for number in range((steps + trace_steps - 1) // trace_steps):
            folder = f"batch/t{number:06d}"
            records = []
            for index in range(1, trace_steps + 1):
                zf.writestr(f"{folder}/s{index:03d}.png", png(f"{salt} trace {number} step {index}"))
                text = ACTIONS[(number + index) % len(ACTIONS)].format(x=100 + 13 * index, y=80 + 7 * index, n=index)
                records.append({"screenshot": f"s{index:03d}.png", "thought": "Next.", "action": text})
            zf.writestr(f"{folder}/final.png", png(f"{salt} trace {number} final"))
            document = {"external_id": f"imp-{number}", "instruction": "Save the report.", "steps": records}
            zf.writestr(f"{folder}/trace.json", json.dumps({**document, "final_screenshot": "final.png"}))
            made += trace_steps
    return made


def _run_import(lead, workers: int, env: dict, *, steps: int, trace_steps: int, tag: str) -> dict:
    from django.core.files import File

    from traces.models import Project
    from traces.services import import_job_create, import_upload_store

    project = Project.objects.create(name=f"scale-import-{tag}-{workers}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            archive = Path(tmp) / "batch.zip"
            _import_archive(archive, steps=steps, trace_steps=trace_steps, salt=f"{tag}-{workers}")
            size = archive.stat().st_size
            with archive.open("rb") as handle:
                name = import_upload_store(uploaded_file=File(handle, name="batch.zip"))
        job, seconds, load_before, usage = _timed(
            workers,
            env,
            lambda: import_job_create(project=project, user=lead, upload_name=name, original_name="batch.zip"),
        )
        return {
            "workers": workers,
            "status": job.status,
            "message": job.message,
            "steps": job.steps_imported,
            "archive_mb": round(size / 1e6, 1),
            "shards": _shard_count(job),
            "seconds": round(seconds, 2),
            "per_s": round(job.steps_imported / seconds, 1),
            **usage,
            "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2),
        }
    finally:
        from traces.services import project_delete

        project_delete(project=project)


def _efficiency(results: list[dict]) -> None:
    base = results[0]["per_s"] / results[0]["workers"]
    for r in results:
        r["efficiency"] = round(r["per_s"] / (r["workers"] * base), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="prescore,export,import", help="which sharded jobs to time")
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--trace-steps", type=int, default=20)
    parser.add_argument("--shard-steps", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=200_000, help="DPO pairs (annotated traces) to export")
    parser.add_argument("--images", type=int, default=2000, help="distinct screenshots the exported traces share")
    parser.add_argument("--export-shard", type=int, default=2000, help="annotations per export shard")
    parser.add_argument("--import-steps", type=int, default=20_000, help="steps in the imported archive")
    parser.add_argument("--import-shard", type=int, default=50, help="trace folders per import shard")
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        sys.exit("bench/scale.py measures workers sharing Redis and PostgreSQL: set DATABASE_URL and REDIS_URL")
    jobs = set(args.jobs.split(","))
    data_dir = Path(tempfile.mkdtemp(prefix="studio-scale-"))
    os.environ["STUDIO_DEBUG"] = "0"  # as in production: no query log (a million pairs' inserts) in any process
    os.environ["STUDIO_PRESCORE_SHARD_STEPS"] = str(args.shard_steps)
    os.environ["STUDIO_EXPORT_SHARD_ANNOTATIONS"] = str(args.export_shard)
    os.environ["STUDIO_IMPORT_SHARD_TRACES"] = str(args.import_shard)
    _setup_django(data_dir)
    from bench.export import load_pairs
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Project

    tag = uuid.uuid4().hex[:6]
    lead = user_create_with_role(username=f"scale-lead-{tag}", password=uuid.uuid4().hex, role=Role.LEAD)
    engineer = user_create_with_role(username=f"scale-eng-{tag}", password=uuid.uuid4().hex, role=Role.ENGINEER)
    projects = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    counts = [int(n) for n in args.workers.split(",")]
    report: dict = {"cores": os.cpu_count()}
    try:
        if "prescore" in jobs:
            project = Project.objects.create(name=f"scale-{tag}")
            projects.append(project)
            t0 = time.perf_counter()
            steps = _load(project, steps=args.steps, trace_steps=args.trace_steps)
            report["autovacuum"] = _analyze()
            print(f"loaded {steps} steps in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            results = []
            for count in counts:
                results.append(_run(project, lead, count, env))
                print(json.dumps(results[-1]), file=sys.stderr)
            _efficiency(results)
            report["prescore"] = {"steps": steps, "shard_steps": args.shard_steps, "runs": results}
        if "export" in jobs:
            project = Project.objects.create(name=f"scale-export-{tag}")
            projects.append(project)
            t0 = time.perf_counter()
            load_pairs(project, engineer, pairs=args.pairs, n_images=args.images, n_steps=3)
            report["autovacuum"] = _analyze()
            print(f"loaded {args.pairs} annotated traces in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            results = []
            for count in counts:
                results.append(_run_export(project, engineer, count, env))
                print(json.dumps(results[-1]), file=sys.stderr)
            _efficiency(results)
            digests = {r["bundle_sha256"] for r in results}
            report["export"] = {
                "pairs": args.pairs,
                "shard_annotations": args.export_shard,
                "same_bytes_every_run": len(digests) == 1,
                "runs": results,
            }
        if "import" in jobs:
            results = []
            for count in counts:
                results.append(
                    _run_import(lead, count, env, steps=args.import_steps, trace_steps=args.trace_steps, tag=tag)
                )
                print(json.dumps(results[-1]), file=sys.stderr)
            _efficiency(results)
            report["import"] = {"steps": args.import_steps, "shard_traces": args.import_shard, "runs": results}
        print(json.dumps(report, indent=2))
    finally:
        from traces.services import project_delete

        for project in projects:
            project_delete(project=project)  # in batches: a million-pair project's one delete() passed 1.5 GB
        lead.delete()
        engineer.delete()


if __name__ == "__main__":
    main()
