"""The workspace's layout with data the demo does not have: a banner above the page, a thought with one very long
word, right-to-left text, screenshots so small that markers sized by the image's pixels vanish, a step without one."""

from __future__ import annotations

import json

import pytest

from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


def test_workspace_fits_the_window_under_the_demo_banner(
    browser, live_server, project, annotator, tmp_path, settings, artifacts_dir
):
    # The demo banner sits between the top bar and the workspace: the workspace took the window's height less
    # the top bar only, so the page scrolled and the stage's hint and the side panel's bottom lay under the edge.
    settings.STUDIO_MODE = "demo"
    import_folder(project, write_native_trace(tmp_path / "t", steps=3))
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    assert page.is_visible(".demo-banner")
    assert page.is_hidden("#ws-instruction-more")  # a one-line instruction has nothing more to show
    page.screenshot(path=str(artifacts_dir / "workspace-demo-banner-1366.png"))
    height, inner = page.evaluate("[document.scrollingElement.scrollHeight, window.innerHeight]")
    assert height <= inner, f"the page scrolls: {height} px of content in a {inner} px window"
    for selector in ("#ws-stage", ".ws-side"):
        bottom = page.evaluate(f"document.querySelector('{selector}').getBoundingClientRect().bottom")
        assert bottom <= inner, f"{selector} ends at {bottom} px, below the window ({inner} px)"
    context.close()


def test_long_words_and_right_to_left_text_stay_inside_the_side_panel(
    browser, live_server, project, annotator, tmp_path, artifacts_dir
):
    word = "Supercalifragilistic" * 40  # a path, a URL, a base64 blob: 800 characters without a break
    rtl = "افتح الإعدادات ثم اختر الخصوصية then click OK"
    import_folder(
        project,
        write_native_trace(
            tmp_path / "t",
            steps=2,
            instruction=f"Open {word}",
            thoughts={1: f"Press {word}", 2: rtl},
            external_id="runner-7/episode-2026-11-27T03:41:20-a-very-long-identifier-0123456789abcdef",
        ),
    )
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    page.screenshot(path=str(artifacts_dir / "workspace-long-word-1366.png"))
    # The trace's name, cut to its chip when long, is whole on hover.
    chip = page.locator(".ws-chip")
    assert chip.evaluate("el => el.scrollWidth > el.clientWidth")  # cut
    assert "{#" not in page.inner_text("#ws") and "{%" not in page.inner_text("#ws")  # no template comment shown
    assert chip.get_attribute("title") == chip.inner_text() == f"{project.name} · {Trace.objects.get().external_id}"
    side = page.evaluate(
        "(() => { const s = document.querySelector('.ws-side'); return [s.scrollWidth, s.clientWidth]; })()"
    )
    assert side[0] <= side[1], f"the side panel scrolls sideways: {side[0]} px of content in {side[1]} px"
    instruction = page.evaluate(
        "(() => { const p = document.querySelector('#ws-instruction'); return [p.scrollWidth, p.clientWidth]; })()"
    )
    assert instruction[0] <= instruction[1], f"the instruction runs off its box: {instruction}"
    # Cut to two lines, the instruction says there is more, and shows all of it on request.
    shown = page.evaluate("document.querySelector('#ws-instruction').clientHeight")
    page.click("#ws-instruction-more")
    assert page.inner_text("#ws-instruction-more") == "Show less"
    assert page.get_attribute("#ws-instruction-more", "aria-expanded") == "true"
    page.screenshot(path=str(artifacts_dir / "workspace-long-instruction-shown.png"))
    opened = page.evaluate(
        "(() => { const p = document.querySelector('#ws-instruction'); return [p.clientHeight, p.scrollHeight]; })()"
    )
    assert opened[0] > 2 * shown, (shown, opened)
    page.click("#ws-instruction-more")
    assert page.evaluate("document.querySelector('#ws-instruction').clientHeight") == shown
    # A thought that starts in Arabic reads from the right, each paragraph by its own first strong letter.
    page.keyboard.press("j")
    assert page.inner_text("#ws-thought") == rtl
    assert page.evaluate("getComputedStyle(document.querySelector('#ws-thought')).unicodeBidi") == "plaintext"
    # What the annotator writes reads in its direction too: the corrected thought and a typed text, in Arabic,
    # run from the right; one in English from the left.
    page.keyboard.press("e")
    page.fill("#f-corrected_thought", rtl)
    assert page.evaluate("document.querySelector('#f-corrected_thought').matches(':dir(rtl)')")
    page.select_option("[data-slot-type='corrected']", "type")
    page.fill(".ws-action-editor[data-slot='corrected'] [data-arg='content']", "مرحبا")
    assert page.evaluate("document.querySelector(\"[data-arg='content']\").matches(':dir(rtl)')")
    page.fill("#f-note", "A note in English")
    assert page.evaluate("document.querySelector('#f-note').matches(':dir(ltr)')")
    page.screenshot(path=str(artifacts_dir / "workspace-rtl-fields-1366.png"))
    context.close()


