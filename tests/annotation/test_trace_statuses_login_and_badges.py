"""An empty hotkey badge is not drawn over the recorded one (the correction's badge sits
on its own row), a wrong password keeps the username, and the trace list shows each trace's annotation status."""

from __future__ import annotations

import json

import pytest

from annotation.services import annotation_save_draft, annotation_submit, lease_next_trace
from tests.annotation.test_browser_workspace import open_next_trace, wait_saved
from tests.conftest import login
from tests.fixtures_annotation import import_folder, make_traces, write_native_trace


@pytest.mark.django_db
def test_the_trace_list_shows_each_traces_annotation_status(project, tmp_path, annotator, lead, make_user, client):
    first, second, third = make_traces(project, tmp_path, count=3, steps=2)
    mine, _ = lease_next_trace(user=annotator, project=project)
    saved = annotation_save_draft(
        annotation_id=mine.pk, user=annotator, base_version=mine.version, fields={"verdict": "no_error"}
    )
    annotation_submit(annotation_id=mine.pk, user=annotator, base_version=saved.version)
    lease_next_trace(user=annotator, project=project)  # a draft on the second trace
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert "<th>Annotations</th>" in page

    def cell(trace):
        start = page.index(f'data-annotation-status="{trace.pk}"')
        return page[start : page.index("</td>", start)]

    assert "1 submitted" in cell(first) and "1 draft" in cell(second) and "none yet" in cell(third)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_wrong_password_keeps_the_username(browser, live_server, annotator):
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", annotator.username)
    page.fill("input[name=password]", "not-the-password")
    page.click("button[type=submit]")
    page.wait_for_selector("p.error")
    assert page.input_value("input[name=username]") == annotator.username
    assert page.input_value("input[name=password]") == ""
    assert page.evaluate("document.activeElement.name") == "password"  # type the password again at once
    context.close()
    login(browser.new_context().new_page(), live_server.url, annotator.username)  # the right one still works


@pytest.fixture
def hotkey_trace(project, tmp_path, role_groups):
    folder = write_native_trace(tmp_path / "hotkey", steps=2, external_id="hotkey")
    document = json.loads((folder / "trace.json").read_text())
    document["steps"][0]["action"] = "hotkey(key='ctrl c')"
    (folder / "trace.json").write_text(json.dumps(document))
    import_folder(project, folder)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_correction_without_a_key_draws_no_badge_and_one_with_a_key_does_not_cover_the_recorded_one(
    browser, live_server, project, hotkey_trace, annotator, artifacts_dir
):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    recorded = page.locator("#ws-stage g.mark.recorded[data-action='hotkey']")
    assert recorded.count() == 1 and "ctrl + c" in recorded.text_content()
    page.keyboard.press("e")
    page.select_option("[data-slot-type='corrected']", "hotkey")
    wait_saved(page)
    assert page.locator("#ws-stage g.mark.fix").count() == 0  # no key yet: no empty badge over the recorded one
    page.fill(".ws-action-editor[data-slot='corrected'] [data-arg='key']", "ctrl v")
    wait_saved(page)
    fix = page.locator("#ws-stage g.mark.fix[data-action='hotkey']")
    fix.wait_for()
    assert "ctrl + v" in fix.text_content()
    a, b = recorded.locator("rect").bounding_box(), fix.locator("rect").bounding_box()
    assert a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"], (a, b)  # on separate rows
    page.screenshot(
        path=str(artifacts_dir / "workspace-hotkey-badges.png"), clip={"x": 0, "y": 0, "width": 1000, "height": 500}
    )
    context.close()
