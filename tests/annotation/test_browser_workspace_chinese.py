"""An annotator whose account speaks Simplified Chinese annotates a real trace end to end in Chromium: claims it from
the queue, marks the first erroneous step τ, writes the correction and the post-reflection, submits. The page's
words, the scripts' (the save state, the step label, the tags) and the server's answers come in Chinese; what the
annotator writes is stored as written. Then the lead, whose browser asks for Chinese, opens the review page."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, AnnotationStatus
from studio.services import account_settings_update
from tests.annotation.test_browser_workspace import click_on_screenshot, dart_trace, open_next_trace, wait_saved
from tests.conftest import login_by_form

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

__all__ = ["dart_trace"]  # the fixture, used by name


def test_an_annotator_works_through_the_workspace_in_chinese(
    browser, live_server, dart_trace, annotator, lead, artifacts_dir
):
    account_settings_update(user=annotator, language="zh-hans")
    # The browser asks for English: the account's choice wins.
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, locale="en-US")
    page = context.new_page()
    page_errors = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    login_by_form(page, live_server.url, "ann")  # the sign-in puts the account's language in the session
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    open_next_trace(page, live_server.url)
    assert page.inner_text("#ws-submit").startswith("提交")
    wait_saved(page)
    assert page.inner_text("#ws-save") == "已保存"  # the script's own words, from the catalog

    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.inner_text("#ws-step-label") == f"第 3 步，共 {dart_trace.step_count} 步"
    page.keyboard.press("e")
    assert page.inner_text("#ws-verdict-text") == "首个错误步骤为第 3 步（τ）。"
    assert page.inner_text(".ws-tag.tau") == "τ · 首个错误"
    page.select_option("#f-error_category", "wrong element / grounding")
    page.fill("#f-corrected_thought", "我应该先打开扩展视图。")
    page.select_option("[data-slot-type='corrected']", "click")
    click_on_screenshot(page, 0.25, 0.5)
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    assert page.inner_text("[data-errors='corrected'] li.ok") == "✓ 有效"
    wait_saved(page)

    page.keyboard.press("j")  # o_{τ+1}
    page.wait_for_selector("#ws-reflection:not([hidden])")
    assert page.inner_text(".ws-tag.refl") == "o₄ · 反思后步骤"
    page.fill("#f-reflection_thought", "点击那里没有用；我改为打开扩展视图。")
    page.select_option("[data-slot-type='reflection']", "click")
    click_on_screenshot(page, 0.02, 0.3)
    page.wait_for_selector("[data-errors='reflection'] li.ok")
    wait_saved(page)
    page.screenshot(path=str(artifacts_dir / "workspace-zh-hans-reflection.png"))

    page.keyboard.press("?")
    assert "键盘" in page.inner_text("#ws-help h2")
    page.screenshot(path=str(artifacts_dir / "workspace-zh-hans-help.png"))
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#ws-next:not([hidden])")
    assert page.inner_text("#ws-status-pill") == "已提交"
    assert page.inner_text("#ws-next button") == "下一条轨迹 →"
    page.screenshot(path=str(artifacts_dir / "workspace-zh-hans-submitted.png"))

    annotation = Annotation.objects.get(trace=dart_trace, annotator=annotator)
    assert annotation.status == AnnotationStatus.SUBMITTED
    assert (annotation.verdict, annotation.tau) == ("error", 3)
    assert annotation.corrected_thought == "我应该先打开扩展视图。"
    assert annotation.corrected_action.startswith("click(start_box=")
    assert not page_errors, page_errors

    # One settings page holds both of the person's choices, in their language; saving one keeps the other.
    page.goto(f"{live_server.url}/account/settings/")
    assert page.locator("#language-choice").input_value() == "zh-hans"
    assert page.inner_text("h1") == "设置" and "单键快捷键" in page.inner_text("#settings-form")
    page.check("input[name=shortcuts][value=modifier]")
    page.click("#settings-save")
    assert page.inner_text("#settings-saved") == "已保存。"
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    assert page.locator("body").get_attribute("data-shortcuts") == "modifier"
    page.screenshot(path=str(artifacts_dir / "account-settings-zh-hans.png"))
    context.close()

    # The lead has no language chosen: the browser's Chinese decides, and the review page answers in it.
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, locale="zh-CN")
    page = context.new_page()
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    login_by_form(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{annotation.pk}/")
    assert page.inner_text("#annotation-status") == "已提交"
    assert "审核决定" in page.inner_text("body")
    page.screenshot(path=str(artifacts_dir / "review-zh-hans.png"), full_page=True)
    assert not page_errors, page_errors
    context.close()