def test_markers_on_a_tiny_screenshot_are_visible(browser, live_server, project, annotator, tmp_path, artifacts_dir):
    # Markers were sized as a share of the screenshot's pixels: on a 32x32 screenshot shown at its own size the
    # recorded click's ring had a radius of half a pixel. They keep at least a readable size on the screen.
    import_folder(project, write_native_trace(tmp_path / "t", steps=2, size=(40, 30)))
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    page.wait_for_selector("#ws-stage .mark.recorded .ring")
    page.screenshot(path=str(artifacts_dir / "workspace-tiny-screenshot.png"))
    # The 40x30 screenshot is fitted to the stage like any other (it was shown at 40x30 until zoomed), at its shape.
    frame = page.locator("#ws-stage .ws-frame").bounding_box()
    pane = page.locator("#ws-stage .ws-pane").bounding_box()
    assert frame["width"] >= 0.95 * pane["width"] or frame["height"] >= 0.9 * pane["height"], (frame, pane)
    assert frame["width"] / frame["height"] == pytest.approx(40 / 30, rel=0.02)
    ring = page.locator("#ws-stage .mark.recorded .ring").first.bounding_box()
    assert ring["width"] >= 16, f"the recorded click's ring is {ring['width']:.1f} px wide on the screen"
    # Zoomed in, the ring keeps its size on the screen (it does not grow with the screenshot).
    page.keyboard.press("+")
    page.keyboard.press("+")
    page.wait_for_timeout(400)
    zoomed = page.locator("#ws-stage .mark.recorded .ring").first.bounding_box()
    assert abs(zoomed["width"] - ring["width"]) <= 2, (ring, zoomed)
    context.close()


def test_a_step_without_a_screenshot_does_not_ask_for_a_click(browser, live_server, project, annotator, tmp_path):
    # τ on a step the source kept without a screenshot: the hint under the stage said "Click the screenshot to
    # place start_box", with no screenshot to click.
    folder = write_native_trace(tmp_path / "t", steps=3)
    document = json.loads((folder / "trace.json").read_text())
    del document["steps"][1]["screenshot"]
    (folder / "trace.json").write_text(json.dumps(document))
    import_folder(project, folder)
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.select_option("[data-slot-type='corrected']", "click")
    assert page.is_visible(".ws-missing")
    hint = page.inner_text("#ws-place-hint")
    assert "no screenshot" in hint and "Click the screenshot" not in hint, hint
    # τ = 1: its o_{τ+1} is that step without a screenshot, so the way back to τ names no post-reflection to go on to.
    page.keyboard.press("Escape")
    page.keyboard.press("k")
    page.keyboard.press("e")
    page.keyboard.press("Escape")
    page.keyboard.press("End")
    goto = page.inner_text("#ws-goto-text")
    assert "→ for the post-reflection" not in goto and "no post-reflection can be given" in goto, goto
    # At τ the missing post-reflection is explained, and its reason is not asked for: the server records it
    # (annotation.selectors.server_no_reflection_reason), so the "No post-reflection because…" field stays hidden.
    page.keyboard.press("t")
    assert page.is_visible("#ws-reflection-missing")
    assert not page.is_visible("#f-no_reflection_reason")
    # τ = 2 has its o_3: the post-reflection is asked for there, and a reason may be given instead.
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    assert page.is_visible("#ws-reflection-body") and page.is_visible("#f-no_reflection_reason")
    context.close()


def test_after_a_gap_right_after_tau_the_servers_reason_stands_in_place_of_the_post_reflection(
    browser, live_server, project, annotator, tmp_path, artifacts_dir
):
    # The source dropped a step between steps 2 and 3: step 3's screen is not o_3, so a first error at step 2 has no
    # post-reflection (the server refuses one and records why). The page showed the editor on step 3 anyway.
    folder = write_native_trace(tmp_path / "t", steps=4)
    document = json.loads((folder / "trace.json").read_text())
    document["steps"][2]["missing_before"] = 1
    (folder / "trace.json").write_text(json.dumps(document))
    import_folder(project, folder)
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")  # τ = 2
    page.keyboard.press("Escape")
    missing = page.locator("#ws-reflection-missing")
    assert missing.is_visible(), "the reason stands beside the correction at τ"
    words = missing.inner_text()
    assert words.startswith("The source dropped 1 step between step 2 and step 3") and "record" in words, words
    assert page.locator("#ws-reflection-body").is_hidden() and page.locator("#f-no_reflection_reason").is_hidden()
    page.screenshot(path=str(artifacts_dir / "workspace-gap-after-tau.png"))
    page.keyboard.press("j")  # step 3: no post-reflection editor on a screen that is not o_3
    assert page.locator("#ws-reflection").is_hidden() and page.locator(".ws-tag.refl").count() == 0
    page.keyboard.press("End")
    goto = page.inner_text("#ws-goto-text")
    assert "no post-reflection can be given" in goto and "→ for the post-reflection" not in goto, goto
    context.close()


