"""Clustering benchmark: one clustering run of a project's accepted corrections on one CPU worker process — wall
time, CPU time and peak RSS of the process that runs ``insights.services.cluster_run_compute``.

    .venv/bin/python bench/cluster.py [--corrections 100000]                         # embedded (SQLite file)
    .venv/bin/python bench/cluster.py --database-url postgres://postgres@127.0.0.1:5432/trace_bench_cluster
    .venv/bin/python bench/cluster.py --model var/bench-cluster/tiny-model             # by the model's embeddings

Generates (once; kept for reruns) a project with ``--corrections`` accepted corrections in four rounds, each worded
from one of a dozen mistake families with its own words filled in (apps, elements, numbers) and a note of three
free words (so nearly every text is distinct, as real ones are), so that text clustering has families to find, and a search entry each (written in bulk as ``search_entry_refresh`` would). Then a fresh
process (so its peak RSS is the clustering's, Django included) runs the clustering and prints the figures. Target:
100,000 corrections in ≤ 2 minutes with peak RSS ≤ 1 GB. Reported, not asserted.

With ``--model DIR`` the run compares the texts by that Qwen2-VL checkpoint's embeddings (as a gpu worker does with
STUDIO_PRESCORE_MODEL_DIR set); a directory that does not exist gets the tiny random-weight checkpoint of
``prescoring.tiny`` (``--model-size 2b``: Qwen2-VL-2B's dimensions, random weights, for a device). The embeddings are
also timed apart (``embedding_s``, tokens per second): the linkage after them is the same as TF-IDF's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from database import ensure_database

REPO = Path(__file__).resolve().parent.parent
PROJECT_NAME = "bench-cluster"
ROUNDS = 4
APPS = ["Gmail", "Maps", "Settings", "Chrome", "Slack", "Calendar", "Files", "Photos", "Notes", "Spotify"]
ELEMENTS = ["search field", "Save button", "menu icon", "Send button", "address bar", "toggle", "tab", "checkbox"]
FAMILIES = [
    ("wrong action type", "The {el} is not focused yet: I typed before clicking it. Click the {el} in {app} first."),
    ("wrong element / grounding", "The {el} is further right; the icon I hit in {app} opens the share menu instead."),
    ("premature finish", "The order in {app} is not confirmed yet, so finishing now leaves the task undone."),
    ("misread screen", "The dialog in {app} shows a warning banner about storage quota {n}% that I ignored."),
    ("needless wait or loop", "Scrolling again repeats the same page of {app}; the list ended {n} scrolls ago."),
    ("wrong element / grounding", "I clicked the {el} of the previous row; the target row is {n} pixels lower."),
    ("misread screen", "The instruction asks for {app} but the window in front is another app; switch first."),
    ("wrong action type", "A long press is needed on the {el} in {app}; a tap only selects it."),
    ("premature finish", "The upload to {app} is at {n}% and has not finished; wait for it before answering."),
    ("needless wait or loop", "Waiting again changes nothing: {app} already shows the result, read it."),
    ("wrong element / grounding", "The keyboard covers the {el}; close it before tapping, or I hit a key in {app}."),
    ("misread screen", "The {el} is disabled (greyed out) in {app} until the form is filled in."),
]
# Free words of the annotator's own (letters only, as the tokenizer reads them): nearly every correction's text is
# then distinct, as real ones are, and the clustering cannot lean on exact repeats.
SYLLABLES = ["ka", "lo", "mi", "ru", "se", "ta", "ve", "no", "pi", "do", "fa", "ge", "hu", "ji", "be", "zo"]
FREE_WORDS = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES][:3000]
DISPLACEMENTS = ("no point", "under 2%", "2–10%", "10–30%", "over 30%")
TYPES = ("click", "type", "scroll", "finished", "long_press", "wait", "hotkey")


def generate(n: int) -> None:
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Annotation
    from insights.models import SearchEntry
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Project, Round, Trace

    existing = Project.objects.filter(name=PROJECT_NAME).first()
    if existing is not None:
        if SearchEntry.objects.filter(project=existing, status="accepted").count() == n:
            return
        existing.delete()
    rng = random.Random(36)
    now = timezone.now()
    annotator = user_create_with_role(username="bench-cluster-ann", password="bench-pass-1234", role=Role.ANNOTATOR)
    project = Project.objects.create(name=PROJECT_NAME)
    rounds = [
        Round.objects.create(project=project, name=f"week {i + 1}", checkpoint=f"agent-v{i + 1}", ran_at=now)
        for i in range(ROUNDS)
    ]
    with transaction.atomic():
        Trace.objects.bulk_create(
            [
                Trace(
                    project=project,
                    coordinate_convention=project.coordinate_convention,
                    external_id=f"t{i}",
                    instruction=f"Task {i}",
                    source="bench",
                    step_count=8,
                    round=rounds[i % ROUNDS],
                )
                for i in range(n)
            ],
            batch_size=5000,
        )
    traces = list(Trace.objects.filter(project=project).values_list("id", "round_id"))
    rows = []
    for trace_id, _ in traces:
        category, template = rng.choice(FAMILIES)
        thought = template.format(app=rng.choice(APPS), el=rng.choice(ELEMENTS), n=rng.randint(1, 99))
        rows.append(
            Annotation(
                trace_id=trace_id,
                project=project,
                annotator=annotator,
                status="accepted",
                verdict="error",
                tau=rng.randint(1, 8),
                error_category=category,
                corrected_thought=thought,
                corrected_action="click(start_box='(500,80)')",
                note=" ".join(rng.choice(FREE_WORDS) for _ in range(3)),
                submitted_at=now,
            )
        )
    with transaction.atomic():
        made = Annotation.objects.bulk_create(rows, batch_size=5000)
    rounds_of = dict(traces)
    entries = [
        SearchEntry(
            annotation_id=a.pk,
            project=project,
            trace_id=a.trace_id,
            round_id=rounds_of[a.trace_id],
            annotator_id=a.annotator_id,
            document=f"{a.corrected_thought}\n{a.corrected_action}\n{a.error_category}".lower(),
            status=a.status,
            verdict=a.verdict,
            category=a.error_category,
            recorded_type=rng.choice(TYPES),
            corrected_type=rng.choice(TYPES),
            displacement=rng.choice(DISPLACEMENTS),
            tau=a.tau,
            step_count=8,
        )
        for a in made
    ]
    with transaction.atomic():
        SearchEntry.objects.bulk_create(entries, batch_size=5000)


def embedding_figures(model_dir: str, project) -> dict:
    """The embeddings of the project's distinct correction texts alone, timed in this process (the scorer is loaded
    before the clock starts, as a gpu worker keeps it loaded between jobs)."""
    from django.conf import settings

    from insights.selectors import correction_rows
    from prescoring.qwen2vl import load_scorer

    texts = sorted({" ".join(row["text"].split()) for row in correction_rows(project)} - {""})
    scorer = load_scorer(model_dir, static_decode=settings.PRESCORE_STATIC_DECODE)
    tokens = sum(min(len(scorer._ids(text)), 256) for text in texts)
    wall = time.perf_counter()
    scorer.text_embeddings(texts)
    wall = time.perf_counter() - wall
    return {
        "embedded_texts": len(texts),
        "embedded_tokens": tokens,
        "embedding_s": round(wall, 1),
        "tokens_per_s": round(tokens / wall),
        "device": str(scorer.device),
    }


def measure(model_dir: str = "") -> dict:
    from insights import services
    from traces.models import Project

    project = Project.objects.get(name=PROJECT_NAME)
    run = services.cluster_run_create(project=project, user=None, enqueue=False)
    wall, cpu = time.perf_counter(), time.process_time()
    run = services.cluster_run_compute(run_id=run.pk)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sizes = sorted((c.size for c in run.clusters.filter(kind="text")), reverse=True)
    figures = embedding_figures(model_dir, project) if model_dir else {}
    return figures | {
        "corrections": run.corrections,
        "status": run.status,
        "method": run.method,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "text_clusters": len(sizes),
        "largest_text_clusters": sizes[:12],
        "signature_clusters": run.clusters.filter(kind="signature").count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corrections", type=int, default=100_000)
    parser.add_argument("--database-url", default="")
    parser.add_argument("--model", default="", help="a Qwen2-VL checkpoint directory (built tiny when missing)")
    parser.add_argument("--model-size", default="tiny", choices=["tiny", "2b"])
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    env = os.environ
    env.setdefault("STUDIO_MODE", "dev")
    env.setdefault("STUDIO_DATA_DIR", str(REPO / "var" / "bench-cluster"))
    if args.database_url:
        ensure_database(args.database_url)
        env["DATABASE_URL"] = args.database_url
    else:
        env.pop("DATABASE_URL", None)
    if args.model:
        args.model = str(Path(args.model).resolve())
        env["STUDIO_PRESCORE_MODEL_DIR"] = args.model
    if args.model and not args.measure_only and not Path(args.model).is_dir():
        sys.path.insert(0, str(REPO))
        from prescoring.tiny import build_tiny_qwen2vl

        build_tiny_qwen2vl(args.model, size=args.model_size)
    if not args.measure_only:
        sys.path.insert(0, str(REPO))
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        generate(args.corrections)
        print(f"data ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        # The clustering in a fresh process: its peak RSS is then the clustering's (and Django's), not the generation's.
        child = [sys.executable, __file__, "--measure-only", "--corrections", str(args.corrections)]
        if args.database_url:
            child += ["--database-url", args.database_url]
        if args.model:
            child += ["--model", args.model]
        subprocess.run(child, check=True, env=env)
        return
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    import django

    django.setup()
    print(json.dumps(measure(args.model), indent=2))


if __name__ == "__main__":
    main()
