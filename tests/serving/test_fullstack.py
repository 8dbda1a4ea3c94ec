"""The full stack, for real: production settings, static files collected as the Dockerfile
collects them, Caddy in front, uvicorn with 2 processes, a Celery worker over Redis, S3 on a loopback moto server,
PostgreSQL (tests/stack.py). Through HTTP: an import, an annotation a lead accepts, an export downloaded through
its presigned URL; Chromium loads the main pages with no failed request."""

from __future__ import annotations

import shutil

import pytest
import requests

from tests.conftest import TEST_PASSWORD
from tests.stack import Stack, running_stack, sha256_of

pytestmark = [
    pytest.mark.fullstack,  # Caddy's local CA signs the proxy's certificate: the test trusts it
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
]

CLICK = {"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, collected_static):
    yield from running_stack(tmp_path_factory, collected_static)


def annotate_and_submit(stack: Stack, annotator) -> int:
    claim = annotator.post(f"/api/projects/{stack.project_id}/next-trace/")
    assert claim.status_code == 200, claim.text[:300]
    pk = claim.json()["annotation"]["id"]
    for version, fields in enumerate(
        [
            {"verdict": "error", "tau": 2},
            {
                "error_category": "wrong element / grounding",
                "corrected_thought": "Click Settings instead.",
                "reflection_thought": "I clicked the wrong item; go back.",
                "editor_state": {
                    "corrected": CLICK,
                    "reflection": {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"},
                },
            },
        ],
        start=1,
    ):
        saved = annotator.put(f"/api/annotations/{pk}/draft/", json={"version": version, **fields})
        assert saved.status_code == 200, saved.text[:300]
    submitted = annotator.post(f"/api/annotations/{pk}/submit/", json={"version": 3})
    assert submitted.status_code == 200, submitted.text[:300]
    return pk


def test_import_annotate_accept_export_and_download_through_the_proxy(stack):
    lead, annotator, engineer = (stack.login(name) for name in ("lead", "annotator", "engineer"))
    job = stack.import_traces(lead, 3, "fs-")
    job = stack.wait_job(lead, f"/api/imports/{job['id']}/")
    assert job["status"] == "succeeded", job

    pk = annotate_and_submit(stack, annotator)
    accepted = lead.post(f"/api/reviews/{pk}/accept/", json={})
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted", accepted.text[:300]

    started = engineer.post(f"/api/projects/{stack.project_id}/exports/", json={"format": "trl"})
    assert started.status_code in (200, 201, 202), started.text[:300]
    export = stack.wait_job(engineer, f"/api/exports/{started.json()['id']}/")
    assert export["status"] == "succeeded", export
    link = engineer.get(f"/api/exports/{export['id']}/bundle", allow_redirects=False)
    assert link.status_code == 302
    url = link.headers["Location"]
    assert url.startswith(f"{stack.s3_public}/") and "X-Amz-Signature=" in url  # the address browsers reach
    bundle = requests.get(url, verify=False, timeout=30)  # no session: the signature is the permission
    assert bundle.status_code == 200 and sha256_of(bundle.content) == export["bundle_sha256"]


def test_chromium_loads_the_main_pages_with_no_failed_request(stack, browser, artifacts_dir):
    lead = stack.login("lead")
    if not lead.get(f"/api/projects/{stack.project_id}/traces/").json()["results"]:
        stack.wait_job(lead, f"/api/imports/{stack.import_traces(lead, 1, 'pages-')['id']}/")
    trace_id = lead.get(f"/api/projects/{stack.project_id}/traces/").json()["results"][0]["id"]
    failures: list[str] = []
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 900})
    page = context.new_page()

    def request_failed(request) -> None:
        # Chromium fetches a page's icon after the load event and cancels that fetch (net::ERR_ABORTED) when the
        # test navigates on at once: a cancellation by the browser, not a failed request. An icon the server fails
        # to serve still shows as a 4xx/5xx response below.
        if "/favicon." in request.url and request.failure == "net::ERR_ABORTED":
            return
        failures.append(f"{request.url}: {request.failure}")

    page.on("requestfailed", request_failed)
    from_s3: list[str] = []
    page.on(
        "response", lambda response: response.status >= 400 and failures.append(f"{response.url}: {response.status}")
    )
    page.on(
        "response",
        lambda response: response.url.startswith(stack.s3_public) and response.ok and from_s3.append(response.url),
    )
    page.on("console", lambda message: message.type == "error" and failures.append(f"console: {message.text}"))

    def log_in(username: str) -> None:
        page.goto(f"{stack.base}/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", TEST_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)

    log_in("lead")
    for name, path in [
        ("projects", "/projects/"),
        ("traces", f"/projects/{stack.project_id}/traces/"),
        ("trace", f"/traces/{trace_id}/"),
        ("reviews", "/reviews/"),
        ("dashboard", f"/projects/{stack.project_id}/dashboard/"),
        ("exports", "/exports/"),
    ]:
        response = page.goto(stack.base + path)
        assert response.status == 200, (path, response.status)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(artifacts_dir / f"fullstack-{name}.png"), full_page=True)
    page.goto(f"{stack.base}/traces/{trace_id}/")
    page.wait_for_load_state("networkidle")
    images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.currentSrc, i.complete && i.naturalWidth > 0])")
    # The page shows thumbnails; each links to the full screenshot, which must come from S3 the same way.
    full_size = page.get_attribute("a:has(img.shot)", "href")
    assert full_size, "the trace page links no thumbnail to its screenshot"
    # Loaded as an image, as the workspace loads it (opened as a document, Chromium also asks S3 for a favicon).
    full_size_loaded = page.evaluate(
        """src => new Promise(done => {
            const image = new Image();
            image.onload = () => done(image.naturalWidth > 0);
            image.onerror = () => done(false);
            image.src = src;
        })""",
        full_size,
    )
    assert full_size_loaded, full_size
    page.context.clear_cookies()

    log_in("annotator")
    page.goto(f"{stack.base}/queue/")
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(artifacts_dir / "fullstack-queue.png"), full_page=True)
    context.close()
    assert failures == []
    # The trace page's thumbnails loaded, and their bytes (and the full screenshot's) came from S3 through the
    # presigned redirect.
    assert images and all(loaded for _, loaded in images), images
    assert any("/thumbnails/" in url for url in from_s3), from_s3
    assert any("/screenshots/" in url for url in from_s3), from_s3