def test_stepping_shows_where_the_new_steps_text_starts(browser, live_server, project, annotator, tmp_path):
    long = "The Display page is open and the brightness slider sits at forty per cent of its track. " * 15
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, thoughts={1: long, 2: long, 3: long}))
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    page.keyboard.press("e")  # the category takes the focus: in view already (the compact panel at τ), no scroll
    page.keyboard.press("Escape")
    heading_top = "document.querySelector('#ws-step-num').closest('.ws-panel').getBoundingClientRect().top"
    side_top = "document.querySelector('.ws-side').getBoundingClientRect().top"
    assert page.evaluate("document.querySelector('.ws-side').scrollTop") == 0
    # The whole thought shown and the panel scrolled down to the foot of the form:
    page.click("#ws-thought-more")
    page.evaluate("(s => { s.scrollTop = s.scrollHeight; })(document.querySelector('.ws-side'))")
    assert page.evaluate("document.querySelector('.ws-side').scrollTop") > 0
    # While correcting, the step as recorded stays pinned at the panel's top (the recorded action in view).
    assert page.evaluate(f"{heading_top} >= {side_top}")
    page.keyboard.press("j")
    assert page.inner_text("#ws-step-num") == "Step 2 of 3"
    # The next step's text is shown from its start, not cut mid-sentence under the panel's top edge.
    assert page.evaluate(f"{heading_top} >= {side_top}")
    page.keyboard.press("j")  # after o_τ+1: nothing is corrected here, the panel is no longer pinned
    assert page.evaluate(f"{heading_top} >= {side_top}")
    scrolled = page.evaluate("document.querySelector('.ws-side').scrollTop")
    page.keyboard.press("k")
    page.keyboard.press("j")  # already in view: the panel does not move
    assert page.evaluate("document.querySelector('.ws-side').scrollTop") == scrolled
    context.close()


def test_a_direction_mark_left_open_in_a_task_does_not_reorder_the_queue(
    browser, live_server, project, annotator, tmp_path
):
    # U+202E (right-to-left override) never closed: the queue's item must still read task, trace, status in order.
    import_folder(
        project, write_native_trace(tmp_path / "t", steps=2, instruction="Open the file \u202eexe.", external_id="rlo")
    )
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)  # a draft now
    page.goto(f"{live_server.url}/queue/")
    item = page.locator(".queue-list li").first
    task, trace, status = (item.locator(s).bounding_box()["x"] for s in ("a", "[data-trace-id]", ".pill"))
    assert task < trace < status, (task, trace, status)
    assert "{%" not in page.inner_text("body") and "{#" not in page.inner_text("body")
    context.close()


def test_the_suspicion_strip_of_a_long_trace_fits_the_side_panel(browser, live_server, project, annotator, tmp_path):
    from prescoring.services import prescore_job_create, prescore_job_run

    import_folder(project, write_native_trace(tmp_path / "t", steps=60, external_id="sixty"))
    job = prescore_job_create(project=project, user=None, scorer="rules", enqueue=False)
    assert prescore_job_run(job_id=job.pk).status == "succeeded"
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, "ann")
    open_next_trace(page, live_server.url)
    page.wait_for_selector("#prescore:not([hidden]) #suspicion-strip .cell")
    assert page.locator("#suspicion-strip .cell").count() == 60
    # Only the rules ran: the head says so, and no model.
    head = page.inner_text(".prescore-head")
    assert "from rules" in head and "model" not in head, head
    strip = page.locator("#suspicion-strip").bounding_box()
    last = page.locator("#suspicion-strip .cell").last.bounding_box()
    assert last["x"] + last["width"] <= strip["x"] + strip["width"] + 0.5, (last, strip)  # step 60 is not cut off
    side = page.evaluate(
        "(() => { const s = document.querySelector('.ws-side'); return [s.scrollWidth, s.clientWidth]; })()"
    )
    assert side[0] <= side[1], side
    # The current step's outline shows on the dark panel (the workspace's ink, not a dark one).
    outline = page.evaluate("getComputedStyle(document.querySelector('#suspicion-strip .cell.current')).outlineColor")
    assert outline == "rgb(230, 233, 240)", outline
    # Stepping on after the focus went down to the category shows the next step's suggestions with its text.
    page.keyboard.press("e")
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    assert page.evaluate(
        "document.querySelector('#prescore').getBoundingClientRect().top"
        " >= document.querySelector('.ws-side').getBoundingClientRect().top"
    )
    context.close()
