"""The review page with recorded text nobody wrapped: a thought that is one long path or URL, written by the agent
or by the annotator, and an instruction with line breaks."""

from __future__ import annotations

import pytest

from annotation.models import Verdict
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from tests.review.test_browser_review_viewer import submitted

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

WORD = "Longword" * 100  # 800 characters without a break point


def test_long_words_wrap_and_the_page_never_scrolls_sideways(
    browser, live_server, project, annotator, lead, tmp_path, artifacts_dir
):
    # A long word in the thoughts made the whole page 10,000 px wide and squeezed the other thought's column.
    import_folder(
        project,
        write_native_trace(
            tmp_path / "t",
            steps=3,
            instruction=f"Open the file\nthen {WORD}",
            thoughts={2: f"Open /{WORD}/x.png", 3: WORD},
        ),
    )
    annotation = submitted(
        project,
        annotator,
        verdict=Verdict.ERROR,
        tau=2,
        error_category="other",
        corrected_thought=f"Fix {WORD}",
    )
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{annotation.pk}/")
    page.wait_for_selector("#diff-after")
    page.screenshot(path=str(artifacts_dir / "review-long-word-1366.png"), full_page=True)
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width <= inner, f"the page scrolls sideways: {width} px wide in a {inner} px window"
    # Both thoughts keep their half of the card.
    before = page.locator("#diff-before").bounding_box()
    after = page.locator("#diff-after").bounding_box()
    assert before["width"] > 300 and abs(before["width"] - after["width"]) < 5, (before, after)
    # The instruction keeps its line breaks, as the workspace shows it.
    assert page.inner_text(".instruction p").startswith("Open the file\nthen ")
