"""Dashboard benchmark: the project and round dashboards' server time with 100,000 annotations on PostgreSQL.

    .venv/bin/python bench/dashboard.py [--annotations 100000] [--database-url postgres://postgres@127.0.0.1:5432/trace_bench_dashboard]

Creates the database if needed, migrates it, generates (once; kept for reruns) one project with
``--annotations`` annotations by 12 annotators over 90 days (10 % of traces double-annotated, two thirds of
the annotations reviewed through audit records), then times GET /api/projects/<id>/dashboard/ for the whole
range through Django's request handling (warm: the median of 7 requests after one warm-up). Target: ≤300 ms.
The project's traces are spread over ROUNDS rounds (made once), and GET /api/projects/<id>/rounds/dashboard/ (all
rounds side by side, all time) is timed the same way, against the same target.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

from database import ensure_database

REPO = Path(__file__).resolve().parent.parent
TARGET_MS = 300
PROJECT_NAME = "bench-dashboard"
ROUNDS = 8


def generate(n_annotations: int) -> None:
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Annotation, AuditEvent
    from annotation.services import trace_recount_standing_annotations
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Membership, Project, Trace
    from traces.vocabulary import ERROR_CATEGORIES

    if Project.objects.filter(name=PROJECT_NAME).exists():
        project = Project.objects.get(name=PROJECT_NAME)
        if Annotation.objects.filter(project=project).count() >= n_annotations:
            return
        project.delete()
    rng = random.Random(11)
    now = timezone.now()
    annotators = [
        user_create_with_role(username=f"bench-ann-{i}", password="bench-pass-1234", role=Role.ANNOTATOR)
        for i in range(12)
    ]
    lead = user_create_with_role(username="bench-lead", password="bench-pass-1234", role=Role.LEAD)
    project = Project.objects.create(name=PROJECT_NAME, double_annotation_share=0.1)
    Membership.objects.bulk_create([Membership(project=project, user=u) for u in [*annotators, lead]])
    n_traces = int(n_annotations / 1.1) + 1
    with transaction.atomic():
        Trace.objects.bulk_create(
            [
                Trace(
                    project=project,
                    coordinate_convention=project.coordinate_convention,
                    external_id=f"t{i}",
                    instruction="bench",
                    source="bench",
                    step_count=rng.randint(3, 30),
                )
                for i in range(n_traces)
            ],
            batch_size=5000,
        )
    traces = list(Trace.objects.filter(project=project).values_list("id", "step_count"))
    rows = []
    for i in range(n_annotations):
        trace_id, steps = traces[i % len(traces)]
        annotator = (
            annotators[(i // len(traces) + trace_id) % len(annotators)]
            if i >= len(traces)
            else annotators[trace_id % len(annotators)]
        )
        roll = rng.random()
        verdict = "error" if roll < 0.6 else ("no_error" if roll < 0.9 else "unusable")
        tau = rng.randint(1, steps) if verdict == "error" else None
        status = rng.choices(["submitted", "accepted", "rejected", "draft"], [25, 55, 12, 8])[0]
        submitted = None if status == "draft" else now - timedelta(days=rng.uniform(0, 90))
        rows.append(
            Annotation(
                trace_id=trace_id,
                project=project,
                annotator=annotator,
                status=status,
                verdict=verdict,
                tau=tau,
                error_category=rng.choice(ERROR_CATEGORIES) if verdict == "error" else "",
                corrected_action=f"click(start_box='<|box_start|>({rng.randint(0, 1000)},{rng.randint(0, 1000)})<|box_end|>')"
                if verdict == "error"
                else "",
                time_spent_s=int(rng.lognormvariate(5, 0.6)),
                submitted_at=submitted,
                reviewed_at=submitted + timedelta(hours=2) if status in ("accepted", "rejected") else None,
            )
        )
    with transaction.atomic():
        Annotation.objects.bulk_create(rows, batch_size=5000)
        trace_recount_standing_annotations(
            traces=Trace.objects.filter(project=project)
        )  # bulk rows skip the state machine
    audit = [
        AuditEvent(
            annotation_id=a_id,
            project=project,
            annotator_id=annotator_id,
            actor=lead,
            kind="transition",
            from_status="submitted",
            to_status=status,
        )
        for a_id, annotator_id, status in Annotation.objects.filter(
            project=project, status__in=["accepted", "rejected"]
        ).values_list("id", "annotator_id", "status")
    ]
    with transaction.atomic():
        AuditEvent.objects.bulk_create(audit, batch_size=5000)
    # auto_now_add stamped every decision now: spread them over the 90 days like the reviews they stand for
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE annotation_auditevent e SET at = a.reviewed_at FROM annotation_annotation a "
            "WHERE e.annotation_id = a.id AND a.reviewed_at IS NOT NULL"
        )
        cursor.execute("ANALYZE")


def ensure_rounds() -> None:
    """ROUNDS rounds a week apart, the traces dealt to them by id (the first tenth left in no round)."""
    from datetime import UTC, datetime

    from django.db.models import Max, Min

    from traces.models import Project, Round, Trace
    from traces.services import round_create

    project = Project.objects.get(name=PROJECT_NAME)
    if Round.objects.filter(project=project).count() == ROUNDS:
        return
    Trace.objects.filter(project=project).update(round=None)  # a run stopped half-way: deal them again
    Round.objects.filter(project=project).delete()
    bounds = Trace.objects.filter(project=project).aggregate(low=Min("id"), high=Max("id"))
    span = bounds["high"] - bounds["low"] + 1
    start = bounds["low"] + span // 10
    step = (bounds["high"] + 1 - start) // ROUNDS + 1
    for n in range(ROUNDS):
        made = round_create(
            project=project,
            name=f"week {n + 1}",
            checkpoint=f"bench-m{n + 1}",
            ran_at=datetime(2026, 9, 1, tzinfo=UTC) + timedelta(days=7 * n),
        )
        Trace.objects.filter(project=project, id__gte=start + n * step, id__lt=start + (n + 1) * step).update(
            round=made
        )


def _timed(client, url: str) -> tuple[list[float], dict]:
    timings = []
    for i in range(8):
        started = time.perf_counter()
        response = client.get(url)
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content[:500]
        if i:
            timings.append(elapsed)
    return timings, response.json()


def measure() -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone

    from annotation.models import Annotation
    from traces.models import Project

    project = Project.objects.get(name=PROJECT_NAME)
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-lead"))
    day_from = (timezone.now() - timedelta(days=90)).date().isoformat()
    timings, body = _timed(client, f"/api/projects/{project.pk}/dashboard/?from={day_from}")
    round_timings, rounds = _timed(client, f"/api/projects/{project.pk}/rounds/dashboard/")
    return {
        "annotations": Annotation.objects.filter(project=project).count(),
        "median_ms": statistics.median(timings),
        "max_ms": max(timings),
        "done_in_range": body["verdicts"]["done"],
        "pairs": body["agreement"]["pairs"],
        "rounds": len(rounds["rounds"]),
        "round_answers": sum(r["answers"] for r in rounds["rounds"]),
        "rounds_median_ms": statistics.median(round_timings),
        "rounds_max_ms": max(round_timings),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotations", type=int, default=100_000)
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/trace_bench_dashboard"),
    )
    args = parser.parse_args()
    ensure_database(args.database_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ.setdefault("STUDIO_DATA_DIR", str(Path("/tmp") / "trace-bench-dashboard"))
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    generate(args.annotations)
    ensure_rounds()
    print(f"data ready in {time.perf_counter() - started:.1f} s")
    result = measure()
    verdict = "OK" if result["median_ms"] <= TARGET_MS else "OVER TARGET"
    print(
        f"dashboard: {result['annotations']} annotations, {result['done_in_range']} done in range, "
        f"{result['pairs']} agreement pairs; server time median {result['median_ms']:.0f} ms, "
        f"max {result['max_ms']:.0f} ms (target ≤{TARGET_MS} ms: {verdict})"
    )
    verdict = "OK" if result["rounds_median_ms"] <= TARGET_MS else "OVER TARGET"
    print(
        f"round dashboard: {result['rounds']} columns (rounds, and traces in none), {result['round_answers']} standing "
        f"answers; server time median {result['rounds_median_ms']:.0f} ms, max {result['rounds_max_ms']:.0f} ms "
        f"(target ≤{TARGET_MS} ms: {verdict})"
    )


if __name__ == "__main__":
    main()
