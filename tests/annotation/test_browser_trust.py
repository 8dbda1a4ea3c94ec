"""Nothing a person does is lost or changed behind their back (the workspace's half), in Chromium at
1920×1080 and 1366×768: every destructive key (n, u, e over a filled answer, s, taking an alternative, Delete on a
box) is undone by one key and the server holds the restored correction; keys act only on the screen shown (s on
τ+1 leaves τ's correction byte-identical); a key that opens a text field puts the focus in it; 50+ steps of undo
and redo; an edit typed 0.2 s before the tab closes reaches the server."""

from __future__ import annotations

import re
import time

import pytest
from django.db import transaction
from playwright.sync_api import expect

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.services import annotation_save_draft, annotation_transition
from tests.annotation.test_browser_workspace import open_next_trace, wait_saved
from tests.conftest import login, wait_for
from tests.fixtures_alternatives import store_alternatives
from tests.fixtures_annotation import import_folder, write_native_trace
from tests.review.test_browser_review_edit import open_editor
from traces.models import Trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

VIEWPORTS = [pytest.param((1920, 1080), id="1920"), pytest.param((1366, 768), id="1366")]
CORRECTION = ("tau", "error_category", "corrected_thought", "corrected_action", "editor_state", "verdict")


def stored(annotation_id: int) -> dict:
    annotation = Annotation.objects.get(pk=annotation_id)
    return {name: getattr(annotation, name) for name in CORRECTION}


def open_page(browser, live_server, annotator, size):
    page = browser.new_context(viewport={"width": size[0], "height": size[1]}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    return page, int(re.search(r"/annotations/(\d+)/", page.url).group(1)), errors


def fill_correction(page) -> None:
    """τ = 2 with a category, a thought, a click placed from the keyboard and an element box drawn around it."""
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")  # the first category; the focus goes on to the corrected thought
    page.keyboard.type("I should open the Display page first.")
    page.keyboard.press("Tab")
    page.keyboard.press("1")  # click: the keyboard cursor starts on the recorded point
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    page.keyboard.press("b")  # a box from the point, sized with the arrows
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-box='corrected']:has-text('[')")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    wait_saved(page)


def settle(page) -> None:
    """Every save and check answered: the status says Saved and no request is pending."""
    time.sleep(0.4)
    wait_saved(page)


def undo_restores(page, annotation_id: int, filled: dict, key: str, expect_banner: str) -> None:
    """``key`` changed the correction; the banner names it; Ctrl+Z puts it back, on the server too."""
    wait_for(lambda: stored(annotation_id) != filled, timeout=10, message=f"{key} saved its change")
    note = page.locator("#ws-undo-note")
    note.wait_for(state="visible")
    assert expect_banner in note.inner_text(), note.inner_text()
    assert "Ctrl+Z" in note.inner_text()
    page.keyboard.press("Control+z")
    wait_for(lambda: stored(annotation_id) == filled, timeout=10, message=f"the correction restored after {key}")
    settle(page)
    assert stored(annotation_id) == filled
    assert page.locator("#ws-undo-note").is_hidden()


@pytest.mark.parametrize("size", VIEWPORTS)
def test_every_destructive_key_is_undone_by_one_key_and_the_server_holds_the_correction_again(
    browser, live_server, project, annotator, tmp_path, artifacts_dir, size
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="trust"))
    page, annotation_id, errors = open_page(browser, live_server, annotator, size)
    annotation = Annotation.objects.get(pk=annotation_id)
    store_alternatives(annotation, 2, ["Thought: Click Display.\nAction: click(start_box='(420,260)')"])
    page.reload()
    page.wait_for_selector("#ws[data-ready='1']")
    fill_correction(page)
    filled = stored(annotation_id)
    assert filled["tau"] == 2 and filled["corrected_thought"] and "box_start" in filled["corrected_action"]
    assert filled["editor_state"]["corrected"]["target_box"]

    # n with the focus on the page: No error, everything of the correction discarded, and said so.
    page.keyboard.press("n")
    undo_restores(page, annotation_id, filled, "n", "Marked No error")
    page.keyboard.press("n")
    page.locator("#ws-undo-note").wait_for(state="visible")
    page.screenshot(path=str(artifacts_dir / f"trust-banner-n-{size[0]}.png"))
    assert "Discarded τ = 2" in page.inner_text("#ws-undo-note")
    page.click("#ws-undo-note-btn")  # the banner's button does the same
    wait_for(lambda: stored(annotation_id) == filled, timeout=10, message="restored by the banner's button")
    settle(page)

    # u puts the focus in the reason: a sentence typed on is kept with it, and the banner still undoes the lot.
    page.keyboard.press("u")
    assert page.evaluate("document.activeElement.id") == "f-unusable_reason"
    page.keyboard.type("ght")
    assert "Marked Unusable" in page.inner_text("#ws-undo-note")
    page.click("#ws-undo-note-btn")
    wait_for(lambda: stored(annotation_id) == filled, timeout=10, message="restored after u and typing")
    settle(page)
    page.keyboard.press("Escape")
    page.keyboard.press("u")
    undo_restores(page, annotation_id, filled, "u", "Marked Unusable")

    # e on another step moves τ: the point and box drawn on o_2 go (the server's rule); undone, they come back.
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("Escape")
    undo_restores(page, annotation_id, filled, "e", "Marked the first error at step 3")
    page.keyboard.press("t")

    # s replaces the correction by the recorded action.
    page.keyboard.press("s")
    undo_restores(page, annotation_id, filled, "s", "Started the correction from")

    # Delete on the box.
    page.keyboard.press("Delete")
    undo_restores(page, annotation_id, filled, "Delete", "Deleted the element box")

    # Taking an alternative (Alt+1).
    page.wait_for_selector("#ws-alts-list li[data-alt='1']")
    page.keyboard.press("Alt+1")
    undo_restores(page, annotation_id, filled, "Alt+1", "Took alternative 1")
    page.screenshot(path=str(artifacts_dir / f"trust-after-undo-{size[0]}.png"))
    assert not errors, errors


