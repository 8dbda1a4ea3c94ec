"""The compose deployment as `docker-compose config` resolves it with its defaults: a proxy in
front that is the only address uvicorn believes forwarded headers from, restart policies, HTTPS cookies that
pass `check --deploy --fail-level WARNING`, a public S3 endpoint, and a Caddyfile that Caddy accepts."""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO

ONE_SHOT = {"migrate", "minio-setup"}  # run to completion at start-up; everything else runs for ever


@pytest.fixture(scope="module")
def compose() -> dict:
    if not shutil.which("docker-compose"):
        pytest.skip("docker-compose (Debian package) is not installed; .ci/run installs it")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STUDIO_", "MINIO_", "POSTGRES_"))}
    env["STUDIO_SECRET_KEY"] = secrets.token_urlsafe(64)  # the one variable compose requires
    result = subprocess.run(
        ["docker-compose", "-f", str(REPO / "docker-compose.yml"), "config"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_every_long_running_service_restarts(compose):
    for name, service in compose["services"].items():
        if name not in ONE_SHOT:
            assert service.get("restart") in {"always", "unless-stopped"}, name


def test_only_the_proxy_is_trusted_for_forwarded_headers_and_only_it_is_published(compose):
    services = compose["services"]
    proxy_ip = services["proxy"]["networks"]["default"]["ipv4_address"]
    subnet = ipaddress.ip_network(compose["networks"]["default"]["ipam"]["config"][0]["subnet"])
    assert ipaddress.ip_address(proxy_ip) in subnet
    command = services["web"]["command"]
    # uvicorn believes no forwarded header (it would from any peer on 127.0.0.1); the studio, from the proxy only.
    assert "--no-proxy-headers" in command and "--proxy-headers" not in command
    assert services["web"]["environment"]["STUDIO_TRUSTED_PROXIES"] == proxy_ip
    assert "ports" not in services["web"]  # browsers cannot go around the proxy
    published = {
        str(port["target"]) if isinstance(port, dict) else str(port).split(":")[-1]
        for port in services["proxy"]["ports"]
    }
    assert {"80", "443", "9443"} <= published
    assert all(
        str(p.get("host_ip", "")) == "127.0.0.1" if isinstance(p, dict) else p.startswith("127.0.0.1:")
        for p in services["minio"].get("ports", [])
    )  # the console stays on the host


@pytest.mark.subprocess
def test_compose_defaults_pass_check_deploy_at_warning_level(compose, tmp_path, collected_static):
    web_env = {k: str(v) for k, v in compose["services"]["web"]["environment"].items()}
    assert web_env["STUDIO_SSL_REDIRECT"] == "true"
    assert web_env["STUDIO_S3_PUBLIC_ENDPOINT_URL"] == "https://localhost:9443"
    assert web_env["STUDIO_CSRF_TRUSTED_ORIGINS"] == "https://localhost"
    # The settings as compose gives them, but the database of this test (the compose hosts do not resolve here).
    env = {
        **web_env,
        "PATH": "/usr/bin:/bin",
        "STUDIO_DATA_DIR": str(tmp_path),
        "STUDIO_STATIC_ROOT": str(collected_static),
    }
    del env["DATABASE_URL"]
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_caddyfile_is_valid(tmp_path):
    if not shutil.which("caddy"):
        pytest.skip("caddy (Debian package) is not installed; .ci/run installs it")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path),
    }
    result = subprocess.run(
        ["caddy", "validate", "--config", str(REPO / "deploy" / "Caddyfile"), "--adapter", "caddyfile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "Valid configuration" in result.stdout + result.stderr, result.stderr[-2000:]
    adapted = subprocess.run(
        ["caddy", "adapt", "--config", str(REPO / "deploy" / "Caddyfile"), "--adapter", "caddyfile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # Caddy run as root never installs its local CA's root into the system's trust store.
    assert json.loads(adapted.stdout)["apps"]["pki"]["certificate_authorities"]["local"]["install_trust"] is False


def test_the_image_leaves_local_state_out():
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var", "staticfiles", "test-artifacts"} <= set(ignored)


def test_each_queue_has_its_workers_and_each_worker_its_own_name(compose):
    """Webhook deliveries once shared the `default` workers with imports and exports, so two slow receivers
    stopped every import; each worker is named (`-n name@%h`) so two on one host never clash, and its healthcheck
    pings that name."""
    from django.conf import settings

    from studio.celery import WORKER_STEPS_OFF

    queues = {}
    for name, service in compose["services"].items():
        command = service.get("command") or []
        if "worker" not in command or "celery" not in command:
            continue
        queue = command[command.index("-Q") + 1]
        node = command[command.index("-n") + 1]
        assert node.endswith("@%h") and node.split("@")[0] in service["healthcheck"]["test"][1], name
        assert set(WORKER_STEPS_OFF) <= set(command), name  # tests/jobs/test_broker_restart.py
        queues.setdefault(queue, []).append(name)
    assert queues == {"default": ["worker"], "webhooks": ["webhook-worker"], "gpu": ["gpu-worker", "gpu-worker-1"]}
    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()} | {settings.CELERY_TASK_DEFAULT_QUEUE}
    assert routed == set(queues)
    assert settings.CELERY_TASK_ROUTES["webhooks.tasks.deliver_webhook"] == {"queue": "webhooks"}


def test_the_web_is_checked_for_readiness_and_every_process_shares_one_metrics_folder(compose):
    """The web's healthcheck asks /readyz (database, Redis, S3); /metrics sums the counters every process writes into
    one folder, so the web and every worker mount the same volume there, in memory (the files of processes that
    are gone go with the stack); the monitoring profile's Prometheus is an address allowed to scrape."""
    from django.conf import settings

    services = compose["services"]
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    # The image's default (no STUDIO_DATA_DIR or STUDIO_METRICS_DIR set, its checkout at /app): studio.settings'
    # default data folder, read from the settings module's source rather than this test process's settings, which
    # a parallel run points at a folder of its own (tests/parallel.py).
    source = (settings.BASE_DIR / "studio" / "settings.py").read_text()
    assert 'env("STUDIO_DATA_DIR", str(BASE_DIR / "var"))' in source
    assert 'env("STUDIO_METRICS_DIR", str(DATA_DIR / "metrics"))' in source
    folder = "/app/var/metrics"
    studio = [name for name, s in services.items() if "studio" in " ".join(s.get("command") or [])]
    assert {"web", "worker", "webhook-worker", "gpu-worker"} <= set(studio)
    for name in studio:
        mounts = [  # docker-compose v1 writes "source:target:mode", v2 a mapping
            (v["source"], v["target"]) if isinstance(v, dict) else tuple(v.split(":")[:2])
            for v in services[name].get("volumes", [])
        ]
        assert [target for source, target in mounts if source == "metrics"] == [folder], name
    assert compose["volumes"]["metrics"]["driver_opts"]["type"] == "tmpfs"
    prometheus_ip = services["prometheus"]["networks"]["default"]["ipv4_address"]
    assert prometheus_ip in services["web"]["environment"]["STUDIO_METRICS_ALLOW"].split(",")
    assert "--no-access-log" in services["web"]["command"]  # the studio's JSON request lines instead
