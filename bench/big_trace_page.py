"""A long trace's pages: bytes and server time of the workspace, the review page and the trace page, and of the step
window API, for one trace of ``--steps`` steps (5,000 by default).

    .venv/bin/python bench/big_trace_page.py [--steps 5000] [--repeat 5]

Imports the trace through the real importer into a fresh embedded (SQLite) data folder (every step on one small
screenshot, so the import takes seconds), leases it to an annotator and times, through Django's request handling
(``django.test.Client``, DEBUG off): the workspace page opened on step 1, the same page once τ is marked at 4/5 of
the trace (its window is carried instead), one window of the step API, the trace page (as its lead), the review page
of the answer with that τ and one window of the review step API, and the review page of the submitted "no error"
answer. Each is requested ``--repeat`` times after one warm-up; reported: the page's bytes and the median and slowest
server time. The bar of every page: under 300 KB at 5,000 steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _setup_django(data_dir: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ["STUDIO_DATA_DIR"] = str(data_dir)
    os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _timed(client, url: str, repeat: int) -> dict:
    client.get(url)  # warm-up
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
        size = len(response.content)
    return {"bytes": size, "median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-big-trace-") as tmp:
        _setup_django(Path(tmp) / "data")
        from django.test import Client

        from annotation import services
        from studio.demo import user_create_with_role
        from studio.permissions import Role
        from tests.fixtures_annotation import import_folder, write_native_trace
        from traces.models import Trace
        from traces.services import project_create

        annotator = user_create_with_role(username="bench-annotator", password="bench-pass-8812", role=Role.ANNOTATOR)
        lead = user_create_with_role(username="bench-lead", password="bench-pass-8812", role=Role.LEAD)
        project = project_create(name="Bench long trace", members=[annotator, lead])
        started = time.perf_counter()
        folder = write_native_trace(Path(tmp) / "trace", steps=args.steps, size=(320, 200), shared_screen=True)
        import_folder(project, folder)
        imported_s = time.perf_counter() - started
        trace = Trace.objects.get(project=project)
        annotation, _lease = services.lease_next_trace(user=annotator, project=project)

        as_annotator, as_lead = Client(), Client()
        as_annotator.force_login(annotator)
        as_lead.force_login(lead)
        workspace = f"/annotations/{annotation.pk}/"
        rows = {"workspace (opens on step 1)": _timed(as_annotator, workspace, args.repeat)}
        tau = max(1, args.steps * 4 // 5)
        annotation = services.annotation_save_draft(
            annotation_id=annotation.pk,
            user=annotator,
            base_version=annotation.version,
            fields={"verdict": "error", "tau": tau, "error_category": project.error_categories[0]},
        )
        rows[f"workspace (τ = {tau})"] = _timed(as_annotator, workspace, args.repeat)
        window = f"/api/annotations/{annotation.pk}/steps/?first={tau - 49}&last={tau}"
        if as_annotator.get(window).status_code == 200:
            rows["step window API (50 steps)"] = _timed(as_annotator, window, args.repeat)
        rows["trace page (lead)"] = _timed(as_lead, f"/traces/{trace.pk}/", args.repeat)
        rows[f"review page (τ = {tau}, lead)"] = _timed(as_lead, f"/reviews/{annotation.pk}/", args.repeat)
        review_window = f"/api/reviews/{annotation.pk}/steps/?first={tau - 49}&last={tau}"
        rows["review step API (50 steps)"] = _timed(as_lead, review_window, args.repeat)
        annotation = services.annotation_save_draft(
            annotation_id=annotation.pk, user=annotator, base_version=annotation.version, fields={"verdict": "no_error"}
        )
        services.annotation_submit(annotation_id=annotation.pk, user=annotator, base_version=annotation.version)
        rows["review page (lead)"] = _timed(as_lead, f"/reviews/{annotation.pk}/", args.repeat)

        load = os.getloadavg()
        print(
            f"{args.steps} steps, imported in {imported_s:.1f} s; load average {load[0]:.2f} on {os.cpu_count()} cores"
        )
        for name, row in rows.items():
            print(
                f"  {name:32} {row['bytes'] / 1024:9.1f} KB   median {row['median_ms']:7.1f} ms   max {row['max_ms']:7.1f} ms"
            )


if __name__ == "__main__":
    main()
