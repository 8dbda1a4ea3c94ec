"""Quality control at scale: the queue's claim with gold mixed in beside today's claim, and the quality dashboard.

    .venv/bin/python bench/quality.py [--annotators 100] [--traces 10000] [--gold-share 0.1] [--answers 1000000]
        [--claims 60] [--database-url postgres://postgres@127.0.0.1:5432/trace_bench_quality]

Two projects of the same shape in one database (made once, kept for reruns with the same sizes): "plain" without
quality control (today's claim) and "gold" with ``--gold-share`` of its traces gold (a lead's accepted answer as
their reference) and ``gold_every`` 10. In each, ``--answers`` submitted answers by ``--annotators`` annotators over
90 days, dealt to every trace in turn (so each trace has about answers / traces of them), less ``OPEN`` traces per
project that nobody answered (what the queue still gives out) and, in the gold project, the gold answers: each
annotator has met all but ``UNSEEN_GOLD`` of the gold traces, each answer scored (a ``GoldScore`` row).

Then, interleaved so that the machine's load falls on all alike, ``--claims`` claims of each kind, each by the next
annotator, timed, inside a transaction rolled back afterwards (every claim meets the same world): today's claim
(``lease_next_trace`` as it was at ``--today-rev``, read from git, on the plain project), this claim on the plain
project, and this claim on the gold project, where half the annotators stand at a gold position of their count
(``QueueTally``), so about half its claims hand out a gold trace. Target: the gold project's claim p95 within 10 %
of today's. Then
GET /api/projects/<id>/quality/ over the 90 days through Django's request handling, 9 times (the first a warm-up):
target p95 ≤ 300 ms.
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
DASHBOARD_TARGET_MS = 300
CLAIM_SLACK = 1.10
OPEN = 500
UNSEEN_GOLD = 20
GOLD_EVERY = 10


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def _project_name(kind: str, args) -> str:
    return f"bench-quality-{kind}-{args.annotators}x{args.traces}x{args.answers}"


def generate(kind: str, args) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import (
        Annotation,
        AnnotationKind,
        GoldScore,
        GoldTrace,
        QualitySettings,
        QueueTally,
    )
    from annotation.services import trace_recount_standing_annotations
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Membership, Project, Step, Trace

    name = _project_name(kind, args)
    if Project.objects.filter(name=name).exists():
        return
    rng = random.Random(7)
    now = timezone.now()
    users = []
    for i in range(args.annotators):
        username = f"bench-q-{i}"
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(username=username).first()
        users.append(user or user_create_with_role(username=username, password="bench-pass-1234", role=Role.ANNOTATOR))
    from django.contrib.auth import get_user_model

    lead = get_user_model().objects.filter(username="bench-q-lead").first() or user_create_with_role(
        username="bench-q-lead", password="bench-pass-1234", role=Role.LEAD
    )
    project = Project.objects.create(name=name)
    Membership.objects.bulk_create([Membership(project=project, user=u) for u in [*users, lead]])
    with transaction.atomic():
        Trace.objects.bulk_create(
            [
                Trace(
                    project=project,
                    coordinate_convention=project.coordinate_convention,
                    external_id=f"t{i}",
                    instruction="bench",
                    source="bench",
                    step_count=4,
                )
                for i in range(args.traces)
            ],
            batch_size=5000,
        )
    trace_ids = list(Trace.objects.filter(project=project).order_by("id").values_list("id", flat=True))
    Step.objects.bulk_create(
        [
            Step(trace_id=t, index=i, action_text=f"click(start_box='({i * 100},{i * 50})')")
            for t in trace_ids
            for i in range(1, 5)
        ],
        batch_size=10000,
    )
    n_gold = int(args.traces * args.gold_share) if kind == "gold" else 0
    gold_ids, rest = trace_ids[:n_gold], trace_ids[n_gold:]
    answered, open_ids = rest[: len(rest) - OPEN], rest[len(rest) - OPEN :]
    del open_ids  # nobody answered them: what the queue still gives out

    def answer(trace_id: int, annotator, status: str, answer_kind=AnnotationKind.PRODUCTION) -> Annotation:
        roll = rng.random()
        verdict = "error" if roll < 0.6 else ("no_error" if roll < 0.95 else "unusable")
        submitted = now - timedelta(days=rng.uniform(0, 89))
        return Annotation(
            trace_id=trace_id,
            project=project,
            annotator=annotator,
            kind=answer_kind,
            status=status,
            verdict=verdict,
            tau=rng.randint(1, 4) if verdict == "error" else None,
            error_category="other" if verdict == "error" else "",
            corrected_action=f"click(start_box='({rng.randint(0, 1000)},{rng.randint(0, 1000)})')"
            if verdict == "error"
            else "",
            time_spent_s=int(rng.lognormvariate(4, 0.6)),
            submitted_at=submitted,
            reviewed_at=submitted + timedelta(hours=2) if status == "accepted" else None,
        )

    # The references: the lead's accepted answers on the gold traces.
    references = [answer(t, lead, "accepted") for t in gold_ids]
    for ref in references:
        ref.verdict, ref.tau, ref.error_category = "error", 3, "other"
        ref.corrected_action = "click(start_box='(300,260)')"
    Annotation.objects.bulk_create(references, batch_size=5000)
    for ref in Annotation.objects.filter(project=project, annotator=lead):
        GoldTrace.objects.create(
            trace_id=ref.trace_id, project=project, reference=ref, reference_version=1, marked_by=lead
        )
    gold_answers = len(users) * max(0, n_gold - UNSEEN_GOLD)
    production = max(0, args.answers - gold_answers)
    rows: list[Annotation] = []
    per_trace = max(1, production // max(1, len(answered)))
    made = 0
    with transaction.atomic():
        for position, trace_id in enumerate(answered):
            for k in range(min(per_trace, len(users))):
                if made >= production:
                    break
                status = rng.choices(["submitted", "accepted", "rejected"], [25, 65, 10])[0]
                rows.append(answer(trace_id, users[(position + k) % len(users)], status))
                made += 1
            if len(rows) >= 20000:
                Annotation.objects.bulk_create(rows, batch_size=5000)
                rows = []
        for user in users:
            for trace_id in gold_ids[: max(0, n_gold - UNSEEN_GOLD)]:
                rows.append(answer(trace_id, user, "submitted", AnnotationKind.GOLD))
            if len(rows) >= 20000:
                Annotation.objects.bulk_create(rows, batch_size=5000)
                rows = []
        Annotation.objects.bulk_create(rows, batch_size=5000)
    scores = []
    references_by_trace = dict(Annotation.objects.filter(project=project, annotator=lead).values_list("trace_id", "id"))
    gold_by_trace = dict(GoldTrace.objects.filter(project=project).values_list("trace_id", "id"))
    for pk, trace_id, annotator_id, verdict, tau, submitted_at in Annotation.objects.filter(
        project=project, kind=AnnotationKind.GOLD
    ).values_list("pk", "trace_id", "annotator_id", "verdict", "tau", "submitted_at"):
        right = verdict == "error" and tau == 3
        scores.append(
            GoldScore(
                annotation_id=pk,
                gold_id=gold_by_trace[trace_id],
                project=project,
                annotator_id=annotator_id,
                kind=AnnotationKind.GOLD,
                trace_id_kept=trace_id,
                reference_id_kept=references_by_trace[trace_id],
                reference_version=1,
                verdict_ok=verdict == "error",
                tau_exact_ok=right,
                tau_within_one_ok=verdict == "error" and tau is not None and abs(tau - 3) <= 1,
                category_ok=verdict == "error",
                action_type_ok=right,
                point_ok=right and rng.random() < 0.8,
                reflection_ok=None,
                correct=right,
                comparison={},
                submitted_at=submitted_at,
            )
        )
        if len(scores) >= 20000:
            GoldScore.objects.bulk_create(scores, batch_size=5000)
            scores = []
    GoldScore.objects.bulk_create(scores, batch_size=5000)
    trace_recount_standing_annotations(traces=Trace.objects.filter(project=project))
    # Each annotator's count of new traces: half of the gold project's stand just before a gold position.
    from annotation.quality.services import gold_position_is_gold

    tallies = []
    for i, user in enumerate(users):
        count = Annotation.objects.filter(project=project, annotator=user).count()
        if kind == "gold" and i % 2 == 0:
            while not gold_position_is_gold(position=count, user_id=user.pk, project_id=project.pk, every=GOLD_EVERY):
                count += 1
        tallies.append(QueueTally(project=project, annotator=user, handed_out=count, no_error_streak=rng.randint(0, 9)))
    QueueTally.objects.bulk_create(tallies)
    if kind == "gold":
        QualitySettings.objects.create(project=project, gold_every=GOLD_EVERY)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def todays_claim(rev: str):
    """``lease_next_trace`` as it was at ``rev`` (its module read from git and run under another name)."""
    import subprocess
    import types

    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:annotation/services/leases.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("bench_todays_leases")
    exec(compile(source, f"{rev}:annotation/services/leases.py", "exec"), module.__dict__)  # noqa: S102
    return module.lease_next_trace


def _claim_ms(project, user, claim_next=None) -> tuple[float, str]:
    from django.db import transaction

    from annotation.services import lease_next_trace

    claim_next = claim_next or lease_next_trace
    with transaction.atomic():
        started = time.perf_counter()
        claim = claim_next(user=user, project=project)
        elapsed = (time.perf_counter() - started) * 1000
        kind = claim[0].kind if claim else "none"
        transaction.set_rollback(True)
    return elapsed, kind


def measure(args) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.utils import timezone

    from annotation.models import Annotation, GoldScore
    from traces.models import Project

    plain = Project.objects.get(name=_project_name("plain", args))
    gold = Project.objects.get(name=_project_name("gold", args))
    users = list(
        get_user_model().objects.filter(username__startswith="bench-q-").exclude(username="bench-q-lead").order_by("pk")
    )
    today = todays_claim(args.today_rev)
    runs = [("today", plain, today), ("plain", plain, None), ("gold", gold, None)]
    timings: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    kinds: dict[str, int] = {}
    for _, project, claim_next in runs:
        _claim_ms(project, users[0], claim_next)
    for n in range(args.claims):
        user = users[n % len(users)]
        for name, project, claim_next in runs[n % 3 :] + runs[: n % 3]:
            elapsed, kind = _claim_ms(project, user, claim_next)
            timings[name].append(elapsed)
            if name == "gold":
                kinds[kind] = kinds.get(kind, 0) + 1
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-q-lead"))
    day_from = (timezone.now() - timedelta(days=90)).date().isoformat()
    dashboard = []
    for i in range(9):
        started = time.perf_counter()
        response = client.get(f"/api/projects/{gold.pk}/quality/?from={day_from}")
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content[:500]
        if i:
            dashboard.append(elapsed)
    body = response.json()
    return {
        "answers": {
            name: Annotation.objects.filter(project=p).count() for name, p in (("plain", plain), ("gold", gold))
        },
        "gold_scores": GoldScore.objects.filter(project=gold).count(),
        "claims": {name: (statistics.median(t), p95(t)) for name, t in timings.items()},
        "gold_kinds": kinds,
        "dashboard": (statistics.median(dashboard), p95(dashboard), max(dashboard)),
        "annotators": len(body["annotators"]),
        "flagged": body["flagged"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--gold-share", type=float, default=0.1)
    parser.add_argument("--answers", type=int, default=1_000_000)
    parser.add_argument("--claims", type=int, default=60)
    parser.add_argument("--today-rev", default="main", help="the git revision whose claim is today's")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/trace_bench_quality"),
    )
    args = parser.parse_args()
    ensure_database(args.database_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ.setdefault("STUDIO_DATA_DIR", str(Path("/tmp") / "trace-bench-quality"))
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    for kind in ("plain", "gold"):
        generate(kind, args)
    print(f"data ready in {time.perf_counter() - started:.1f} s")
    result = measure(args)
    (today_median, today_p95) = result["claims"]["today"]
    (plain_median, plain_p95), (gold_median, gold_p95) = result["claims"]["plain"], result["claims"]["gold"]
    claim_ok = gold_p95 <= today_p95 * CLAIM_SLACK
    print(
        f"answers: plain {result['answers']['plain']}, gold {result['answers']['gold']} "
        f"({result['gold_scores']} gold answers scored)"
    )
    print(
        f"claim: today's (plain project) median {today_median:.1f} ms p95 {today_p95:.1f} ms; this code, plain "
        f"project, median {plain_median:.1f} ms p95 {plain_p95:.1f} ms; gold project median {gold_median:.1f} ms "
        f"p95 {gold_p95:.1f} ms (handed out {result['gold_kinds']}); target p95 within 10 % of today's: "
        f"{'OK' if claim_ok else 'OVER TARGET'} ({gold_p95 / today_p95 - 1:+.0%})"
    )
    median, high, top = result["dashboard"]
    print(
        f"quality dashboard: {result['annotators']} annotators, {result['flagged']} flagged; median {median:.0f} ms, "
        f"p95 {high:.0f} ms, max {top:.0f} ms (target p95 ≤{DASHBOARD_TARGET_MS} ms: "
        f"{'OK' if high <= DASHBOARD_TARGET_MS else 'OVER TARGET'})"
    )


if __name__ == "__main__":
    main()
