"""/metrics: Prometheus' scrape of every process's counters and of what the database and disks hold now
(studio/metrics.py), for the addresses the operator allows."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.serving.test_settings_and_pages import run_manage


def scrape(client: Client | None = None, *, families: tuple[str, ...] = ()) -> dict[tuple[str, frozenset], float]:
    """The samples of a scrape: of the ``families`` named (their lines alone parsed: the requests of every test
    before in this process are there, tens of thousands of lines), else of all."""
    answer = (client or Client()).get("/metrics")
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"].startswith("text/plain; version=0.0.4")
    text = answer.content.decode()
    if families:
        named = tuple(f"{prefix} {name}" for name in families for prefix in ("# HELP", "# TYPE")) + families
        text = "".join(line for line in text.splitlines(keepends=True) if line.startswith(named))
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_requests_are_counted_by_route_and_status(project, annotator):
    client = Client()
    client.force_login(annotator)
    route = "/api/projects/<int:pk>/"
    http = ("studio_http_requests", "studio_http_request_duration_seconds")
    before = scrape(families=http)
    for _ in range(3):
        assert client.get(f"/api/projects/{project.pk}/").status_code == 200
    assert client.get("/api/projects/999999/").status_code == 404
    after = scrape(families=http)
    ok = {"route": route, "method": "GET", "status": "200"}
    assert value(after, "studio_http_requests_total", **ok) - value(before, "studio_http_requests_total", **ok) == 3
    missing = {**ok, "status": "404"}
    assert (
        value(after, "studio_http_requests_total", **missing) - value(before, "studio_http_requests_total", **missing)
        == 1
    )
    histogram = "studio_http_request_duration_seconds_count"
    assert value(after, histogram, **ok) - value(before, histogram, **ok) == 3
    assert value(after, "studio_http_request_duration_seconds_bucket", **ok, le="+Inf") >= 3


def test_jobs_waiting_and_disks_are_read_at_scrape_time(project, engineer):
    from exports.services import export_job_create

    export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    samples = scrape(families=("studio_jobs", "studio_disk_free_bytes", "studio_disk_size_bytes"))
    assert value(samples, "studio_jobs", kind="export", status="queued") == 1
    assert value(samples, "studio_jobs", kind="import", status="running") == 0
    assert value(samples, "studio_jobs_oldest_queued_age_seconds", kind="export") >= 0
    assert ("studio_jobs_oldest_queued_age_seconds", frozenset({("kind", "delivery")})) in samples
    assert (
        0
        < value(samples, "studio_disk_free_bytes", path="data")
        <= value(samples, "studio_disk_size_bytes", path="data")
    )


def test_a_method_http_does_not_define_is_counted_as_other(project, annotator):
    """A scanner's methods (WebDAV's, made-up ones) are one label, `_OTHER`, whatever they are; the methods HTTP
    defines keep their names (the control)."""
    client = Client()
    client.force_login(annotator)
    route = "/api/projects/<int:pk>/"
    http = ("studio_http_requests",)
    before = scrape(families=http)
    for method in ("PROPFIND", "MKCOL", "BREW"):
        assert client.generic(method, f"/api/projects/{project.pk}/").status_code == 405
    assert client.options(f"/api/projects/{project.pk}/").status_code == 200
    after = scrape(families=http)
    counted = {
        labels["method"]: count - before.get((name, key), 0.0)
        for (name, key), count in after.items()
        if name == "studio_http_requests_total" and (labels := dict(key))["route"] == route
    }
    assert {method: n for method, n in counted.items() if n} == {"_OTHER": 3, "OPTIONS": 1}


def test_login_failures_are_counted(annotator):
    logins = ("studio_login_failures",)
    before = value(scrape(families=logins), "studio_login_failures_total")
    assert Client().post("/login/", {"username": "ann", "password": "wrong"}).status_code == 200
    assert value(scrape(families=logins), "studio_login_failures_total") - before == 1


def test_a_scrape_from_an_address_not_allowed_is_refused_saying_so(db, settings):
    refused = Client(REMOTE_ADDR="203.0.113.9").get("/metrics")
    assert refused.status_code == 403
    assert refused.content.decode().startswith("Metrics are not served to 203.0.113.9: ")
    assert "STUDIO_METRICS_ALLOW" in refused.content.decode() and "studio_" not in refused.content.decode()
    settings.METRICS_ALLOW = ["203.0.113.0/24"]
    assert Client(REMOTE_ADDR="203.0.113.9").get("/metrics").status_code == 200
    settings.METRICS_ALLOW = []  # "none"
    assert Client().get("/metrics").status_code == 403


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"STUDIO_METRICS_ALLOW": "10.0.0.0/8,the-proxy"}, "STUDIO_METRICS_ALLOW: 'the-proxy' is neither"),
        ({"STUDIO_LOG_FORMAT": "xml"}, "STUDIO_LOG_FORMAT must be json or plain, not 'xml'"),
    ],
)
def test_a_misconfiguration_stops_the_start_naming_the_setting(tmp_path, setting, said):
    result = run_manage("check", env_extra={"STUDIO_DATA_DIR": str(tmp_path), **setting})
    assert result.returncode != 0 and said in result.stderr, result.stderr[-2000:]


def test_a_stacks_start_clears_the_metric_files_of_processes_that_are_gone(settings, tmp_path):
    from studio.metrics import metrics_files_clear

    settings.METRICS_DIR = tmp_path
    (tmp_path / "counter_host-123.db").write_bytes(b"\0" * 8)
    (tmp_path / "notes.txt").write_text("not a metric file")
    assert metrics_files_clear() == 1
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


@pytest.mark.django_db(transaction=True)
def test_draft_saves_and_their_conflicts_are_counted(project, annotator, tmp_path):
    import json

    from tests.fixtures_annotation import make_traces

    make_traces(project, tmp_path, count=1, steps=3)
    client = Client()
    client.force_login(annotator)
    annotation = client.post(f"/api/projects/{project.pk}/next-trace/").json()["annotation"]

    def save(version: int, note: str):
        body = json.dumps({"version": version, "note": note, "verdict": "error", "tau": 2})
        return client.put(f"/api/annotations/{annotation['id']}/draft/", data=body, content_type="application/json")

    saves = ("studio_draft_saves",)
    before = scrape(families=saves)
    assert save(annotation["version"], "first").status_code == 200
    assert save(annotation["version"], "stale").status_code == 409  # based on the version the first save replaced
    after = scrape(families=saves)
    for outcome in ("saved", "conflict"):
        counted = value(after, "studio_draft_saves_total", outcome=outcome)
        assert counted - value(before, "studio_draft_saves_total", outcome=outcome) == 1, outcome


@pytest.mark.django_db(transaction=True)
def test_a_jobs_end_is_timed_and_a_failure_counted_by_kind_and_queue(project, engineer, monkeypatch):
    from exports.models import ExportJob
    from exports.services import export_job_create
    from studio.celery import app as celery_app
    from studio.engine import _task

    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    job = export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    jobs = ("studio_job_duration_seconds", "studio_job_failures")
    before = scrape(families=jobs)
    _task("jobs.export.run")(job.pk)
    ended = ExportJob.objects.get(pk=job.pk).status
    after = scrape(families=jobs)
    labels = {"kind": "export", "queue": "default", "status": ended}
    histogram = "studio_job_duration_seconds_count"
    assert value(after, histogram, **labels) - value(before, histogram, **labels) == 1
    failures = value(after, "studio_job_failures_total", kind="export", queue="default") - value(
        before, "studio_job_failures_total", kind="export", queue="default"
    )
    assert failures == (1 if ended == "failed" else 0)


@pytest.fixture
def local_storage(settings, tmp_path):
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {**settings.STORAGES["default"], "OPTIONS": {"location": str(tmp_path / "media")}},
    }


def test_the_last_backups_success_and_failure_are_read_from_the_database_at_scrape_time(db, local_storage, tmp_path):
    from studio.backup import BackupProblem, backup_make
    from studio.models import BackupOutcome

    success, failure = "studio_backup_last_success_timestamp_seconds", "studio_backup_last_failure_timestamp_seconds"
    backups = (success, failure)
    assert (success, frozenset()) not in scrape(families=backups)  # no backup ever ran: nothing to alert on
    started = time.time()
    backup_make(target=tmp_path / "studio.tar")
    samples = scrape(families=backups)
    assert started - 1 <= samples[(success, frozenset())] <= time.time()
    assert samples[(failure, frozenset())] == 0

    nowhere = tmp_path / "not-mounted" / "studio.tar"
    with pytest.raises(BackupProblem):
        backup_make(target=nowhere)
    after = scrape(families=backups)
    assert after[(success, frozenset())] == samples[(success, frozenset())]  # a refusal is no success
    assert after[(failure, frozenset())] > after[(success, frozenset())]
    recorded = BackupOutcome.objects.get()
    assert recorded.last_failure_message == (
        f"the backup could not be written to {nowhere}: No such file or directory; nothing was kept"
    )
