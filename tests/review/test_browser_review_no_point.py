"""The review page with an action that has no point (a hotkey as the post-reflection): nothing is written inside the
screenshot's frame, and the legend, which shows the action's text, says it has no point on the screen."""

from __future__ import annotations

import pytest

from annotation.models import Verdict
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from tests.review.test_browser_review_viewer import submitted

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


def test_an_action_without_a_point_is_said_in_the_legend_not_inside_the_screenshot(
    browser, live_server, project, annotator, lead, tmp_path, artifacts_dir
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3))
    annotation = submitted(
        project,
        annotator,
        verdict=Verdict.ERROR,
        tau=2,
        error_category="other",
        corrected_thought="Open the menu first.",
        corrected_action="click(start_box='(300,260)')",
        reflection_thought="Wrong panel; go back.",
        reflection_action="hotkey(key='alt left')",
    )
    page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{annotation.pk}/")
    page.wait_for_selector(".shot-frame[data-markers='error-markers'] .marker.corrected")
    reflection_frame = page.locator(".shot-frame[data-markers='reflection-markers']")
    assert reflection_frame.inner_text().strip() == ""  # the screenshot alone, no grey text in its border
    assert reflection_frame.locator(".marker").count() == 0
    legend = page.locator(".legend", has=page.locator(".dot.reflection"))
    assert "post-reflection: hotkey(key='alt left')" in legend.inner_text()
    assert legend.locator(".no-point").inner_text() == "no point on the screen"
    # Actions with a point are drawn as before, and their legend says nothing more.
    error_frame = page.locator(".shot-frame[data-markers='error-markers']")
    assert (
        error_frame.locator(".marker.original").count() == 1 and error_frame.locator(".marker.corrected").count() == 1
    )
    assert page.locator(".legend", has=page.locator(".dot.original")).locator(".no-point").count() == 0
    page.locator(".review-grid").screenshot(path=str(artifacts_dir / "review-no-point.png"))
