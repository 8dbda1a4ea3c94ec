"""Import latency beside trickling webhook receivers, in the embedded default's one worker.

    .venv/bin/python bench/webhook_isolation.py [--traces 30] [--interval 5] [--events 2] [--receivers 3]

``--receivers`` endpoints answer a byte every ``--interval`` seconds (each read gets a byte before any per-read
timeout). The script starts the worker as `runstudio` does (one process, a pool of threads, consuming `default,gpu`
and `webhooks`, at most STUDIO_WEBHOOKS_DELIVERIES_PER_PROCESS deliveries at once), imports ``--traces`` traces with
nobody trickling (the baseline), then fires ``--events`` events to every endpoint (3 × 2 deliveries by default:
more than the delivery slots), waits until deliveries are trickling, and imports as many traces again. It reports
both imports' latency (queued to succeeded), the deliveries trickling as the second import starts and ends, their
outcome and whether the second import finished within 1.5× the baseline plus 5 s. Broker and database: kombu's
filesystem broker and SQLite in a temporary folder, or Redis and PostgreSQL when REDIS_URL / DATABASE_URL are set
(give them a database of their own: the script migrates it)."""

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
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=30)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--events", type=int, default=2)
    parser.add_argument(
        "--receivers", type=int, default=3, help="trickling endpoints (3 × 2 events: more than the slots)"
    )
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-webhooks-"))
    os.environ.update(
        STUDIO_DATA_DIR=str(scratch / "data"),
        STUDIO_MODE="dev",
        STUDIO_WEBHOOKS_ALLOW_HTTP_HOSTS="127.0.0.1",
        DJANGO_SETTINGS_MODULE="studio.settings",
        PYTHONUNBUFFERED="1",
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, check=True, capture_output=True)

    import django

    django.setup()
    from studio.management.commands.runstudio import embedded_worker_command, embedded_worker_environment
    from studio.permissions import Role
    from studio.services import user_create
    from tests.factories import native_trace_folder
    from tests.fixtures_webhooks import Trickler
    from traces.models import ImportJob
    from traces.services import import_job_create, project_create
    from webhooks.models import Delivery, Webhook
    from webhooks.services import event_emit

    lead = user_create(username=f"bench-lead-{os.getpid()}", role=Role.LEAD, password="bench-Password-0000")
    project = project_create(name=f"webhook bench {os.getpid()}", members=[lead])
    # The embedded default's one worker, as runstudio starts it: the job queues and `webhooks` in one process.
    workers = [
        subprocess.Popen(
            embedded_worker_command("default,gpu"),
            cwd=REPO,
            env={**os.environ, **embedded_worker_environment()},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    tricklers = [Trickler(interval_s=args.interval) for _ in range(args.receivers)]

    def timed_import(name: str) -> float:
        folder = scratch / name
        for n in range(args.traces):
            native_trace_folder(folder / f"t{n}", external_id=f"{name}-{n}", steps=2, size=(64, 48))
        started = time.monotonic()
        job = import_job_create(project=project, user=lead, upload_name=str(folder), server_path=True)
        while ImportJob.objects.get(pk=job.pk).status not in ("succeeded", "failed", "cancelled"):
            if time.monotonic() - started > 600:
                raise SystemExit(f"{name}: the import did not end in 600 s")
            time.sleep(0.2)
        assert ImportJob.objects.get(pk=job.pk).status == "succeeded", ImportJob.objects.get(pk=job.pk).errors
        return time.monotonic() - started

    try:
        time.sleep(8)  # the workers start
        baseline = timed_import("baseline")
        for trickler in tricklers:
            Webhook.objects.create(project=project, url=trickler.url, events=["bundle.ready"], secret="s" * 64)
        for n in range(args.events):
            event_emit(project=project, event="bundle.ready", payload={"export": {"id": n}})
        waited = time.monotonic()
        while sum(t.open for t in tricklers) == 0 and time.monotonic() - waited < 60:
            time.sleep(0.2)
        trickling = sum(t.open for t in tricklers)
        beside = timed_import("beside")
        report = {
            "traces": args.traces,
            "trickle_interval_s": args.interval,
            "deliveries": Delivery.objects.count(),
            "deliveries_trickling_at_import_start": trickling,
            "deliveries_trickling_at_import_end": sum(t.open for t in tricklers),
            "import_s_baseline": round(baseline, 2),
            "import_s_beside_trickling_receivers": round(beside, 2),
            "within_normal_time": beside <= 1.5 * baseline + 5,
            "delivery_errors": sorted({d.last_error[:80] for d in Delivery.objects.exclude(last_error="")}),
        }
        print(json.dumps(report, indent=2))
    finally:
        for trickler in tricklers:
            trickler.close()
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(30)


if __name__ == "__main__":
    main()
