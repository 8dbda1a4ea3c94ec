"""Search benchmark: p95 server time of a search with text and three facets (facet counts and a page of step cards
included), on the embedded default (SQLite) or on PostgreSQL.

    .venv/bin/python bench/search.py [--steps 50000] [--annotations 5000]            # embedded (SQLite file)
    .venv/bin/python bench/search.py --database-url postgres://postgres@127.0.0.1:5432/trace_bench_search \\
        --steps 1000000 --annotations 100000                                            # full stack

Generates (once; kept for reruns) one project with ``--steps`` steps over traces of 3-30 steps in four rounds and
``--annotations`` annotations (60 % with a first error, so a search entry each), their search entries written in bulk
with the text and facets ``insights.services.search_entry_refresh`` would give them (one by one it takes minutes at
this size). 3 % of the corrections carry a planted phrase. Then times GET /api/projects/<id>/search/ through Django's
request handling: 40 searches (q plus category, round and displacement, varied), after two warm-up requests; then
the same 40 with q alone (every match ranked best first, the facets counted over all of them).
Targets: embedded, 50,000 steps, p95 ≤ 200 ms; PostgreSQL, 1,000,000 steps and 100,000 annotations,
p95 ≤ 300 ms. Reported, not asserted.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

from database import ensure_database

REPO = Path(__file__).resolve().parent.parent
PROJECT_NAME = "bench-search"
ROUNDS = 4
PHRASE = "typed before clicking the field"
WORDS = (
    "button menu dialog settings search field list page scroll window tab link icon banner form save open close "
    "confirm order cart login password email address folder file share upload download"
).split()
DISPLACEMENTS = ("no point", "under 2%", "2–10%", "10–30%", "over 30%")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def generate(n_steps: int, n_annotations: int) -> None:
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Annotation
    from insights import search_text
    from insights.models import SearchEntry
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Membership, Project, Round, Step, Trace
    from traces.vocabulary import ERROR_CATEGORIES

    existing = Project.objects.filter(name=PROJECT_NAME).first()
    if existing is not None:
        if Step.objects.filter(trace__project=existing).count() >= n_steps:
            return
        existing.delete()
    rng = random.Random(36)
    now = timezone.now()
    annotators = [
        user_create_with_role(username=f"bench-search-ann-{i}", password="bench-pass-1234", role=Role.ANNOTATOR)
        for i in range(8)
    ]
    lead = user_create_with_role(username="bench-search-lead", password="bench-pass-1234", role=Role.LEAD)
    project = Project.objects.create(name=PROJECT_NAME)
    Membership.objects.bulk_create([Membership(project=project, user=u) for u in [*annotators, lead]])
    rounds = [
        Round.objects.create(project=project, name=f"week {i + 1}", checkpoint=f"agent-v{i + 1}", ran_at=now)
        for i in range(ROUNDS)
    ]
    lengths = []
    while sum(lengths) < n_steps:
        lengths.append(rng.randint(3, 30))
    with transaction.atomic():
        Trace.objects.bulk_create(
            [
                Trace(
                    project=project,
                    coordinate_convention=project.coordinate_convention,
                    external_id=f"t{i}",
                    instruction=f"Please {_sentence(rng, 6)}",
                    source="bench",
                    step_count=n,
                    round=rounds[i % ROUNDS],
                    metadata={"app": rng.choice(["Gmail", "Maps", "Settings", "Chrome"])},
                )
                for i, n in enumerate(lengths)
            ],
            batch_size=5000,
        )
    traces = list(Trace.objects.filter(project=project).values_list("id", "step_count", "round_id", "instruction"))
    batch = []
    for trace_id, count, _, _ in traces:
        for index in range(1, count + 1):
            batch.append(
                Step(
                    trace_id=trace_id,
                    index=index,
                    thought=f"I will {_sentence(rng, 8)}",
                    action_text=f"click(start_box='({rng.randint(0, 1000)},{rng.randint(0, 1000)})')",
                )
            )
            if len(batch) >= 20000:
                Step.objects.bulk_create(batch)
                batch = []
    Step.objects.bulk_create(batch)
    step_ids = dict(
        ((t, i), pk) for pk, t, i in Step.objects.filter(trace__project=project).values_list("id", "trace_id", "index")
    )
    rows, entries = [], []
    for n in range(min(n_annotations, len(traces) * len(annotators))):
        trace_id, count, _, _ = traces[n % len(traces)]
        annotator = annotators[(n // len(traces)) % len(annotators)]
        error = rng.random() < 0.6
        tau = rng.randint(1, count) if error else None
        planted = error and rng.random() < 0.03
        thought = (PHRASE + ". Click the field first.") if planted else f"Should {_sentence(rng, 10)}"
        category = rng.choice(ERROR_CATEGORIES) if error else ""
        status = rng.choices(["submitted", "accepted", "rejected"], [25, 60, 15])[0]
        rows.append(
            Annotation(
                trace_id=trace_id,
                project=project,
                annotator=annotator,
                status=status,
                verdict="error" if error else "no_error",
                tau=tau,
                error_category=category,
                corrected_thought=thought if error else "",
                corrected_action="click(start_box='(500,80)')" if error else "",
                note=_sentence(rng, 4) if error else "",
                submitted_at=now,
            )
        )
    with transaction.atomic():
        made = Annotation.objects.bulk_create(rows, batch_size=5000)
    for a in made:
        if a.verdict != "error":
            continue
        entries.append(
            SearchEntry(
                annotation_id=a.pk,
                project=project,
                trace_id=a.trace_id,
                step_id=step_ids.get((a.trace_id, a.tau)),
                annotator_id=a.annotator_id,
                **search_text.entry_texts(a, None, instruction=""),
                status=a.status,
                verdict=a.verdict,
                category=a.error_category,
                recorded_type="click",
                corrected_type="click",
                displacement=rng.choice(DISPLACEMENTS),
                tau=a.tau,
            )
        )
    by_trace = {t[0]: t for t in traces}
    for e in entries:
        _, count, round_id, _ = by_trace[e.trace_id]
        e.round_id, e.step_count = round_id, count
    with transaction.atomic():
        SearchEntry.objects.bulk_create(entries, batch_size=5000)


def _database_cpu_seconds() -> float:
    """CPU time of this connection's PostgreSQL server process so far (from ``/proc``: a server on this machine),
    0 on SQLite (its work runs in this process) or where it cannot be read."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def measure(*, facets: bool = True) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from insights.models import SearchEntry
    from traces.models import Project, Round, Step
    from traces.vocabulary import ERROR_CATEGORIES

    project = Project.objects.get(name=PROJECT_NAME)
    rounds = list(Round.objects.filter(project=project).values_list("pk", flat=True))
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-search-lead"))
    rng = random.Random(5)
    timings, cpu_timings, found = [], [], []
    for i in range(42):
        params = {
            "q": rng.choice([f'"{PHRASE}"', "field", rng.choice(WORDS) + " " + rng.choice(WORDS)]),
            "category": rng.choice(ERROR_CATEGORIES),
            "round": rng.choice(rounds),
            "displacement": rng.choice(DISPLACEMENTS),
        }
        if not facets:  # the text alone: every match ranked, the facets counted over all of them
            params = {"q": params["q"]}
        started, cpu_started, db_started = time.perf_counter(), time.process_time(), _database_cpu_seconds()
        response = client.get(f"/api/projects/{project.pk}/search/", params)
        elapsed = (time.perf_counter() - started) * 1000
        cpu = (time.process_time() - cpu_started + _database_cpu_seconds() - db_started) * 1000
        assert response.status_code == 200, response.content[:500]
        if i >= 2:
            timings.append(elapsed)
            cpu_timings.append(cpu)
            found.append(response.json()["count"])
    timings.sort()
    cpu_timings.sort()
    return {
        "steps": Step.objects.filter(trace__project=project).count(),
        "entries": SearchEntry.objects.filter(project=project).count(),
        "median_ms": statistics.median(timings),
        "p95_ms": timings[int(0.95 * (len(timings) - 1))],
        "max_ms": timings[-1],
        # CPU time of this process and of its PostgreSQL server process (SQLite runs in this one): on a loaded
        # machine the wall time waits for a core, this does not.
        "cpu_p95_ms": cpu_timings[int(0.95 * (len(cpu_timings) - 1))],
        "mean_found": statistics.mean(found),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--annotations", type=int, default=5_000)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", ""))
    parser.add_argument("--sqlite", default=str(Path("/tmp") / "trace-bench-search" / "studio.sqlite3"))
    args = parser.parse_args()
    if args.database_url:
        ensure_database(args.database_url)
        os.environ["DATABASE_URL"] = args.database_url
        target = 300
    else:
        os.environ.pop("DATABASE_URL", None)
        Path(args.sqlite).parent.mkdir(parents=True, exist_ok=True)
        os.environ["STUDIO_SQLITE_PATH"] = args.sqlite
        target = 200
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ.setdefault("STUDIO_DATA_DIR", str(Path("/tmp") / "trace-bench-search"))
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    generate(args.steps, args.annotations)
    if args.database_url:
        from django.db import connection

        # Planner statistics for the bulk-written tables now, as autovacuum would make them a while later.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"data ready in {time.perf_counter() - started:.1f} s")
    for facets in (True, False):
        r = measure(facets=facets)
        verdict = "OK" if r["p95_ms"] <= target else "OVER TARGET"
        print(
            f"search ({'PostgreSQL' if args.database_url else 'SQLite'}): {r['steps']} steps, {r['entries']} search "
            f"entries; q{' + 3 facets' if facets else ' alone'}, {r['mean_found']:.1f} found on average; server "
            f"time median {r['median_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms, max {r['max_ms']:.0f} ms, "
            f"CPU p95 {r['cpu_p95_ms']:.0f} ms"
            + (f" (target ≤{target} ms: {verdict})" if facets else " (no target: every match ranked)")
        )


if __name__ == "__main__":
    main()
