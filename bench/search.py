"""Search benchmark: p95 server time of each costly kind of search (facet counts and a page of step cards included),
on the embedded default (SQLite) or on PostgreSQL.

    .venv/bin/python bench/search.py [--steps 50000] [--annotations 5000]            # embedded (SQLite file)
    .venv/bin/python bench/search.py --database-url postgres://postgres@127.0.0.1:5432/trace_bench_search \\
        --steps 1000009 --annotations 100000                                            # full stack

Generates (once; kept for reruns: a million steps take minutes to seed) one project with ``--steps`` steps over
traces of 3-30 steps in four rounds and ``--annotations`` annotations (80 % with a first error, so a search entry
each), with text as people and agents write it: thoughts of 20-80 words drawn from a 5,900-word vocabulary at Zipf's
frequencies (a few words in nearly every entry, most words rare), 8 % of the traces in Chinese (words of two
characters, no spaces), a planted phrase in 3 % of the English corrections. Steps go in by COPY on PostgreSQL; the
search entries are written in bulk with the text and facets ``insights.services.search_entry_refresh`` would give
them (one by one it takes an hour at this size); one pre-scoring run scores half of the steps at τ.
Then times GET /api/projects/<id>/search/ (the empty search: the page, /projects/<id>/search/) through Django's
request handling, ``--runs`` searches of each kind after two warm-ups: text with three facets (category, round,
displacement), a common word alone (in nearly every entry), the page with nothing entered, a deep page (page 200 to
1,200, with or without a common word), a two-character Chinese word; then ``--concurrent`` clients at once, each
running every kind in turn. Wall time and CPU time (this process and its PostgreSQL server process).
Targets: embedded, 50,000 steps, p95 ≤ 200 ms; PostgreSQL, 1,000,009 steps and 100,000 annotations, every kind's
p95 ≤ 300 ms, four at once included. Reported, not asserted.
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
# The planted words the searches ask for: common ones (in most entries), mid-frequency pairs, a Chinese word.
GUI_WORDS = (
    "the to click button field menu dialog settings search list page scroll window tab link icon banner form save "
    "open close confirm order cart login password email address folder file share upload download next back first "
    "screen text box input select option check enter submit cancel home profile account message send reply delete "
    "edit copy paste view show hide filter sort date time user name item price total"
).split()
VOCABULARY_SIZE = 5_900
CHINESE_SHARE = 0.08
_SYLLABLES = (
    "ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo fu ga ge gi go gu ha he hi ho hu ja jo ka ke ki ko ku "
    "la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve "
    "vi vo wa we wi wo ya yo za ze zi zo"
).split()
_HAN = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所"
    "民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那"
    "社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并"
    "提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放"
    "决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再"
    "采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记"
    "需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克"
    "何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引"
    "听该铁价严龙飞"
)


def vocabulary(rng):
    """The words thoughts are made of, most common first: the GUI words, then made-up words of two to four
    syllables, ``VOCABULARY_SIZE`` in all; and Chinese two-character words."""
    words = list(GUI_WORDS)
    seen = set(words)
    while len(words) < VOCABULARY_SIZE:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    chinese, seen_cn = [], set()
    while len(chinese) < 2_000:
        word = rng.choice(_HAN) + rng.choice(_HAN)
        if word not in seen_cn:
            seen_cn.add(word)
            chinese.append(word)
    return words, chinese


DISPLACEMENTS = ("no point", "under 2%", "2–10%", "10–30%", "over 30%")
ACTION_TYPES = ("click", "type", "scroll", "drag", "hotkey", "wait", "finished", "long_press")
PLATFORMS = ("android", "web", "desktop")
APPS = ("Gmail", "Maps", "Settings", "Chrome", "Calendar", "Photos", "Slack", "Notes", "Files", "Shop")
ERROR_SHARE = 0.8
STEP_COLUMNS = (
    "trace_id, index, thought, reflection, action_summary, action_text, raw_response, parsed_actions, parse_error, "
    "off_screen_point, human_edited_response, context"
)


class _Words:
    """Text drawn from the vocabulary with Zipf's frequencies (a word's weight 1 / its rank), as people and agents
    write: a few words in nearly every thought, most words rare."""

    def __init__(self, rng):
        self.rng = rng
        self.english, self.chinese = vocabulary(rng)
        self.english_weights = _cumulative(len(self.english))
        self.chinese_weights = _cumulative(len(self.chinese))

    def sentence(self, low: int, high: int, *, chinese: bool) -> str:
        n = self.rng.randint(low, high)
        if chinese:
            words = self.rng.choices(self.chinese, cum_weights=self.chinese_weights, k=n)
            return "，".join("".join(words[i : i + 6]) for i in range(0, n, 6)) + "。"
        return " ".join(self.rng.choices(self.english, cum_weights=self.english_weights, k=n))


def _cumulative(n: int) -> list[float]:
    total, out = 0.0, []
    for rank in range(1, n + 1):
        total += 1.0 / rank
        out.append(total)
    return out


def generate(n_steps: int, n_annotations: int) -> None:
    """One project of ``n_steps`` steps and ``n_annotations`` annotations, their search entries as
    ``search_entry_refresh`` would write them (module docstring); kept when it is there already."""
    from django.db import connection, transaction
    from django.utils import timezone

    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Membership, Project, Round, Step

    existing = Project.objects.filter(name=PROJECT_NAME).first()
    if existing is not None:
        if Step.objects.filter(trace__project=existing).count() >= n_steps:
            return
        existing.delete()
    rng = random.Random(36)
    words = _Words(rng)
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
    with transaction.atomic():
        traces = _traces_create(project, rounds, n_steps, rng, words)
        wanted = _annotation_plan(traces, n_annotations, len(annotators), rng)
        thoughts = _steps_create(traces, {(t, tau) for t, _, tau in wanted if tau}, rng, words, connection.vendor)
        step_ids = dict(
            ((t, i), pk)
            for pk, t, i in Step.objects.filter(trace__project=project).values_list("id", "trace_id", "index")
        )
        made = _annotations_create(project, traces, wanted, annotators, rng, words, now)
        _entries_create(project, traces, made, thoughts, step_ids, rng)
        _suggestions_create(project, [step_ids[(a.trace_id, a.tau)] for a in made if a.tau], rng)


def _traces_create(project, rounds, n_steps, rng, words) -> dict[int, tuple]:
    """trace id -> (step count, round id, instruction, chinese)."""
    from traces.models import Trace

    lengths = []
    while sum(lengths) < n_steps:
        lengths.append(rng.randint(3, 30))
    lengths[-1] -= sum(lengths) - n_steps
    chinese = [rng.random() < CHINESE_SHARE for _ in lengths]
    made = Trace.objects.bulk_create(
        [
            Trace(
                project=project,
                coordinate_convention=project.coordinate_convention,
                external_id=f"t{i}",
                instruction=words.sentence(6, 20, chinese=chinese[i]),
                language="zh" if chinese[i] else "en",
                source="bench",
                step_count=n,
                round=rounds[i % ROUNDS],
                metadata={"app": rng.choice(APPS), "platform": rng.choice(PLATFORMS)},
            )
            for i, n in enumerate(lengths)
        ],
        batch_size=5000,
    )
    return {t.pk: (t.step_count, t.round_id, t.instruction, chinese[i]) for i, t in enumerate(made)}


def _annotation_plan(traces, n_annotations, n_annotators, rng) -> list[tuple[int, int, int | None]]:
    """(trace id, annotator number, τ or None) per annotation: each trace in turn, then again by the next annotator."""
    ids = list(traces)
    plan = []
    for n in range(min(n_annotations, len(ids) * n_annotators)):
        trace_id = ids[n % len(ids)]
        tau = rng.randint(1, traces[trace_id][0]) if rng.random() < ERROR_SHARE else None
        plan.append((trace_id, (n // len(ids)) % n_annotators, tau))
    return plan


def _action(rng) -> str:
    kind = rng.choices(("click", "type", "scroll"), [70, 20, 10])[0]
    if kind == "type":
        return f"type(content='{rng.choice(GUI_WORDS)} {rng.choice(GUI_WORDS)}')"
    if kind == "scroll":
        return f"scroll(start_box='({rng.randint(0, 1000)},{rng.randint(0, 1000)})', direction='down')"
    return f"click(start_box='({rng.randint(0, 1000)},{rng.randint(0, 1000)})')"


def _steps_create(traces, kept, rng, words, vendor) -> dict[tuple[int, int], tuple[str, str]]:
    """Every trace's steps (thought and action), by COPY on PostgreSQL; answers the (thought, action) of the steps
    in ``kept`` ((trace id, index): the steps at τ, which search entries copy)."""
    from django.db import connection

    from traces.models import Step

    out = {}

    def rows():
        for trace_id, (count, _, _, chinese) in traces.items():
            for index in range(1, count + 1):
                thought, action = words.sentence(20, 80, chinese=chinese), _action(rng)
                if (trace_id, index) in kept:
                    out[(trace_id, index)] = (thought, action)
                yield trace_id, index, thought, action

    if vendor == "postgresql":
        with connection.cursor() as cursor, cursor.cursor.copy(f"COPY traces_step ({STEP_COLUMNS}) FROM STDIN") as copy:
            for trace_id, index, thought, action in rows():
                copy.write_row((trace_id, index, thought, "", "", action, "", "[]", "", "", "", "{}"))
        return out
    batch = []
    for trace_id, index, thought, action in rows():
        batch.append(Step(trace_id=trace_id, index=index, thought=thought, action_text=action))
        if len(batch) >= 20_000:
            Step.objects.bulk_create(batch)
            batch = []
    Step.objects.bulk_create(batch)
    return out


def _annotations_create(project, traces, wanted, annotators, rng, words, now) -> list:
    from annotation.models import Annotation
    from traces.vocabulary import ERROR_CATEGORIES

    rows = []
    for trace_id, annotator, tau in wanted:
        chinese = traces[trace_id][3]
        planted = tau is not None and not chinese and rng.random() < 0.03
        thought = words.sentence(20, 80, chinese=chinese)
        if planted:
            thought = f"{PHRASE}. {thought}"
        rows.append(
            Annotation(
                trace_id=trace_id,
                project=project,
                annotator=annotators[annotator],
                status=rng.choices(["submitted", "accepted", "rejected"], [25, 60, 15])[0],
                verdict="error" if tau else "no_error",
                tau=tau,
                error_category=rng.choice(ERROR_CATEGORIES) if tau else "",
                corrected_thought=thought if tau else "",
                corrected_action=_action(rng) if tau else "",
                note=words.sentence(0, 12, chinese=chinese) if tau else "",
                submitted_at=now,
            )
        )
    return Annotation.objects.bulk_create(rows, batch_size=5000)


def _entries_create(project, traces, made, thoughts, step_ids, rng) -> None:
    from types import SimpleNamespace

    from insights import search_text
    from insights.models import SearchEntry

    entries = []
    for a in made:
        if not a.tau:
            continue
        count, round_id, instruction, _ = traces[a.trace_id]
        thought, action = thoughts[(a.trace_id, a.tau)]
        step = SimpleNamespace(thought=thought, action_text=action)
        entries.append(
            SearchEntry(
                annotation_id=a.pk,
                project=project,
                trace_id=a.trace_id,
                step_id=step_ids[(a.trace_id, a.tau)],
                round_id=round_id,
                annotator_id=a.annotator_id,
                **search_text.entry_texts(a, step, instruction=instruction),
                status=a.status,
                verdict=a.verdict,
                category=a.error_category,
                recorded_type=action.split("(")[0],
                corrected_type=a.corrected_action.split("(")[0],
                displacement=rng.choice(DISPLACEMENTS),
                direction=rng.choice(("left", "right", "up", "down", "")),
                position=("early", "middle", "late")[min(2, 3 * (a.tau - 1) // count)],
                tau=a.tau,
                step_count=count,
                platform=rng.choice(PLATFORMS),
                app=rng.choice(APPS),
                annotation_version=1,
                agreement=rng.choice(("same", "other", "")),
            )
        )
    SearchEntry.objects.bulk_create(entries, batch_size=2000)


def _suggestions_create(project, step_ids, rng) -> None:
    """One pre-scoring run's suspicion for half of the steps at τ (the search's suspicion facet reads them)."""
    from prescoring.models import PrescoreJob, StepSuggestion

    job = PrescoreJob.objects.create(project=project, scorer="rules", status="succeeded")
    StepSuggestion.objects.bulk_create(
        [
            StepSuggestion(step_id=s, job=job, scorer="rules", suspicion=rng.random())
            for s in sorted(set(step_ids))
            if rng.random() < 0.5
        ],
        batch_size=5000,
    )


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


def _searches(kind: str, rng: random.Random, project_id: int, rounds: list[int], chinese: list[str]) -> tuple:
    """(path, query) of one search of ``kind``."""
    from traces.vocabulary import ERROR_CATEGORIES

    api = f"/api/projects/{project_id}/search/"
    if kind == "text + 3 facets":
        q = rng.choice([f'"{PHRASE}"', rng.choice(GUI_WORDS[:6]), " ".join(rng.sample(GUI_WORDS[10:60], 2))])
        return api, {
            "q": q,
            "category": rng.choice(ERROR_CATEGORIES),
            "round": rng.choice(rounds),
            "displacement": rng.choice(DISPLACEMENTS),
        }
    if kind == "common word alone":
        return api, {"q": rng.choice(GUI_WORDS[:6])}
    if kind == "empty search page":
        return f"/projects/{project_id}/search/", {}
    if kind == "deep page":
        return api, {"page": rng.randint(200, 1200), **({"q": rng.choice(GUI_WORDS[:6])} if rng.random() < 0.5 else {})}
    if kind == "2-char Chinese word":
        return api, {"q": rng.choice(chinese[:40])}
    raise ValueError(kind)


KINDS = ("text + 3 facets", "common word alone", "empty search page", "deep page", "2-char Chinese word")


def _timed(client, path: str, params: dict) -> tuple[float, float, int]:
    """Wall and CPU milliseconds of one request (this process and its PostgreSQL server process), and the count."""
    started, cpu_started, db_started = time.perf_counter(), time.process_time(), _database_cpu_seconds()
    response = client.get(path, params)
    elapsed = (time.perf_counter() - started) * 1000
    cpu = (time.process_time() - cpu_started + _database_cpu_seconds() - db_started) * 1000
    assert response.status_code == 200, response.content[:500]
    count = response.json()["count"] if path.startswith("/api/") else 0
    return elapsed, cpu, count


def _p95(values: list[float]) -> float:
    values = sorted(values)
    return values[int(0.95 * (len(values) - 1))]


def _client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-search-lead"))
    return client


def _context() -> tuple[int, list[int], list[str]]:
    from traces.models import Project, Round

    project = Project.objects.get(name=PROJECT_NAME)
    rounds = list(Round.objects.filter(project=project).values_list("pk", flat=True))
    return project.pk, rounds, vocabulary(random.Random(36))[1]


def measure(kind: str, *, runs: int) -> dict:
    project_id, rounds, chinese = _context()
    client = _client()
    rng = random.Random(5)
    timings, cpu_timings, found = [], [], []
    for i in range(runs + 2):
        elapsed, cpu, count = _timed(client, *_searches(kind, rng, project_id, rounds, chinese))
        if i >= 2:  # two warm-up requests
            timings.append(elapsed)
            cpu_timings.append(cpu)
            found.append(count)
    return {
        "median_ms": statistics.median(timings),
        "p95_ms": _p95(timings),
        "cpu_p95_ms": _p95(cpu_timings),
        "mean_found": statistics.mean(found),
    }


def measure_concurrent(*, clients: int, runs: int) -> dict:
    """``clients`` threads at once (each its own connection), each running ``runs`` searches of every kind in turn:
    every request's wall time."""
    import threading

    from django.db import connection

    project_id, rounds, chinese = _context()
    timings: list[float] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        client, rng = _client(), random.Random(seed)
        try:
            for i in range(runs):
                elapsed, _, _ = _timed(
                    client, *_searches(KINDS[(i + seed) % len(KINDS)], rng, project_id, rounds, chinese)
                )
                with lock:
                    timings.append(elapsed)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"median_ms": statistics.median(timings), "p95_ms": _p95(timings), "requests": len(timings)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--annotations", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=20, help="timed searches of each kind (after two warm-ups)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="which kinds to time, comma-separated")
    parser.add_argument("--concurrent", type=int, default=4, help="searches at once in the last measure (0: none)")
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

        # Planner statistics and the visibility map of the bulk-written tables now (a migration may have rewritten
        # every entry), as autovacuum would make them a while later.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    print(f"data ready in {time.perf_counter() - started:.1f} s; {_sizes()}; load average {os.getloadavg()[0]:.1f}")
    database = "PostgreSQL" if args.database_url else "SQLite"
    for kind in [k for k in args.kinds.split(",") if k]:
        r = measure(kind, runs=args.runs)
        verdict = "OK" if r["p95_ms"] <= target else "OVER TARGET"
        print(
            f"search ({database}) {kind}: {r['mean_found']:.0f} found on average; median {r['median_ms']:.0f} ms, "
            f"p95 {r['p95_ms']:.0f} ms (target ≤{target} ms: {verdict}), CPU p95 {r['cpu_p95_ms']:.0f} ms; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
    if args.concurrent:
        r = measure_concurrent(clients=args.concurrent, runs=max(5, args.runs // 2))
        verdict = "OK" if r["p95_ms"] <= target else "OVER TARGET"
        print(
            f"search ({database}) {args.concurrent} at once, every kind in turn: {r['requests']} searches, median "
            f"{r['median_ms']:.0f} ms, p95 {r['p95_ms']:.0f} ms (target ≤{target} ms: {verdict}); "
            f"load average {os.getloadavg()[0]:.1f}"
        )


def _sizes() -> str:
    from insights.models import SearchEntry
    from traces.models import Project, Step

    project = Project.objects.get(name=PROJECT_NAME)
    steps = Step.objects.filter(trace__project=project).count()
    return f"{steps} steps, {SearchEntry.objects.filter(project=project).count()} search entries"


if __name__ == "__main__":
    main()