def test_the_operators_endpoints_in_production(stack):
    """Production settings, by the server's own address and through the proxy: ready (PostgreSQL, Redis, S3), the
    metrics on loopback, the proxy refusing /metrics, the JSON request lines in the web's log."""
    direct = f"http://127.0.0.1:{stack.ports['web']}"
    ready = requests.get(f"{direct}/readyz", timeout=10)
    assert ready.status_code == 200, ready.text
    assert {name: check["detail"] for name, check in ready.json()["checks"].items()} == {
        "database": "postgresql",
        "broker": "redis",
        "storage": "s3",
    }
    assert requests.get(f"{direct}/metrics", timeout=10).text.count("studio_http_requests_total") > 0
    through_proxy = requests.get(f"{stack.base}/metrics", verify=False, timeout=10)
    assert through_proxy.status_code == 403 and "scrape the web server directly" in through_proxy.text
    login = requests.get(f"{stack.base}/login/", verify=False, timeout=10)
    request_id = login.headers["X-Request-ID"]
    assert f'"request_id": "{request_id}"' in stack.web.log.read_text()  # production logs JSON lines


def test_a_correction_replayed_by_the_runner_command_through_the_proxy_across_a_redis_restart(stack):
    """The replay loop in production (docs/runners.md): `trace-studio runner` pushes the settings app's failing run
    through Caddy, an annotator corrects step 1, the lead accepts under the project's rule; Redis is killed and
    started again with its data gone before any runner polls (the requests are rows), and the runner replays the
    correction, which stands verified."""
    import re
    import subprocess
    import sys

    from demo.settings_env import correction_to
    from tests.conftest import REPO

    made = stack.manage("create_project", "Replays", "--member", "lead", "--member", "annotator")
    out, _ = made.communicate(timeout=120)
    assert made.returncode == 0, out[-2000:]
    project_id = int(out.split("(id ")[1].split(")")[0])
    lead, annotator = stack.login("lead"), stack.login("annotator")
    token = lead.post("/api/token/").json()["token"]
    ca = stack.workdir / "caddy" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    assert ca.exists(), "Caddy's local CA: the runner checks the proxy's certificate against it"
    env = {**stack.env, "REQUESTS_CA_BUNDLE": str(ca), "TRACE_STUDIO_URL": stack.base, "TRACE_STUDIO_TOKEN": token}

    def runner(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "trace_studio_cli.main", "runner", "--project", str(project_id), *args]
        return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)

    pushed = runner("--record", "settings-failing")
    assert pushed.returncode == 0 and "pushed settings-failing" in pushed.stdout, pushed.stderr[-2000:]
    rule = lead.request(
        "PATCH", f"/api/projects/{project_id}/replays/policy/", json={"every_accepted_correction": True}
    )
    assert rule.status_code == 200, rule.text[:300]

    claim = annotator.post(f"/api/projects/{project_id}/next-trace/")
    assert claim.status_code == 200, claim.text[:300]
    pk = claim.json()["annotation"]["id"]
    x, y = map(int, re.findall(r"\d+", correction_to("sidebar.appearance")))
    fields = {
        "verdict": "error",
        "tau": 1,
        "error_category": "wrong element / grounding",
        "corrected_thought": "Dark mode is under Appearance.",
        "reflection_thought": "Display was the wrong page.",
        "editor_state": {
            "corrected": {"type": "click", "args": {"start_box": [x, y]}, "style": "box"},
            "reflection": {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"},
        },
    }
    saved = annotator.put(f"/api/annotations/{pk}/draft/", json={"version": 1, **fields})
    assert saved.status_code == 200, saved.text[:300]
    submitted = annotator.post(f"/api/annotations/{pk}/submit/", json={"version": saved.json()["version"]})
    assert submitted.status_code == 200, submitted.text[:300]
    accepted = lead.post(f"/api/reviews/{pk}/accept/", json={})
    assert accepted.status_code == 200, accepted.text[:300]
    [request] = lead.get(f"/api/projects/{project_id}/replays/").json()
    assert (request["status"], request["reason"]) == ("queued", "rule")

    stack.redis.kill()
    shutil.rmtree(stack.workdir / "appendonlydir", ignore_errors=True)  # started again empty: nothing of it kept
    stack.redis.start()

    run = runner("--name", "fullstack-runner", "--once")
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"replay {request['id']}: succeeded success=True dark mode is on" in run.stdout
    counts = lead.get(f"/api/projects/{project_id}/replays/counts/").json()["rounds"]
    assert [(c["verified"], c["refuted"], c["waiting"]) for c in counts] == [(1, 0, 0)]
