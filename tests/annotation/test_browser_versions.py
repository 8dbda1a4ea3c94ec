"""The Versions panel in Chromium at 1920×1080 and 1366×768: the annotator restores the correction a
stray "no error" erased, from the workspace; a lead restores an older version of a submitted answer from the review
page; each time the server holds the restored answer as a new, audited version and the page shows it."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, AnnotationStatus, AuditEvent
from annotation.services import annotation_save_draft, annotation_submit, lease_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

CLICK = {"type": "click", "args": {"start_box": [300, 180]}, "style": "box"}
ESC = {"type": "hotkey", "args": {"key": "esc"}, "style": "box"}
VIEWPORTS = [(1920, 1080), (1366, 768)]


@pytest.fixture
def erased(project, annotator, tmp_path) -> Annotation:
    """v2: a finished correction at τ 3; v3: a stray "no error" that cleared it."""
    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="versions"))
    annotation, _lease = lease_next_trace(user=annotator, project=project)
    full = annotation_save_draft(
        annotation_id=annotation.pk,
        user=annotator,
        base_version=annotation.version,
        fields={
            "verdict": "error",
            "tau": 3,
            "error_category": project.error_categories[0],
            "corrected_thought": "Open the Display panel instead.",
            "reflection_thought": "That was the wrong panel; go back.",
            "editor_state": {"corrected": CLICK, "reflection": ESC},
        },
    )
    stray = annotation_save_draft(
        annotation_id=annotation.pk, user=annotator, base_version=full.version, fields={"verdict": "no_error"}
    )
    assert (full.version, stray.version, stray.corrected_thought) == (2, 3, "")
    return stray


def open_panel(page):
    page.click("#versions > summary")
    page.wait_for_selector("#versions[data-loaded='1'] .versions-item")


@pytest.mark.parametrize("width,height", VIEWPORTS)
def test_the_annotator_restores_the_erased_correction_from_the_workspace(
    browser, live_server, annotator, erased, artifacts_dir, width, height
):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}/annotations/{erased.pk}/")
    page.wait_for_selector("#ws[data-ready='1']")
    open_panel(page)
    items = page.locator("#versions .versions-item")
    assert items.count() == 3
    assert items.nth(0).locator("strong").inner_text() == "Version 3 (current)"
    assert items.nth(0).locator(".versions-restore").count() == 0
    assert "verdict: First error at τ → No error" in items.nth(0).inner_text()
    older = page.locator("#versions .versions-item[data-number='2']")
    assert "corrected thought: nothing → “Open the Display panel instead.”" in older.inner_text()
    older.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / f"versions-workspace-{width}x{height}.png"))
    with page.expect_navigation():
        older.locator(".versions-restore").click()
    page.wait_for_selector("#ws[data-ready='1']")
    stored = Annotation.objects.get(pk=erased.pk)
    assert (stored.version, stored.verdict, stored.tau) == (4, "error", 3)
    assert stored.corrected_thought == "Open the Display panel instead."
    assert stored.editor_state["corrected"] == CLICK
    assert AuditEvent.objects.filter(annotation=stored).latest("id").comment == "Restored version 2"
    # The reloaded page shows the restored answer (the corrected thought in its field) and the new version on top.
    assert page.input_value("#f-corrected_thought") == "Open the Display panel instead."
    open_panel(page)
    newest = page.locator("#versions .versions-item").nth(0)
    assert newest.locator("strong").inner_text() == "Version 4 (current)"
    assert "Restored version 2" in newest.inner_text()
    page.screenshot(path=str(artifacts_dir / f"versions-workspace-restored-{width}x{height}.png"))
    context.close()


@pytest.mark.parametrize("width,height", VIEWPORTS)
def test_a_lead_restores_an_older_version_of_a_submitted_answer(
    browser, live_server, annotator, lead, erased, artifacts_dir, width, height
):
    restored = annotation_save_draft(
        annotation_id=erased.pk,
        user=annotator,
        base_version=erased.version,
        fields={
            "verdict": "error",
            "tau": 3,
            "error_category": erased.project.error_categories[0],
            "corrected_thought": "Open the Display panel instead.",
            "reflection_thought": "That was the wrong panel; go back.",
            "editor_state": {"corrected": CLICK, "reflection": ESC},
        },
    )
    rewritten = annotation_save_draft(
        annotation_id=erased.pk,
        user=annotator,
        base_version=restored.version,
        fields={"corrected_thought": "Click somewhere."},
    )
    submitted = annotation_submit(annotation_id=erased.pk, user=annotator, base_version=rewritten.version)
    assert (restored.version, rewritten.version, submitted.version) == (4, 5, 6)
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    login(page, live_server.url, lead.username)
    page.goto(f"{live_server.url}/reviews/{erased.pk}/")
    open_panel(page)
    target = page.locator("#versions .versions-item[data-number='4']")
    target.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / f"versions-review-{width}x{height}.png"))
    with page.expect_navigation():
        target.locator(".versions-restore").click()
    stored = Annotation.objects.get(pk=erased.pk)
    assert (stored.version, stored.status) == (7, AnnotationStatus.SUBMITTED)
    assert stored.corrected_thought == "Open the Display panel instead."
    event = AuditEvent.objects.filter(annotation=stored).latest("id")
    assert (event.actor_id, event.comment) == (lead.pk, "Restored version 4")
    # The reloaded review page shows the restored thought, and its decision form the restored version.
    assert "Open the Display panel instead." in page.locator("#diff-after").inner_text()
    assert page.locator("input[name='version']").first.input_value() == "7"
    open_panel(page)
    assert page.locator("#versions .versions-item").nth(0).locator("strong").inner_text() == "Version 7 (current)"
    page.screenshot(path=str(artifacts_dir / f"versions-review-restored-{width}x{height}.png"), full_page=True)
    context.close()


def test_a_typing_session_is_one_version_and_a_rewrite_shows_what_differs(
    browser, live_server, project, annotator, tmp_path, artifacts_dir
):
    """Twenty autosaves of a thought typed are one version in the panel, and a later one-word rewrite of the long
    thought shows that word struck through and its replacement, not two texts cut where they still read alike."""
    from datetime import timedelta

    from django.db.models import F

    import_folder(project, write_native_trace(tmp_path / "t", steps=4, external_id="typing"))
    annotation, _lease = lease_next_trace(user=annotator, project=project)
    version = annotation_save_draft(
        annotation_id=annotation.pk,
        user=annotator,
        base_version=annotation.version,
        fields={"verdict": "error", "tau": 2, "error_category": project.error_categories[0]},
    ).version
    thought = (
        "The Settings window is open with the sidebar on the left and the Display page shown; "
        "I click the Display item first."
    )
    words = thought.split(" ")
    for n in range(1, len(words) + 1):
        version = annotation_save_draft(
            annotation_id=annotation.pk,
            user=annotator,
            base_version=version,
            fields={"corrected_thought": " ".join(words[:n])},
        ).version
    AuditEvent.objects.filter(annotation_id=annotation.pk).update(at=F("at") - timedelta(minutes=5))
    annotation_save_draft(
        annotation_id=annotation.pk,
        user=annotator,
        base_version=version,
        fields={"corrected_thought": thought.replace("on the left", "on the right")},
    )
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    page.goto(f"{live_server.url}/annotations/{annotation.pk}/")
    page.wait_for_selector("#ws[data-ready='1']")
    open_panel(page)
    items = page.locator("#versions .versions-item")
    assert items.count() == 4  # the rewrite, the typing session, the verdict and category, the annotation as made
    assert f"{len(words)} saves while typing" in items.nth(1).inner_text()
    rewrite = items.nth(0)
    assert rewrite.locator(".versions-diff del").all_inner_texts() == ["left"]
    assert rewrite.locator(".versions-diff ins").all_inner_texts() == ["right"]
    rewrite.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "versions-typing-session.png"))
    context.close()


def test_the_workspaces_autosaves_of_a_thought_typed_are_one_version(
    browser, live_server, project, annotator, tmp_path
):
    """The page's own autosaves (one at each pause in the typing) of one thought: each is a version on the server,
    the panel lists them as one."""
    from tests.annotation.test_browser_workspace import open_next_trace, wait_saved

    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="autosaves"))
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")  # the category; the focus goes on to the corrected thought
    wait_saved(page)
    words = "Open the Display page first.".split(" ")
    for word in words:
        page.keyboard.type(word + " ")
        page.wait_for_timeout(900)  # a pause: the draft saves
        wait_saved(page)
    annotation = Annotation.objects.get(annotator=annotator)
    typed = AuditEvent.objects.filter(annotation=annotation, kind="edit", changes__has_key="corrected_thought")
    assert typed.count() >= len(words) - 1  # (at least) a save a word
    page.keyboard.press("Escape")
    open_panel(page)
    items = page.locator("#versions .versions-item")
    assert items.count() == 3, items.all_inner_texts()  # the thought typed, the error and its category, as made
    assert f"{typed.count()} saves while typing" in items.nth(0).inner_text()
    context.close()
