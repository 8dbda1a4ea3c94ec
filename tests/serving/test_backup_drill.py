"""The backup drill on the full stack (tests/stack.py: PostgreSQL, Redis, S3 on moto, Caddy, uvicorn, a worker), as
docs/deploy.md's "Backups" and "Restoring" say to run it: a project with imported traces, a submitted and accepted
annotation (versions, audit rows) that a lead marks as its trace's gold reference, another annotator's scored answer
on that gold trace, a draft and a bundle is backed up while the studio serves; the database and the bucket are
destroyed and made again empty; the backup is restored and the studio started again. Every table has its rows,
every screenshot its bytes, the gold trace its reference and the gold answer its score, the old bundle downloads
as it was, a re-export gives the same bytes, the old session still works and the draft can still be submitted."""

from __future__ import annotations

import hashlib
import json
import tarfile
import time

import boto3
import pytest
import requests

from tests.serving.test_fullstack import annotate_and_submit
from tests.stack import BUCKET, Stack, running_stack, sha256_of, wait_until

pytestmark = [pytest.mark.fullstack, pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")]

ROW_COUNTS = """
select table_name, (xpath('/row/c/text()', query_to_xml(format('select count(*) as c from %I', table_name),
       false, true, '')))[1]::text
from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory, collected_static):
    yield from running_stack(tmp_path_factory, collected_static)


def table_rows(stack: Stack) -> dict[str, int]:
    lines = stack.psql(" ".join(ROW_COUNTS.split()), stack.db_name).splitlines()
    return {name: int(count) for name, count in (line.split("|") for line in lines)}


def bucket(stack: Stack):
    return boto3.resource(
        "s3",
        endpoint_url=stack.s3_internal,
        aws_access_key_id=stack.env["STUDIO_S3_ACCESS_KEY_ID"],
        aws_secret_access_key=stack.env["STUDIO_S3_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    ).Bucket(BUCKET)


def screenshot_bytes_match(stack: Stack) -> dict[str, bool]:
    """Each screenshot row's sha256: whether the bytes stored under its name have it."""
    rows = stack.psql("select sha256, image from traces_screenshot order by id", stack.db_name).splitlines()
    store = bucket(stack)
    return {
        sha: hashlib.sha256(store.Object(name).get()["Body"].read()).hexdigest() == sha
        for sha, name in (row.split("|") for row in rows)
    }


def run(stack: Stack, *args: str) -> tuple[str, float]:
    started = time.monotonic()
    command = stack.manage(*args)
    out, _ = command.communicate(timeout=600)
    assert command.returncode == 0, out[-3000:]
    return out, time.monotonic() - started


def export(stack: Stack, engineer) -> dict:
    started = engineer.post(f"/api/projects/{stack.project_id}/exports/", json={"format": "trl"})
    assert started.status_code in (200, 201, 202), started.text[:300]
    job = stack.wait_job(engineer, f"/api/exports/{started.json()['id']}/")
    assert job["status"] == "succeeded", job
    return job


def bundle_bytes(engineer, job_id: int) -> bytes:
    link = engineer.get(f"/api/exports/{job_id}/bundle", allow_redirects=False)
    assert link.status_code == 302, link.text[:300]
    return requests.get(link.headers["Location"], verify=False, timeout=30).content


def restart(stack: Stack) -> None:
    stack.web.start()
    logged = stack.worker.log.stat().st_size
    stack.worker.start()
    stack.wait_web()
    wait_until(
        lambda: "ready." in stack.worker.log.read_bytes()[logged:].decode(errors="replace"),
        60,
        "celery worker",
        stack.worker.proc,
        stack.worker.log,
    )


def test_a_backup_restored_into_a_new_database_and_bucket_is_the_studio_as_it_was(stack, tmp_path):
    lead, annotator, engineer = (stack.login(name) for name in ("lead", "annotator", "engineer"))
    job = stack.wait_job(lead, f"/api/imports/{stack.import_traces(lead, 4, 'bk-')['id']}/")
    assert job["status"] == "succeeded", job
    accepted = annotate_and_submit(stack, annotator)
    assert lead.post(f"/api/reviews/{accepted}/accept/", json={}).status_code == 200
    # A second annotation left a draft (two saved versions), to be handed in after the restore.
    draft = annotator.post(f"/api/projects/{stack.project_id}/next-trace/").json()["annotation"]["id"]
    saved = annotator.put(f"/api/annotations/{draft}/draft/", json={"version": 1, "verdict": "no_error"})
    assert saved.status_code == 200, saved.text[:300]
    # The accepted answer becomes its trace's gold reference; one in one of the checker's traces is gold, so their
    # first answer is that trace's, scored against the reference when handed in.
    marked = lead.post(f"/api/projects/{stack.project_id}/gold/", json={"annotation": accepted})
    assert marked.status_code in (200, 201), marked.text[:300]
    gold_id = marked.json()["id"]
    quality = lead.request("PATCH", f"/api/projects/{stack.project_id}/quality/settings/", json={"gold_every": 1})
    assert quality.status_code == 200, quality.text[:300]
    gold_answer = annotate_and_submit(stack, stack.login("checker"))
    gold_before = lead.get(f"/api/gold/{gold_id}/").json()
    assert gold_before["reference"]["id"] == accepted, gold_before
    assert [(score["annotation_id"], score["correct"]) for score in gold_before["scores"]] == [(gold_answer, True)]
    feedback_before = lead.get(f"/api/annotations/{gold_answer}/feedback/")
    assert feedback_before.status_code == 200, feedback_before.text[:300]
    before_export = export(stack, engineer)
    bundle_before = bundle_bytes(engineer, before_export["id"])
    assert sha256_of(bundle_before) == before_export["bundle_sha256"]

    rows_before = table_rows(stack)
    assert rows_before["annotation_auditevent"] >= 5  # each saved version, the hand-in and the acceptance
    assert rows_before["traces_screenshot"] >= 4 * 3 and rows_before["exports_exportjob"] == 1
    assert rows_before["annotation_goldtrace"] == 1 and rows_before["annotation_goldscore"] == 1
    shots_before = screenshot_bytes_match(stack)
    assert shots_before and all(shots_before.values())

    # The backup, taken while the web server and the worker run.
    archive = tmp_path / "backups" / "studio-drill.tar"
    archive.parent.mkdir()
    out, backup_s = run(stack, "backup", str(archive))
    assert f"to {archive}" in out, out
    with tarfile.open(archive) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())
    assert manifest["tables"] == rows_before  # nothing was written meanwhile: the snapshot's rows are these
    stored = {item.key for item in bucket(stack).objects.all()}
    assert {entry["name"] for entry in manifest["files"]} == stored

    # Disaster: the studio stops, the database and the bucket are gone; then made again, empty.
    stack.web.stop()
    stack.worker.stop()
    stack.psql(f"select pg_terminate_backend(pid) from pg_stat_activity where datname = '{stack.db_name}'")
    stack.psql(f'drop database "{stack.db_name}"')
    store = bucket(stack)
    store.objects.all().delete()
    store.delete()
    stack.psql(f'create database "{stack.db_name}"')
    without_bucket = stack.manage("restore", str(archive))
    out, _ = without_bucket.communicate(timeout=120)
    assert without_bucket.returncode == 1 and f"is the bucket {BUCKET} there" in out, out[-2000:]
    assert table_rows(stack) == {}  # refused before the database was touched
    store.create()

    out, restore_s = run(stack, "restore", str(archive))
    assert "every count matches the backup's" in out, out
    print(
        f"\nbackup {backup_s:.1f} s, restore {restore_s:.1f} s, archive {archive.stat().st_size} bytes: "
        f"{sum(rows_before.values())} rows, {len(stored)} files"
    )
    # The one row that differs: the backups' outcome, which the restore sets to the archive it restored.
    assert table_rows(stack) == {**rows_before, "studio_backupoutcome": 1}
    assert screenshot_bytes_match(stack) == shots_before
    restart(stack)

    # The gold trace kept its reference and the gold answer its score and comparison.
    assert lead.get(f"/api/gold/{gold_id}/").json() == gold_before
    assert lead.get(f"/api/annotations/{gold_answer}/feedback/").json() == feedback_before.json()

    # The people's sessions came back with the database: the same clients go on.
    assert sha256_of(bundle_bytes(engineer, before_export["id"])) == before_export["bundle_sha256"]
    after_export = export(stack, engineer)
    assert after_export["id"] != before_export["id"]
    assert after_export["bundle_sha256"] == before_export["bundle_sha256"]
    assert bundle_bytes(engineer, after_export["id"]) == bundle_before
    submitted = annotator.post(f"/api/annotations/{draft}/submit/", json={"version": 2})
    assert submitted.status_code == 200, submitted.text[:300]