@pytest.mark.parametrize("size", VIEWPORTS)
def test_s_on_the_screen_after_tau_leaves_taus_correction_byte_identical(
    browser, live_server, project, annotator, tmp_path, size
):
    human = {2: "Thought: The human's thought.\nAction: click(start_box='<|box_start|>(700,700)<|box_end|>')"}
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="s-after", human_edited=human))
    page, annotation_id, errors = open_page(browser, live_server, annotator, size)
    fill_correction(page)
    filled = stored(annotation_id)
    row = Annotation.objects.filter(pk=annotation_id).values("corrected_action", "editor_state", "version").get()
    page.keyboard.press("j")  # o_{τ+1}
    page.keyboard.press("s")
    page.keyboard.press("Delete")
    page.keyboard.press("Alt+1")
    time.sleep(1.5)  # longer than a save's pause
    settle(page)
    assert stored(annotation_id) == filled
    assert (
        Annotation.objects.filter(pk=annotation_id).values("corrected_action", "editor_state", "version").get() == row
    )
    assert "correction" in page.inner_text("#ws-banner")  # the key says where it works
    page.keyboard.press("k")  # back on τ, s does start from the human's reply
    page.keyboard.press("s")
    wait_for(lambda: "(700,700)" in stored(annotation_id)["corrected_action"], timeout=10, message="s at τ")
    assert not errors, errors


@pytest.mark.parametrize("size", VIEWPORTS)
def test_keys_that_open_a_text_field_put_the_focus_in_it(browser, live_server, project, annotator, tmp_path, size):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="focus"))
    page, annotation_id, errors = open_page(browser, live_server, annotator, size)
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")
    page.keyboard.press("Escape")
    wait_saved(page)
    # e on the step that is τ already (its category chosen): the letters typed go into the corrected thought.
    page.keyboard.press("e")
    page.keyboard.type("tnusfoc")
    assert page.input_value("#f-corrected_thought") == "tnusfoc"
    wait_for(lambda: stored(annotation_id)["corrected_thought"] == "tnusfoc", timeout=10, message="thought saved")
    assert stored(annotation_id)["verdict"] == "error" and stored(annotation_id)["tau"] == 2
    # Type picked from the keyboard: the letters go into its text (its point is optional: p places it).
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.slotType") == "corrected"
    options = page.locator("[data-slot-type='corrected'] option").all_inner_texts()
    digit = str([o.endswith("· type") for o in options if not o.startswith("—")].index(True) + 1)
    page.keyboard.press(digit)
    assert page.evaluate("document.activeElement.dataset.arg") == "content"
    page.keyboard.type("hello tnu")
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    # The preview follows the typing: "type(content='hel')" is valid too, so wait for the whole text in it.
    expect(page.locator("[data-canonical='corrected']")).to_contain_text("type(content='hello tnu')")
    wait_for(
        lambda: stored(annotation_id)["corrected_action"] == "type(content='hello tnu')", timeout=10, message="saved"
    )
    assert stored(annotation_id)["verdict"] == "error"
    assert not errors, errors


@pytest.mark.parametrize("size", VIEWPORTS)
def test_fifty_five_steps_undone_and_redone_and_saved(browser, live_server, project, annotator, tmp_path, size):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="steps"))
    page, annotation_id, errors = open_page(browser, live_server, annotator, size)
    for i in range(55):  # No error, Unusable, ... No error: 55 steps, each saved
        page.click("#ws-mark-ok" if i % 2 == 0 else "#ws-mark-unusable")
    page.keyboard.press("Escape")
    settle(page)
    assert stored(annotation_id)["verdict"] == "no_error"
    assert page.evaluate("wsHistory()") == {"past": 55, "future": 0}
    for _ in range(55):
        page.keyboard.press("Control+z")
    assert page.evaluate("wsHistory()") == {"past": 0, "future": 55}
    assert page.locator("#ws-undo").is_disabled()
    settle(page)
    assert stored(annotation_id)["verdict"] == ""
    for _ in range(30):
        page.keyboard.press("Control+Shift+Z")
    for _ in range(25):
        page.keyboard.press("Control+y")
    assert page.evaluate("wsHistory()") == {"past": 55, "future": 0}
    settle(page)
    assert stored(annotation_id)["verdict"] == "no_error"
    page.click("#ws-undo")
    settle(page)
    assert stored(annotation_id)["verdict"] == "unusable"
    assert not errors, errors


