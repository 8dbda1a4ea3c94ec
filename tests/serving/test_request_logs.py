"""The request's id and the JSON log lines (studio/logs.py, studio/observability.py)."""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.test import Client

from studio.logs import ContextFilter, StudioJsonFormatter, logging_config


@pytest.fixture
def json_lines():
    """What the studio's loggers write in production (STUDIO_LOG_FORMAT=json), one parsed object a line."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(StudioJsonFormatter())
    handler.addFilter(ContextFilter())
    attached = [logging.getLogger(name) for name in ("studio", "django.request")]
    leveled = [*attached, logging.getLogger("studio.requests")]  # off in the plain format the tests run with
    levels = [logger.level for logger in leveled]
    for logger in attached:
        logger.addHandler(handler)
    for logger in leveled:
        logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    for logger in attached:
        logger.removeHandler(handler)
    for logger, level in zip(leveled, levels, strict=True):
        logger.setLevel(level)


def test_every_response_carries_a_request_id_and_a_proxys_well_formed_one_is_kept(db):
    client = Client()
    mine = client.get("/login/")
    again = client.get("/login/")
    assert len(mine["X-Request-ID"]) == 32 and mine["X-Request-ID"] != again["X-Request-ID"]
    kept = client.get("/login/", HTTP_X_REQUEST_ID="caddy-7f3a9c01-1")
    assert kept["X-Request-ID"] == "caddy-7f3a9c01-1"
    forged = client.get("/login/", HTTP_X_REQUEST_ID='x" level=ERROR\nforged line')
    assert forged["X-Request-ID"] != 'x" level=ERROR\nforged line' and len(forged["X-Request-ID"]) == 32


def test_a_json_error_and_a_refusal_page_show_the_request_id(project, annotator):
    client = Client()
    client.force_login(annotator)
    api = client.get("/api/traces/999999/")
    assert api.status_code == 404 and api.json()["request_id"] == api["X-Request-ID"]
    assert api["Content-Length"] == str(len(api.content))  # the body grew after Django counted it
    page = client.get("/traces/999999/")
    assert page.status_code == 404 and page["X-Request-ID"] in page.content.decode()


def test_one_json_line_per_request_names_route_status_user_and_id(project, annotator, json_lines):
    client = Client()
    client.force_login(annotator)
    answer = client.get(f"/api/projects/{project.pk}/")
    missing = client.get("/api/traces/999999/")
    lines = json_lines()
    requests = [line for line in lines if line.get("event") == "request"]
    assert [r["status"] for r in requests] == [answer.status_code, 404]
    first, second = requests
    assert first["route"] == "/api/projects/<int:pk>/" and first["path"] == f"/api/projects/{project.pk}/"
    assert first["request_id"] == answer["X-Request-ID"] and first["user_id"] == annotator.pk
    assert first["logger"] == "studio.requests" and first["level"] == "INFO" and first["duration_ms"] > 0
    # A line logged while the request ran (Django's warning about the 404) names the same request.
    warned = [line for line in lines if line["logger"] == "django.request"]
    assert warned and warned[0]["request_id"] == missing["X-Request-ID"] == second["request_id"]


def test_the_plain_format_keeps_todays_lines_without_a_line_per_request():
    plain = logging_config(log_format="plain", level="INFO")
    assert plain["formatters"]["studio"] == {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    assert plain["loggers"]["studio.requests"]["level"] == "WARNING"
    assert logging_config(log_format="json", level="INFO")["loggers"]["studio.requests"]["level"] == "INFO"


@pytest.mark.django_db(transaction=True)
def test_a_workers_lines_name_the_job(project, engineer, json_lines, monkeypatch):
    from exports.services import export_job_create
    from studio.celery import app as celery_app
    from studio.engine import _task

    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)  # its shards' tasks run here too

    job = export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    _task("jobs.export.run")(job.pk)  # the worker's task, run here
    lines = [line for line in json_lines() if line["logger"].startswith("studio")]
    events = [line for line in lines if line.get("event") == "job"]
    assert [e["status"] for e in events][:1] == ["running"]
    assert events[-1]["status"] in {"succeeded", "failed"} and "duration_s" in events[-1]
    assert all(line["job_id"] == job.pk for line in lines), lines
    assert any(line.get("shard") == 0 for line in lines), lines  # a line of its shard's task names the shard
    assert all(e["job_kind"] == "export" and e["queue"] == "default" for e in events)
