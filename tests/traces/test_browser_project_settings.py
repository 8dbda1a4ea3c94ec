"""The project settings page in Chromium: the quality control section another app adds to it (traces.extensions)
saves its own form and comes back to the settings page, the project's form beside it untouched."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.quality.selectors import quality_settings
from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


def test_a_lead_sets_gold_and_qualification_on_the_settings_page(browser, live_server, project, lead, artifacts_dir):
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/settings/")
    section = page.locator("#quality-settings-section")
    expect(section).to_be_visible()
    expect(section.locator("h2")).to_have_text("Quality control")
    section.locator("input[name=gold_every]").fill("10")
    section.locator("input[name=qualification_pass_mark]").fill("0.9")
    section.locator("button[type=submit]").click()
    page.wait_for_url(f"{live_server.url}/projects/{project.pk}/settings/")
    expect(page.locator(".notice")).to_contain_text("Quality settings saved.")
    expect(page.locator("#quality-settings-section input[name=gold_every]")).to_have_value("10")
    expect(page.locator("#project-form input[name=name]")).to_have_value(project.name)
    page.locator("#quality-settings-section").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "settings-quality-section.png"), full_page=True)
    saved = quality_settings(project)
    assert (saved.gold_every, saved.qualification_pass_mark) == (10, 0.9)
    assert page.locator("#quality-settings-link").get_attribute("href") == f"/projects/{project.pk}/quality/"
    assert not errors, errors
    page.close()
