"""Quality control at scale: the queue's claim with gold mixed in beside today's claim, and the quality dashboard.

    .venv/bin/python bench/quality.py [--annotators 100] [--traces 10000] [--gold-share 0.1] [--answers 1000000]
        [--claims 60] [--database-url postgres://postgres@127.0.0.1:5432/trace_bench_quality]

Two projects of the same shape in one database (made once, the answers and scores set-based in SQL, about two minutes
a project at a million answers; kept for reruns with the same sizes): "plain" without
quality control (today's claim) and "gold" with ``--gold-share`` of its traces gold (a lead's accepted answer as
their reference) and ``gold_every`` 10. In each, ``--answers`` submitted answers by ``--annotators`` annotators over
90 days, dealt to every trace in turn (so each trace has about answers / traces of them), less ``OPEN`` traces per
project that nobody answered (what the queue still gives out) and, in the gold project, the gold answers: each
annotator has met all but ``UNSEEN_GOLD`` of the gold traces, each answer scored (a ``GoldScore`` row). The quality
dashboard's rollup is then recounted from them (``quality_rollup_rebuild``), as for any rows loaded around the
services.

Then, interleaved so that the machine's load falls on all alike, ``--claims`` claims of each kind, each by the next
annotator, timed, inside a transaction rolled back afterwards (every claim meets the same world): today's claim
(``lease_next_trace`` as it was at ``--today-rev``, by default main before quality control, read from git, on the
plain project), this claim on the plain
project, and this claim on the gold project, where half the annotators stand at a gold position of their count
(``QueueTally``), so about half its claims hand out a gold trace. Target: the gold project's claim p95 within 10 %
of today's. Then
GET /api/projects/<id>/quality/ over the 90 days through Django's request handling, 9 times (the first a warm-up):
target p95 ≤ 300 ms. The machine's load average is printed beside the timings (the box may be shared).
"""

from __future__ import annotations

import argparse
import os
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
# main just before the quality-control merge: the claim without gold, the one to stay within 10 % of.
BEFORE_QUALITY_CONTROL = "da06303^1"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def _project_name(kind: str, args) -> str:
    return f"bench-quality-{kind}-{args.annotators}x{args.traces}x{args.answers}"


