"""`trace-studio` against a live server and a real worker: import with --wait, export with a progress bar and a
download that is interrupted and resumed, a corrupted download that is caught by its checksum, and an incremental
export (--since) with the diff of two bundles."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile

import pytest

from annotation.models import Verdict
from exports.models import ExportJob
from studio.security import api_token_issue
from tests.conftest import REPO
from tests.factories import native_trace_folder
from tests.fixtures_export import accepted_annotation
from trace_studio_cli.client import ApiError, StudioClient
from traces.models import Trace

pytestmark = pytest.mark.worker


def run_cli(live_server, token: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "TRACE_STUDIO_URL": live_server.url, "TRACE_STUDIO_TOKEN": token}
    result = subprocess.run(
        [sys.executable, "-m", "trace_studio_cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if check:
        assert result.returncode == 0, (result.stdout, result.stderr)
    return result


def test_import_export_download_resume_and_checksum(
    live_server, celery_worker, project, annotator, lead, engineer, tmp_path
):
    lead_token, engineer_token = api_token_issue(user=lead), api_token_issue(user=engineer)

    listed = run_cli(live_server, engineer_token, "projects")
    assert f"{project.pk}  {project.name}" in listed.stdout

    folder = native_trace_folder(tmp_path / "traces" / "cli-1", external_id="cli-1", steps=4)
    imported = run_cli(live_server, lead_token, "import", str(folder.parent), "--project", project.name, "--wait")
    assert "succeeded: 1 trace, " in imported.stdout, imported.stdout
    assert "import" in imported.stderr  # the progress bar's label
    trace = Trace.objects.get(project=project, external_id="cli-1")

    refused = run_cli(
        live_server, engineer_token, "import", str(folder.parent), "--project", str(project.pk), check=False
    )
    assert refused.returncode == 1 and "HTTP 403" in refused.stderr

    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        error_category=project.error_categories[0],
        corrected_thought="Open the menu instead.",
        corrected_action="click(start_box='<|box_start|>(120,210)<|box_end|>')",
        reflection_thought="That was the wrong item; go back.",
        reflection_action="hotkey(key='esc')",
    )
    out = tmp_path / "bundles"
    exported = run_cli(
        live_server,
        engineer_token,
        "export",
        "--project",
        str(project.pk),
        "--format",
        "trl",
        "--option",
        "validation_fraction=0",
        "--out",
        str(out),
    )
    assert "succeeded" in exported.stdout and "files match manifest.json" in exported.stdout, exported.stdout
    bundle = next(out.glob("export-*.zip"))
    job_id = int(bundle.stem.split("-")[1])
    whole = bundle.read_bytes()
    assert zipfile.ZipFile(bundle).testzip() is None

    # Interrupted after the first 4 KiB: the partial file stays, and `download` resumes from it with a Range request.
    bundle.unlink()
    client = StudioClient(live_server.url, engineer_token)
    job = client.export_job(job_id)

    def stop_after_first_chunk(have: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        client.download(job, out, on_bytes=stop_after_first_chunk, chunk_size=4096)
    part = out / f"export-{job_id}.zip.part"
    assert part.stat().st_size == 4096
    resumed = run_cli(live_server, engineer_token, "download", str(job_id), "--out", str(out))
    assert "resumed at byte 4096" in resumed.stdout, resumed.stdout
    assert bundle.read_bytes() == whole and not part.exists()

    # A corrupted partial file: the finished bytes do not match the studio's sha256, and nothing is kept.
    part.write_bytes(b"\0" * 4096)
    bundle.unlink()
    corrupt = run_cli(live_server, engineer_token, "download", str(job_id), "--out", str(out), check=False)
    assert corrupt.returncode == 1 and "checksum mismatch" in corrupt.stderr, corrupt.stderr
    assert not part.exists() and not bundle.exists()

    # One more accepted annotation; an incremental export (--since) holds only it, and `diff` says so.
    folder = native_trace_folder(tmp_path / "more" / "cli-2", external_id="cli-2", steps=4)
    run_cli(live_server, lead_token, "import", str(folder.parent), "--project", project.name, "--wait")
    second = accepted_annotation(
        Trace.objects.get(project=project, external_id="cli-2"),
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=1,
        error_category=project.error_categories[0],
        corrected_thought="Type into the search box.",
        corrected_action="click(start_box='<|box_start|>(300,40)<|box_end|>')",
    )
    incremental = run_cli(
        live_server,
        engineer_token,
        "export",
        "--project",
        project.name,
        "--format",
        "trl",
        "--since",
        str(job_id),
        "--wait",
    )
    new_id = int(re.search(r"export (\d+) succeeded", incremental.stdout).group(1))
    assert ExportJob.objects.get(pk=new_id).sources == [[second.pk, second.version]]
    diffed = run_cli(live_server, engineer_token, "diff", str(new_id), "--against", str(job_id))
    # The base's annotation is left out because the base holds it, not removed.
    assert (
        f"export {job_id} -> export {new_id}: 1 added, 0 changed, 0 removed, 1 already in the base" in diffed.stdout
    ), diffed.stdout
    assert f"+ annotation {second.pk} v{second.version}" in diffed.stdout


def test_missing_configuration_is_named(tmp_path):
    with pytest.raises(ApiError, match="TRACE_STUDIO_URL"):
        StudioClient("", "t")
    with pytest.raises(ApiError, match="TRACE_STUDIO_TOKEN"):
        StudioClient("http://127.0.0.1:9", "")
    result = subprocess.run(
        [sys.executable, "-m", "trace_studio_cli.main", "projects"],
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "TRACE_STUDIO_URL" in result.stderr


def test_gold_from_a_file_and_the_quality_report(live_server, project, lead, engineer, tmp_path):
    from tests.fixtures_quality import reference_of, traces_of

    first, second = traces_of(project, 2)
    reference_of(first, annotator=engineer, lead=lead)
    path = tmp_path / "gold.csv"
    path.write_text(f"external_id\n{first.external_id}\n{second.external_id}\n")
    token = api_token_issue(user=lead)
    marked = run_cli(live_server, token, "gold", str(path), "--project", project.name)
    assert "gold: 1 marked, 0 with a new reference, 0 unchanged, 1 refused" in marked.stdout, marked.stdout
    assert f"refused line 3 {second.external_id}: trace {second.external_id} has no answer yet" in marked.stderr
    report = run_cli(live_server, token, "quality", "--project", str(project.pk))
    assert "ann: 0 answers, no gold answers" in report.stdout, report.stdout
    refused = run_cli(
        live_server, api_token_issue(user=engineer), "gold", str(path), "--project", str(project.pk), check=False
    )
    assert refused.returncode == 1 and "HTTP 403" in refused.stderr
