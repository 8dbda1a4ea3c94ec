"""The studio's settings per mode and their production checks, the compose file, SQLite under concurrent writers, the
pages and API on imported traces, the demo's world and the admin."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from traces.services import project_create

REPO = Path(__file__).resolve().parent.parent.parent


def run_manage(*args, env_extra=None, check=False):
    # A clean environment: the browser fixture's DJANGO_ALLOW_ASYNC_UNSAFE must not leak into a deploy check.
    dropped = ("DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STUDIO_") and k not in dropped}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, check=check
    )


PRODUCTION_ENV = {
    "STUDIO_MODE": "production",
    "STUDIO_SECRET_KEY": "k" * 20 + "-production-secret-for-tests-only-0123456789",
    "STUDIO_ALLOWED_HOSTS": "studio.example.org",
}


class TestSettings:
    @pytest.mark.subprocess
    def test_production_check_deploy_is_clean(self, tmp_path, collected_static):
        result = run_manage(
            "check",
            "--deploy",
            "--fail-level",
            "WARNING",
            env_extra={**PRODUCTION_ENV, "STUDIO_DATA_DIR": str(tmp_path), "STUDIO_STATIC_ROOT": str(collected_static)},
        )
        assert result.returncode == 0, result.stdout + result.stderr

    def test_production_refuses_demo_password(self, tmp_path):
        result = run_manage(
            "check",
            env_extra={**PRODUCTION_ENV, "STUDIO_DATA_DIR": str(tmp_path), "STUDIO_DEMO_PASSWORD": "demo-pass-1234"},
        )
        assert result.returncode != 0
        assert "demo passwords exist only in demo mode" in result.stderr

    def test_production_refuses_dev_secret_key(self, tmp_path):
        result = run_manage("check", env_extra={"STUDIO_MODE": "production", "STUDIO_DATA_DIR": str(tmp_path)})
        assert result.returncode != 0
        assert "STUDIO_SECRET_KEY" in result.stderr

    def test_seed_demo_refuses_outside_demo_mode(self, tmp_path):
        result = run_manage("seed_demo", env_extra={"STUDIO_DATA_DIR": str(tmp_path)})
        assert result.returncode != 0
        assert "seed_demo runs only with STUDIO_MODE=demo" in result.stderr

    def test_sqlite_runs_in_wal_mode_with_busy_timeout(self, db):
        if connection.vendor != "sqlite":
            pytest.skip("SQLite-only pragmas; this run uses " + connection.vendor)
        with connection.cursor() as cursor:
            assert cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert cursor.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000


def test_docker_compose_file_is_valid():
    if not shutil.which("docker-compose"):
        pytest.skip("docker-compose (Debian package) is not installed; .ci/run installs it")
    env = {**os.environ, "STUDIO_SECRET_KEY": "x" * 60}
    result = subprocess.run(
        ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "config", "-q"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    config = subprocess.run(
        ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "config"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    for service in ("web:", "worker:", "gpu-worker:", "postgres:", "redis:", "minio:"):
        assert service in config
    assert "-Q\n      - gpu" in config or "- gpu" in config
    assert "capabilities:\n              - gpu" in config or "driver: nvidia" in config


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_never_see_database_locked(make_user):
    """Twenty threads writing at once: every write lands, none fails (SQLite: WAL + IMMEDIATE + retry)."""
    from django.db import close_old_connections

    from studio.db import atomic_with_retry
    from traces.models import Project

    user = make_user("writer")
    failures, done = [], []

    @atomic_with_retry
    def write(n: int):
        project = project_create(name=f"concurrent {n}", members=[user])
        Project.objects.filter(pk=project.pk).update(description="x" * 1000)

    def worker(n):
        try:
            for k in range(5):
                write(n * 100 + k)
            done.append(n)
        except Exception as exc:  # the assertion below shows what went wrong
            failures.append(repr(exc))
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert Project.objects.filter(name__startswith="concurrent ").count() == 100


@pytest.fixture(scope="class")
def pages_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The class's users and a project of 30 imported traces, built once in a transaction rolled back after the
    class's last test; each test (``db``) runs in a savepoint of it and rolls back to it."""
    from django.db import transaction

    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from tests.conftest import TEST_PASSWORD
    from tests.factories import native_trace_folder
    from traces.services import import_job_create, import_job_run

    with django_db_blocker.unblock(), transaction.atomic():
        users = {
            role: user_create_with_role(username=name, password=TEST_PASSWORD, role=role)
            for name, role in (("ann", Role.ANNOTATOR), ("leader", Role.LEAD), ("eng", Role.ENGINEER))
        }
        project = project_create(name="Test project", members=list(users.values()))
        folder = tmp_path_factory.mktemp("pages-traces")
        for n in range(30):
            native_trace_folder(
                folder / f"t{n}", external_id=f"trace-{n}", instruction=f"Open settings number {n}", steps=2
            )
        job = import_job_create(project=project, user=None, upload_name=str(folder), server_path=True, enqueue=False)
        job = import_job_run(job_id=job.pk)
        assert job.status == "succeeded", job.message
        yield {"annotator": users[Role.ANNOTATOR], "project": project}
        transaction.set_rollback(True)