def generate(kind: str, args) -> None:
    """Make the ``kind`` project's world unless it exists: users, traces and steps through the ORM (thousands of
    rows), the answers and their scores set-based in SQL (``INSERT … SELECT generate_series``: a million ORM rows
    took most of an hour to seed, these take minutes)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.db.models import Count
    from django.utils import timezone

    from annotation.models import Annotation, AnnotationKind, QualitySettings, QueueTally
    from annotation.quality.rollup import quality_rollup_rebuild
    from annotation.quality.services import gold_position_is_gold
    from annotation.services import trace_recount_standing_annotations
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Membership, Project, Step, Trace

    name = _project_name(kind, args)
    if Project.objects.filter(name=name).exists():
        return
    now = timezone.now()
    users = []
    for i in range(args.annotators):
        username = f"bench-q-{i}"
        user = get_user_model().objects.filter(username=username).first()
        users.append(user or user_create_with_role(username=username, password="bench-pass-1234", role=Role.ANNOTATOR))
    lead = get_user_model().objects.filter(username="bench-q-lead").first() or user_create_with_role(
        username="bench-q-lead", password="bench-pass-1234", role=Role.LEAD
    )
    user_ids = [u.pk for u in users]
    with transaction.atomic():
        project = Project.objects.create(name=name)
        Membership.objects.bulk_create([Membership(project=project, user=u) for u in [*users, lead]])
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
        answered = rest[: len(rest) - OPEN]  # the last OPEN traces nobody answered: what the queue still gives out
        met_gold = gold_ids[: max(0, n_gold - UNSEEN_GOLD)]
        gold_answers = len(users) * len(met_gold)
        production = max(0, args.answers - gold_answers)
        # Each answered trace gets per_trace answers (one annotator answers a trace once), dealt round the team.
        per_trace = min(len(users), max(1, production // max(1, len(answered))))
        production = min(production, per_trace * len(answered))
        with connection.cursor() as cursor:
            cursor.execute("SELECT setseed(0.07)")
            # One answer per row of `dealt`: its trace, annotator, kind, status and the dice the columns read.
            answer_columns = """
                INSERT INTO annotation_annotation (
                    trace_id, project_id, annotator_id, kind, status, version, verdict, tau, error_category, note,
                    unusable_reason, corrected_thought, corrected_action, reflection_thought, reflection_action,
                    no_reflection_reason, editor_state, time_spent_s, is_adjudicated, review_comment, created_at,
                    updated_at, submitted_at, reviewed_at)
                SELECT trace_id, %(project)s, annotator_id, kind, status, 1, verdict,
                       CASE WHEN verdict = 'error' THEN tau END, CASE WHEN verdict = 'error' THEN 'other' ELSE '' END,
                       '', '', '',
                       CASE WHEN verdict = 'error'
                            THEN 'click(start_box=''(' || x || ',' || y || ')'')' ELSE '' END,
                       '', '', '', '{{}}'::jsonb, seconds, false, '', submitted, submitted, submitted,
                       CASE WHEN status = 'accepted' THEN submitted + interval '2 hours' END
                FROM (
                    SELECT trace_id, annotator_id, kind, status,
                           CASE WHEN roll < 0.6 THEN 'error' WHEN roll < 0.95 THEN 'no_error' ELSE 'unusable' END
                               AS verdict,
                           1 + floor(random() * 4)::int AS tau,
                           floor(random() * 1001)::int AS x, floor(random() * 1001)::int AS y,
                           -- lognormvariate(4, 0.6): a normal deviate by Box-Muller
                           floor(exp(4 + 0.6 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))::int
                               AS seconds,
                           %(now)s::timestamptz - random() * interval '89 days' AS submitted
                    FROM (SELECT *, random() AS roll FROM ({dealt}) dealt) rolled
                ) answers
            """
            dealt_production = """
                SELECT (%(answered)s::bigint[])[g / %(per_trace)s + 1] AS trace_id,
                       (%(users)s::int[])[(g / %(per_trace)s + g %% %(per_trace)s) %% %(n_users)s + 1] AS annotator_id,
                       'production' AS kind,
                       CASE WHEN r < 0.25 THEN 'submitted' WHEN r < 0.9 THEN 'accepted' ELSE 'rejected' END AS status
                FROM (SELECT g, random() AS r FROM generate_series(0, %(production)s - 1) g) dice
            """
            dealt_gold = """
                SELECT t AS trace_id, u AS annotator_id, 'gold' AS kind, 'submitted' AS status
                FROM unnest(%(met_gold)s::bigint[]) t CROSS JOIN unnest(%(users)s::int[]) u
            """
            params = {
                "project": project.pk,
                "now": now,
                "answered": answered,
                "per_trace": per_trace,
                "users": user_ids,
                "n_users": len(user_ids),
                "production": production,
                "met_gold": met_gold,
            }
            cursor.execute(answer_columns.format(dealt=dealt_production), params)
            if gold_ids:
                # The references: the lead's accepted answers on the gold traces, all alike, then the gold answers.
                cursor.execute(
                    """
                    INSERT INTO annotation_annotation (
                        trace_id, project_id, annotator_id, kind, status, version, verdict, tau, error_category, note,
                        unusable_reason, corrected_thought, corrected_action, reflection_thought, reflection_action,
                        no_reflection_reason, editor_state, time_spent_s, is_adjudicated, review_comment, created_at,
                        updated_at, submitted_at, reviewed_at)
                    SELECT t, %(project)s, %(lead)s, 'production', 'accepted', 1, 'error', 3, 'other', '', '', '',
                           'click(start_box=''(300,260)'')', '', '', '', '{}'::jsonb, 60, false, '', %(now)s, %(now)s,
                           %(now)s - interval '95 days', %(now)s - interval '94 days'
                    FROM unnest(%(gold)s::bigint[]) t
                    """,
                    {"project": project.pk, "lead": lead.pk, "now": now, "gold": gold_ids},
                )
                cursor.execute(
                    """
                    INSERT INTO annotation_goldtrace (trace_id, project_id, reference_id, reference_version,
                                                      marked_by_id, marked_at)
                    SELECT trace_id, project_id, id, 1, annotator_id, %(now)s FROM annotation_annotation
                    WHERE project_id = %(project)s AND annotator_id = %(lead)s
                    """,
                    {"project": project.pk, "lead": lead.pk, "now": now},
                )
                cursor.execute(answer_columns.format(dealt=dealt_gold), params)
                cursor.execute(
                    """
                    INSERT INTO annotation_goldscore (
                        annotation_id, gold_id, project_id, annotator_id, kind, trace_id_kept, external_id,
                        reference_id_kept, reference_version, verdict_ok, tau_exact_ok, tau_within_one_ok,
                        category_ok, action_type_ok, point_ok, reflection_ok, correct, comparison, submitted_at,
                        scored_at)
                    SELECT a.id, g.id, a.project_id, a.annotator_id, 'gold', a.trace_id, '', g.reference_id, 1,
                           a.verdict = 'error', a.verdict = 'error' AND a.tau = 3,
                           a.verdict = 'error' AND abs(a.tau - 3) <= 1, a.verdict = 'error',
                           a.verdict = 'error' AND a.tau = 3, a.verdict = 'error' AND a.tau = 3 AND random() < 0.8,
                           NULL, a.verdict = 'error' AND a.tau = 3, '{}'::jsonb, a.submitted_at, %(now)s
                    FROM annotation_annotation a JOIN annotation_goldtrace g ON g.trace_id = a.trace_id
                    WHERE a.project_id = %(project)s AND a.kind = 'gold'
                    """,
                    {"project": project.pk, "now": now},
                )
        trace_recount_standing_annotations(traces=Trace.objects.filter(project=project))
        # The answers went in around the services: the dashboard's rollup is recounted from them.
        quality_rollup_rebuild(project_ids=[project.pk])
        # Each annotator's count of new traces: half of the gold project's stand just before a gold position.
        counts = dict(
            Annotation.objects.filter(project=project, kind__in=[AnnotationKind.PRODUCTION, AnnotationKind.GOLD])
            .values_list("annotator_id")
            .annotate(n=Count("id"))
            .order_by()
        )
        tallies = []
        for i, user in enumerate(users):
            count = counts.get(user.pk, 0)
            if kind == "gold" and i % 2 == 0:
                while not gold_position_is_gold(
                    position=count, user_id=user.pk, project_id=project.pk, every=GOLD_EVERY
                ):
                    count += 1
            tallies.append(QueueTally(project=project, annotator=user, handed_out=count, no_error_streak=(i * 7) % 10))
        QueueTally.objects.bulk_create(tallies)
        if kind == "gold":
            QualitySettings.objects.create(project=project, gold_every=GOLD_EVERY)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


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
    parser.add_argument(
        "--today-rev",
        default=BEFORE_QUALITY_CONTROL,
        help="the git revision whose claim is today's (default: main before quality control was merged)",
    )
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
    load_before = os.getloadavg()[0]
    result = measure(args)
    load_after = os.getloadavg()[0]
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
    # The machine may be shared: its load says how far the timings stand for it alone.
    print(f"load average (1 min) {load_before:.1f} before the timings, {load_after:.1f} after")


if __name__ == "__main__":
    main()
