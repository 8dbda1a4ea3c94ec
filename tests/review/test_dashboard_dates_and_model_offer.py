"""A bad dashboard date is said in words beside the dates (the page and its API read dates
through one parser), and "Pre-score: model" is only offered when a model is configured; otherwise the page says
what to set."""

from __future__ import annotations

import pytest

from tests.conftest import login


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query", ["from=yesterday", "from=2026-02-30", "from=2026-05-02&to=2026-05-01", "to=9999-12-31"]
)
def test_a_bad_dashboard_date_is_said_beside_the_dates(project, lead, client, query):
    client.force_login(lead)
    response = client.get(f"/projects/{project.pk}/dashboard/?{query}")
    page = response.content.decode()
    assert response.status_code == 400
    assert 'id="range-error"' in page and "Bad date range:" in page and "Showing the last 30 days instead" in page
    assert 'data-from=""' in page and 'data-to=""' in page  # the figures load the default range
    api = client.get(f"/api/projects/{project.pk}/dashboard/?{query}")
    assert api.status_code == 400 and api.json()["detail"].startswith("Bad date range:")
    assert client.get(f"/projects/{project.pk}/dashboard/?from=2026-05-01&to=2026-05-02").status_code == 200


@pytest.mark.django_db
def test_the_model_pre_score_is_offered_only_when_a_model_is_configured(project, lead, client, settings, tmp_path):
    client.force_login(lead)
    settings.PRESCORE_MODEL_DIR = ""
    page = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert 'data-scorer="qwen2vl"' not in page and 'data-scorer="rules"' in page
    assert 'id="prescore-model-off"' in page and "STUDIO_PRESCORE_MODEL_DIR" in page
    settings.PRESCORE_MODEL_DIR = str(tmp_path)
    page = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert 'data-scorer="qwen2vl"' in page and 'id="prescore-model-off"' not in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_dashboard_page_says_a_bad_date_in_words(browser, live_server, project, lead, artifacts_dir):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/dashboard/?from=2026-02-30")
    assert "from must be a date like 2025-01-31, not '2026-02-30'" in page.inner_text("#range-error")
    page.wait_for_selector("[data-chart='done_per_day'][data-drawn='1']")  # the default range still loads
    assert page.locator("#dashboard-error").is_hidden()
    assert "{" not in page.inner_text("#range-error")
    page.screenshot(path=str(artifacts_dir / "dashboard-bad-date.png"))
    context.close()