class TestPagesAndApi:
    """Pages and API on one project of imported traces (``pages_world``)."""

    @pytest.fixture
    def annotator(self, pages_world, db):
        return pages_world["annotator"]

    @pytest.fixture
    def project(self, pages_world, db):
        return pages_world["project"]

    @pytest.fixture
    def traces(self, project):
        return project

    def test_login_required(self, client, db):
        response = client.get(reverse("project-list"))
        assert response.status_code == 302 and "/login/" in response["Location"]

    def test_member_sees_project_and_traces_with_search_and_pages(self, client, annotator, traces):
        client.force_login(annotator)
        page = client.get(reverse("project-list"))
        assert traces.name in page.content.decode()
        listing = client.get(reverse("trace-list", args=[traces.pk]))
        assert listing.status_code == 200
        assert "Page 1 of 2" in listing.content.decode()
        found = client.get(reverse("trace-list", args=[traces.pk]), {"q": "number 17"})
        assert "trace-17" in found.content.decode() and "trace-16" not in found.content.decode()

    def test_non_member_sees_nothing(self, client, make_user, traces):
        stranger = make_user("stranger")
        client.force_login(stranger)
        assert traces.name not in client.get(reverse("project-list")).content.decode()
        assert client.get(reverse("trace-list", args=[traces.pk])).status_code == 404
        trace = traces.traces.first()
        assert client.get(reverse("trace-detail", args=[trace.pk])).status_code == 404
        shot = trace.steps.first().screenshot
        assert client.get(f"/screenshots/{shot.sha256}/image").status_code == 404

    def test_trace_view_shows_text_not_html(self, client, annotator, project, tmp_path):
        from tests.factories import native_trace_folder
        from traces.services import import_job_create, import_job_run

        native_trace_folder(
            tmp_path / "x",
            external_id="xss",
            instruction="<script>alert('i')</script>",
            steps=1,
            thought="<img src=x onerror=alert(1)>",
        )
        import_job_run(
            job_id=import_job_create(
                project=project, user=None, upload_name=str(tmp_path), server_path=True, enqueue=False
            ).pk
        )
        client.force_login(annotator)
        trace = project.traces.get(external_id="xss")
        html = client.get(reverse("trace-detail", args=[trace.pk])).content.decode()
        assert "<script>alert" not in html and "&lt;script&gt;alert" in html
        assert "<img src=x" not in html
        assert "script-src 'self'" in client.get(reverse("trace-detail", args=[trace.pk]))["Content-Security-Policy"]

    def test_screenshot_and_thumbnail_served_to_members(self, client, annotator, traces):
        client.force_login(annotator)
        shot = traces.traces.first().steps.first().screenshot
        image = client.get(f"/screenshots/{shot.sha256}/image")
        assert image.status_code == 200 and image["Content-Type"] == "image/png"
        thumb = client.get(f"/screenshots/{shot.sha256}/thumbnail")
        assert thumb.status_code == 200 and thumb["Content-Type"] == "image/webp"
        assert b"".join(thumb.streaming_content)[:4] == b"RIFF"

    def test_api_lists_traces_with_token_auth(self, annotator, traces):
        from rest_framework.authtoken.models import Token
        from rest_framework.test import APIClient

        token = Token.objects.create(user=annotator)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        body = client.get(f"/api/projects/{traces.pk}/traces/").json()
        assert body["count"] == 30 and len(body["results"]) == 30
        detail = client.get(f"/api/traces/{body['results'][0]['id']}/").json()
        assert detail["steps"][0]["parsed_actions"][0]["type"] == "click"

    def test_api_schema_and_docs_served_locally(self, client, annotator):
        client.force_login(annotator)
        schema = client.get("/api/schema/")
        assert schema.status_code == 200 and b"/api/projects/" in schema.content
        docs = client.get("/api/docs/")
        assert docs.status_code == 200 and b"swagger-ui" in docs.content.lower()
        assert b"cdn" not in docs.content.lower()


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)
def test_seed_demo_builds_a_world_an_engineer_can_export_at_once():
    from django.contrib.auth import get_user_model

    from annotation.models import Annotation, AnnotationStatus
    from demo.seed import demo_seed
    from traces.models import Step, Trace

    summary = demo_seed(password="demo-pass-for-tests-1", seed=7)
    users = get_user_model().objects.filter(username__in=["annotator", "lead", "engineer"])
    assert {u.username: sorted(u.groups.values_list("name", flat=True)) for u in users} == {
        "annotator": ["annotator", "demo"],
        "lead": ["demo", "lead"],
        "engineer": ["demo", "engineer"],
    }
    assert summary["traces"] == Trace.objects.count() >= 6
    sizes = set(Step.objects.values_list("screenshot__width", "screenshot__height"))
    assert (1920, 1080) in sizes and (1080, 2400) in sizes
    assert not Step.objects.exclude(parse_error="").exists(), "every demo action parses"
    accepted = Annotation.objects.filter(status=AnnotationStatus.ACCEPTED, verdict="error")
    assert accepted.count() >= 4
    assert all(a.corrected_action and a.reflection_thought for a in accepted if a.tau < a.trace.step_count)
    annotated = set(Annotation.objects.values_list("trace_id", flat=True))
    open_traces = Trace.objects.exclude(pk__in=annotated)
    assert {t.project.platform for t in open_traces} == {"desktop", "mobile"}, "annotators find work in both projects"
    again = demo_seed(password="demo-pass-for-tests-1", seed=7)
    assert Trace.objects.count() == summary["traces"] and again["traces"] == summary["traces"]


def test_admin_lists_every_model_for_operators(client, admin_user, project):
    client.force_login(admin_user)
    for path in (
        "traces/project",
        "traces/trace",
        "traces/step",
        "traces/screenshot",
        "traces/importjob",
        "prescoring/prescorejob",
        "annotation/annotation",
        "annotation/lease",
        "annotation/auditevent",
        "exports/exportjob",
    ):
        response = client.get(f"/admin/{path}/")
        assert response.status_code == 200, path
    assert project.name in client.get("/admin/traces/project/").content.decode()