@pytest.mark.parametrize("size", VIEWPORTS)
def test_closing_the_tab_right_after_typing_keeps_the_text(browser, live_server, project, annotator, tmp_path, size):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="close"))
    page, annotation_id, errors = open_page(browser, live_server, annotator, size)
    page.click("#f-note")
    page.keyboard.type("typed just before closing")
    time.sleep(0.2)  # well inside the save's pause
    page.close()
    wait_for(
        lambda: Annotation.objects.get(pk=annotation_id).note == "typed just before closing",
        timeout=10,
        message="the flushed note on the server",
    )


@pytest.fixture
def submitted(project, annotator, tmp_path) -> Annotation:
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="edit"))
    with transaction.atomic():
        annotation = Annotation.objects.create(
            trace=Trace.objects.get(project=project),
            project=project,
            annotator=annotator,
            verdict=Verdict.ERROR,
            tau=2,
            error_category=project.error_categories[0],
            corrected_thought="Open the display page.",
            corrected_action="click(start_box='<|box_start|>(500,300)<|box_end|>')",
            reflection_thought="Wrong page; back.",
            reflection_action="hotkey(key='alt left')",
        )
        annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
    return annotation


@pytest.mark.parametrize("size", VIEWPORTS)
def test_the_leads_edit_form_undoes_and_redoes_every_edit(browser, live_server, lead, submitted, artifacts_dir, size):
    annotation = submitted
    page = browser.new_context(viewport={"width": size[0], "height": size[1]}).new_page()
    login(page, live_server.url, lead.username)
    open_editor(page, live_server.url, annotation)
    original = "click(start_box='<|box_start|>(500,300)<|box_end|>')"
    thought = page.locator("#edit-accept textarea[name='corrected_thought']")
    # A point moved on o_τ, the thought rewritten, the verdict changed: three steps back to the annotator's answer.
    frame = page.locator(".shot-frame[data-markers='error-markers'] .zoom-layer")
    frame.scroll_into_view_if_needed()
    box = frame.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.75)
    # (Within a pixel's rounding of the screenshot's size on the screen: about (250,750).)
    page.wait_for_function(
        "() => /\\((2[45]\\d),(7[45]\\d)\\)/.test(document.getElementById('edit-corrected_action').value)"
    )
    placed = page.input_value("#edit-corrected_action")
    thought.fill("A lead's thought.")
    page.select_option("#edit-verdict", "no_error")
    page.locator("#edit-undo").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / f"trust-review-undo-{size[0]}.png"))
    assert page.evaluate("reviewHistory()") == {"past": 3, "future": 0}
    page.click("#edit-undo")  # the verdict back
    assert page.input_value("#edit-verdict") == "error"
    assert page.locator("#edit-error-fields").is_visible()
    page.keyboard.press("Control+z")  # the thought back (the focus is on the button, not in a field)
    assert thought.input_value() == "Open the display page."
    page.keyboard.press("Control+z")  # the point back
    page.wait_for_function("(want) => document.getElementById('edit-corrected_action').value === want", arg=original)
    assert page.evaluate("reviewHistory()") == {"past": 0, "future": 3}
    page.keyboard.press("Control+Shift+Z")
    page.wait_for_function("(want) => document.getElementById('edit-corrected_action').value === want", arg=placed)
    page.keyboard.press("Control+z")
    page.wait_for_function("(want) => document.getElementById('edit-corrected_action').value === want", arg=original)
    # r puts the focus in the reject comment: the letters typed are the comment.
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("r")
    page.keyboard.type("ans")
    assert page.input_value("#review-comment") == "ans"
    page.click("#edit-accept-button")
    page.wait_for_load_state()
    annotation.refresh_from_db()
    assert annotation.corrected_action == original and annotation.corrected_thought == "Open the display page."


def test_a_stale_flush_on_closing_overwrites_nothing(browser, live_server, project, annotator, tmp_path, caplog):
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="stale"))
    page, annotation_id, errors = open_page(browser, live_server, annotator, (1366, 768))
    page.click("#f-note")
    page.keyboard.type("typed on an old version")
    # Meanwhile another tab saved a newer version.
    version = Annotation.objects.get(pk=annotation_id).version
    annotation_save_draft(annotation_id=annotation_id, user=annotator, base_version=version, fields={"note": "newer"})
    time.sleep(0.2)
    page.close()

    def conflicts():
        return [r for r in caplog.records if r.getMessage() == f"Conflict: /api/annotations/{annotation_id}/draft/"]

    wait_for(conflicts, timeout=10, message="the flush refused as stale (409)")
    time.sleep(0.5)
    assert Annotation.objects.get(pk=annotation_id).note == "newer"
