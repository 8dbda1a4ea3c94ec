"""Export benchmark: 100,000 DPO pairs from a generated database to one TRL bundle.

    .venv/bin/python bench/export.py [--pairs 100000] [--images 2000] [--steps 3] [--format trl]
    .venv/bin/python bench/export.py --parquet-vs-trl [--pairs 100000] [--steps 5]

Generates (once per run, in a temporary data folder outside the repository) a SQLite database with
``--pairs`` traces of ``--steps`` steps sharing ``--images`` distinct PNG screenshots, one accepted
annotation with an error per trace; then a fresh child process runs
``manage.py export_bundle`` and the parent reports its wall time and peak RSS (wait4 rusage), and the
bundle size against unique image bytes + text. Targets: ≤120 s, ≤500 MB, bundle ≤1.05 × images + text.

``--parquet-vs-trl`` exports the same database twice, as ``parquet`` and as ``trl``, each in a fresh child process,
and reports both times and peak RSS and the size ratio parquet / trl (target ≤1.10: a Parquet bundle stores each
screenshot once, in ``images.parquet``, as the TRL bundle's ``images/`` does). With ``--steps 5`` every sample's
prompt holds a 5-screenshot history (the project's window).
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_S, TARGET_RSS_MB, TARGET_RATIO = 120, 500, 1.05
TARGET_PARQUET_RATIO = 1.10


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
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from django.db import transaction
    from PIL import Image

    from annotation.models import Annotation, AnnotationStatus, Verdict
    from traces.models import Screenshot, Step, Trace, screenshot_path
    from traces.services import reply_parse

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
        import hashlib

        shot = Screenshot(
            sha256=hashlib.sha256(data).hexdigest(), format="PNG", width=640, height=400, byte_size=len(data)
        )
        shot.image.name = default_storage.save(screenshot_path(shot, "x.png"), ContentFile(data))
        shots.append(shot)
    Screenshot.objects.bulk_create(shots, batch_size=1000, ignore_conflicts=True)  # same seed, same images
    shots = list(Screenshot.objects.filter(sha256__in=[s.sha256 for s in shots]).order_by("id"))
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


def export(fmt: str, data_dir: Path, env: dict) -> tuple[float, float, Path]:
    """Export the bench project as ``fmt`` in a fresh child process: (wall seconds, peak RSS in MB, the bundle)."""
    out = data_dir / f"bundle-{fmt}.zip"
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "manage.py", "export_bundle", "--project", "bench", "--format", fmt, "--out", str(out)],
        cwd=REPO,
        env=env,
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.monotonic() - started
    if status != 0:
        sys.exit(f"{fmt} export failed with status {status}")
    return elapsed, usage.ru_maxrss / 1024, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--format", default="trl")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--parquet-vs-trl", action="store_true", help="export parquet and trl, compare the sizes")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="export-bench-"))
    env = {
        **os.environ,
        "STUDIO_DATA_DIR": str(data_dir),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "STUDIO_SQLITE_PATH": str(data_dir / "bench.sqlite3"),
    }
    env.pop("DATABASE_URL", None)
    started = time.monotonic()
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
        f"generated {args.pairs} annotated traces ({args.steps} steps, {args.images} images) in {time.monotonic() - started:.1f} s"
    )

    if args.parquet_vs_trl:
        runs = {fmt: export(fmt, data_dir, env) for fmt in ("parquet", "trl")}
        for fmt, (elapsed, rss_mb, out) in runs.items():
            print(f"{fmt}: export {elapsed:.1f} s, peak RSS {rss_mb:.0f} MB, bundle {out.stat().st_size / 1e6:.1f} MB")
        ratio = runs["parquet"][2].stat().st_size / runs["trl"][2].stat().st_size
        print(f"parquet / trl = {ratio:.3f} (target ≤{TARGET_PARQUET_RATIO})")
    else:
        elapsed, rss_mb, out = export(args.format, data_dir, env)
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
    print(f"cpu: {os.cpu_count()} cores")
    if not args.keep:
        import shutil

        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
