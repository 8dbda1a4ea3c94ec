"""Export benchmark: 100,000 DPO pairs from a generated database to one TRL bundle.

    .venv/bin/python bench/export.py [--pairs 100000] [--images 2000] [--steps 3] [--format trl]
    .venv/bin/python bench/export.py --parquet-vs-trl [--pairs 100000] [--steps 5]

Generates (once per run, in a temporary data folder outside the repository) a SQLite database with
``--pairs`` traces of ``--steps`` steps sharing ``--images`` distinct PNG screenshots, one accepted
annotation with an error per trace; then a fresh child process runs
``export_to_path`` (what ``manage.py export_bundle`` runs) and the parent reports its wall time and peak RSS, and the
bundle size against unique image bytes + text. Targets: ≤120 s, ≤500 MB, bundle ≤1.05 × images + text.

``--parquet-vs-trl`` exports the same database twice, as ``parquet`` and as ``trl``, each in a fresh child process,
and reports both times and peak RSS and the size ratio parquet / trl (target ≤1.10: a Parquet bundle stores each
screenshot once, in ``images.parquet``, as the TRL bundle's ``images/`` does). With ``--steps 5`` every sample's
prompt holds a 5-screenshot history (the project's window).

Beside each export, its CPU against a bare loop's (``measure_bare``, in a fresh child process: the bundle's rows
already in memory, each encoded as a JSON line and deflated into a zip, whatever the format, and each screenshot's
bytes read from storage and copied in): the export's CPU seconds after Django's start, the
loop's, and their ratio (targets ≤4× TRL, ≤5× Parquet). Each export is measured twice: in a fresh process (what
``manage.py export_bundle`` pays, Qwen2's vocabulary, the URL configuration and, for Parquet, pandas loaded on the
way), and in a warm one, as a long-running worker runs it: after a first export of a small project in the same process
(``bench-warm-up``, 20 traces made beside the bench project's), which has loaded those already. The warm bundle must
be the fresh one's bytes, and its sha256 is printed, to compare code changes on one database. ``--data DIR`` keeps
the generated database there and reuses it on the next run.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_S, TARGET_RSS_MB, TARGET_RATIO = 120, 500, 1.05
TARGET_PARQUET_RATIO = 1.10
TARGET_BARE = {"trl": 4, "parquet": 5}  # the export's CPU against the bare loop's (``measure_bare``)
WARM_UP = "bench-warm-up"  # the small project a warm worker's first export takes (``measure_studio``)
WARM_UP_PAIRS = 20


def generate(pairs: int, n_images: int, n_steps: int) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from traces.models import Project

    call_command("migrate", verbosity=0)
    annotator = user_create_with_role(username="bench-ann", password="bench-pass-1234", role=Role.ANNOTATOR)
    load_pairs(Project.objects.create(name="bench"), annotator, pairs=pairs, n_images=n_images, n_steps=n_steps)


def load_pairs(project, annotator, *, pairs: int, n_images: int, n_steps: int) -> None:
    """``pairs`` traces of ``n_steps`` steps in ``project`` sharing ``n_images`` screenshots, each with one accepted
    annotation with an error at the last step: one DPO pair (and one error-correction sample) per trace."""
    load_traces(project, annotator, make_screenshots(n_images), pairs=pairs, n_steps=n_steps)


def make_screenshots(n_images: int) -> list:
    """``n_images`` generated PNG screenshots, stored (the same ones for the same count: seeded)."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from PIL import Image

    from traces.models import Screenshot, screenshot_path

    rng = random.Random(5)
    shots = []
    for _ in range(n_images):
        image = Image.new("RGB", (640, 400), (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
        for _ in range(20):  # some UI-like boxes so PNGs are not trivially small
            x, y = rng.randrange(600), rng.randrange(380)
            image.paste((rng.randrange(256),) * 3, (x, y, x + rng.randrange(10, 40), y + rng.randrange(5, 20)))
        buf = io.BytesIO()
        image.save(buf, "PNG")
        data = buf.getvalue()
        shot = Screenshot(
            sha256=hashlib.sha256(data).hexdigest(), format="PNG", width=640, height=400, byte_size=len(data)
        )
        shot.image.name = default_storage.save(screenshot_path(shot, "x.png"), ContentFile(data))
        shots.append(shot)
    Screenshot.objects.bulk_create(shots, batch_size=1000, ignore_conflicts=True)  # same seed, same images
    return list(Screenshot.objects.filter(sha256__in=[s.sha256 for s in shots]).order_by("id"))


def load_traces(project, annotator, shots: list, *, pairs: int, n_steps: int) -> None:
    """``load_pairs``' traces and annotations, on screenshots stored already."""
    from django.db import transaction

    from annotation.models import Annotation, AnnotationStatus, Verdict
    from traces.models import Step, Trace
    from traces.services import reply_parse

    replies = [
        reply_parse(
            f"Thought: Step {k} of the plan.\nAction: click(start_box='<|box_start|>({100 + k},{200 + k})<|box_end|>')"
        )
        for k in range(n_steps)
    ]
    chunk = 5000
    for start in range(0, pairs, chunk):
        with transaction.atomic():
            traces = Trace.objects.bulk_create(
                [
                    Trace(
                        project=project,
                        coordinate_convention=project.coordinate_convention,
                        external_id=f"bench-{n}",
                        instruction=f"Open the report number {n} and export it",
                        source="native",
                        step_count=n_steps,
                        final_screenshot=shots[(n * 7) % len(shots)],
                    )
                    for n in range(start, min(pairs, start + chunk))
                ]
            )
            Step.objects.bulk_create(
                [
                    Step(
                        trace=trace,
                        index=k + 1,
                        screenshot=shots[(trace.pk * 3 + k) % len(shots)],
                        thought=r.thought,
                        action_text=r.action_text,
                        raw_response="",
                        parsed_actions=r.actions,
                    )
                    for trace in traces
                    for k, r in enumerate(replies)
                ]
            )
            Annotation.objects.bulk_create(
                [
                    Annotation(
                        trace=trace,
                        project_id=trace.project_id,
                        annotator=annotator,
                        status=AnnotationStatus.ACCEPTED,
                        version=3,
                        verdict=Verdict.ERROR,
                        tau=n_steps,
                        corrected_thought="Open the Reports menu first.",
                        corrected_action=f"click(start_box='({trace.pk % 1000},321)')",
                    )
                    for trace in traces
                ]
            )


def add_warm_up(pairs: int, n_steps: int) -> None:
    """The project ``WARM_UP``: ``pairs`` traces as the bench project's, on its first screenshots (made once)."""
    import django

    django.setup()
    from django.contrib.auth.models import User

    from traces.models import Project, Screenshot

    if not Project.objects.filter(name=WARM_UP).exists():
        shots = list(Screenshot.objects.order_by("id")[:n_steps])
        load_traces(
            Project.objects.create(name=WARM_UP),
            User.objects.get(username="bench-ann"),
            shots,
            pairs=pairs,
            n_steps=n_steps,
        )


def export(fmt: str, data_dir: Path, env: dict, *, warm: bool = False) -> tuple[float, float, Path, float]:
    """Export the bench project as ``fmt`` in a child process, fresh or, with ``warm``, after a first small export
    (``measure_studio``): (wall seconds, peak RSS in MB, the bundle, the export's CPU seconds, Django's start left
    out)."""
    out = data_dir / f"bundle-{fmt}{'-warm' if warm else ''}.zip"
    started = time.monotonic()
    child = subprocess.run(
        [sys.executable, __file__, "--measure-studio", fmt, "--out", str(out), *(["--warm"] if warm else [])],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    elapsed = time.monotonic() - started
    if child.returncode != 0:
        sys.exit(f"{fmt} export failed with status {child.returncode}")
    stdout = child.stdout
    result = json.loads(stdout.strip().splitlines()[-1])
    return elapsed, result["peak_rss_mb"], out, result["cpu_s"]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_studio(fmt: str, out: Path, *, warm: bool) -> dict:
    """In a child: the studio's export of the bench project (``export_to_path``, what ``manage.py export_bundle``
    runs), its CPU seconds after Django's start. With ``warm``, a worker's: a first export of the small project
    ``WARM_UP`` (not timed) loads what a process loads once (Qwen2's vocabulary, the URL configuration, pyarrow's
    pandas, the queries' and templates' first uses) before the timed one."""
    import django

    django.setup()
    from exports import services
    from traces.models import Project

    project = Project.objects.get(name="bench")
    options = {"include_valid_prefix": False, "include_error_free": False, "validation_fraction": 0.1, "split_seed": 0}
    if warm:
        warm_up = Project.objects.get(name=WARM_UP)
        services.export_to_path(
            project=warm_up, user=None, fmt=fmt, options=options, out=out.with_name(f"{out.stem}.warm-up.zip")
        )
    started = _cpu()
    services.export_to_path(project=project, user=None, fmt=fmt, options=options, out=out)
    return {"cpu_s": _cpu() - started, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def bare_rows(bundle: Path) -> tuple[dict[str, list], dict[str, str]]:
    """What the bare loop writes, read from the studio's bundle: each data file's rows (JSON lines parsed, Parquet rows
    as Python objects) and each screenshot's bundle path -> its stored file."""
    import sqlite3

    import pyarrow.parquet as pq

    stored = dict(
        sqlite3.connect(os.environ["STUDIO_SQLITE_PATH"]).execute("select sha256, image from traces_screenshot")
    )
    media = Path(os.environ["STUDIO_DATA_DIR"]) / "media"
    rows: dict[str, list] = {}
    images: dict[str, str] = {}
    with zipfile.ZipFile(bundle) as archive:
        for name in archive.namelist():
            if name.startswith("data/") and name.endswith(".jsonl"):
                rows[name] = [json.loads(line) for line in archive.read(name).splitlines()]
            elif name.startswith("data/") and name.endswith(".parquet"):
                rows[name] = pq.read_table(io.BytesIO(archive.read(name))).to_pylist()
            elif name.startswith("images/"):
                images[name.split("/")[1]] = str(media / stored[name.split("/")[1].split(".")[0]])
            elif name == "images.parquet":
                for sha in pq.read_table(io.BytesIO(archive.read(name)), columns=["sha256"]).column(0).to_pylist():
                    images[sha] = str(media / stored[sha])
    return rows, images


def measure_bare(bundle: Path, out: Path) -> dict:
    """In a child: the bare loop, the least an export writes. The rows are in memory already (read from the studio's
    bundle, not timed); timed: each row encoded as a JSON line and deflated into a zip (a Parquet bundle's rows too:
    one loop for every format), and each screenshot's bytes read from storage and copied in, stored."""
    rows, images = bare_rows(bundle)
    started = _cpu()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, records in rows.items():
            with archive.open(name.rsplit(".", 1)[0] + ".jsonl", "w") as sink:
                for record in records:
                    sink.write((json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode())
        for name, path in images.items():
            with open(path, "rb") as handle:
                archive.writestr(f"images/{name}", handle.read(), zipfile.ZIP_STORED)
    return {"cpu_s": _cpu() - started}


def bare(bundle: Path, env: dict) -> float:
    """The bare loop's CPU seconds for ``bundle``'s rows and screenshots, in a fresh child process."""
    child = subprocess.run(
        [sys.executable, __file__, "--measure-bare", str(bundle), "--out", str(bundle.with_suffix(".bare.zip"))],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(child.stdout.strip().splitlines()[-1])["cpu_s"]


def report_cpu(fmt: str, studio_cpu: float, bundle: Path, env: dict, data_dir: Path) -> None:
    """The export's CPU against the bare loop's: in a fresh process (what ``manage.py export_bundle`` pays), then in
    a warm one (what a long-running worker pays: its once-a-process loads done by a first small export), whose
    bundle must be the fresh one's bytes; and the bundle's sha256, to compare code changes on one database."""
    bare_cpu = bare(bundle, env)
    print(
        f"{fmt}: fresh process: export CPU {studio_cpu:.2f} s, bare loop {bare_cpu:.2f} s = {studio_cpu / bare_cpu:.2f}× "
        f"(target ≤{TARGET_BARE[fmt]}×); 1-min load average {os.getloadavg()[0]:.1f}"
    )
    _, _, warm_bundle, warm_cpu = export(fmt, data_dir, env, warm=True)
    print(
        f"{fmt}: warm worker (after a first small export in the process): export CPU {warm_cpu:.2f} s = "
        f"{warm_cpu / bare_cpu:.2f}× the bare loop; 1-min load average {os.getloadavg()[0]:.1f}"
    )
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    if hashlib.sha256(warm_bundle.read_bytes()).hexdigest() != digest:
        sys.exit(f"{fmt}: the warm process's bundle differs from the fresh one's")
    print(f"{fmt}: bundle sha256 {digest}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--format", default="trl")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--parquet-vs-trl", action="store_true", help="export parquet and trl, compare the sizes")
    parser.add_argument("--data", help="reuse this data folder (kept): generated only when it holds no database")
    parser.add_argument("--measure-studio", help=argparse.SUPPRESS)
    parser.add_argument("--measure-bare", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_studio or args.measure_bare:
        sys.path.insert(0, str(REPO))
        measured = (
            measure_studio(args.measure_studio, Path(args.out), warm=args.warm)
            if args.measure_studio
            else measure_bare(Path(args.measure_bare), Path(args.out))
        )
        print(json.dumps(measured))
        return

    data_dir = Path(args.data) if args.data else Path(tempfile.mkdtemp(prefix="export-bench-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "STUDIO_DATA_DIR": str(data_dir),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "STUDIO_SQLITE_PATH": str(data_dir / "bench.sqlite3"),
    }
    env.pop("DATABASE_URL", None)
    started = time.monotonic()
    if not (data_dir / "bench.sqlite3").exists():
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                f"from bench.export import generate; generate({args.pairs}, {args.images}, {args.steps})",
            ],
            cwd=REPO,
            env=env,
            check=True,
        )
        print(
            f"generated {args.pairs} annotated traces ({args.steps} steps, {args.images} images) "
            f"in {time.monotonic() - started:.1f} s"
        )

    subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(REPO)!r}); "
            f"from bench.export import add_warm_up; add_warm_up({WARM_UP_PAIRS}, {args.steps})",
        ],
        cwd=REPO,
        env=env,
        check=True,
    )
    if args.parquet_vs_trl:
        runs = {fmt: export(fmt, data_dir, env) for fmt in ("parquet", "trl")}
        for fmt, (elapsed, rss_mb, out, _) in runs.items():
            print(f"{fmt}: export {elapsed:.1f} s, peak RSS {rss_mb:.0f} MB, bundle {out.stat().st_size / 1e6:.1f} MB")
        for fmt, (_, _, out, cpu) in runs.items():
            report_cpu(fmt, cpu, out, env, data_dir)
        ratio = runs["parquet"][2].stat().st_size / runs["trl"][2].stat().st_size
        print(f"parquet / trl = {ratio:.3f} (target ≤{TARGET_PARQUET_RATIO})")
    else:
        elapsed, rss_mb, out, cpu = export(args.format, data_dir, env)
        with zipfile.ZipFile(out) as bundle:
            infos = bundle.infolist()
        image_bytes = sum(i.file_size for i in infos if i.filename.startswith("images/"))
        text_bytes = sum(i.file_size for i in infos if not i.filename.startswith("images/"))
        bundle_bytes = out.stat().st_size
        budget = TARGET_RATIO * image_bytes + text_bytes
        print(f"export: {elapsed:.1f} s (target ≤{TARGET_S}), peak RSS {rss_mb:.0f} MB (target ≤{TARGET_RSS_MB})")
        print(
            f"bundle {bundle_bytes / 1e6:.1f} MB; unique images {image_bytes / 1e6:.1f} MB; text {text_bytes / 1e6:.1f} MB "
            f"uncompressed; bundle/(1.05×images+text) = {bundle_bytes / budget:.3f} (target ≤1)"
        )
        report_cpu(args.format, cpu, out, env, data_dir)
    print(f"cpu: {os.cpu_count()} cores")
    if not args.keep and not args.data:
        import shutil

        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
