"""The workspace at τ fits a laptop's window: at 1366×768 and 1920×1080 the verdict, the error category,
the correction's whole action editor and the recorded action being corrected are all in the side panel's view
without scrolling it, for a long recorded thought, a phone screenshot and a real ScreenAgent step (long thought,
human-edited reply); and a point on an element the source recorded is reached from the keyboard in a few presses
(Ctrl+arrow jumps to it). Screenshots go to test-artifacts/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.annotation.test_browser_element_boxes import SAVE, write_trace
from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

VIEWPORTS = [(1366, 768), (1920, 1080)]
LONG = (
    "The Settings window is open with the sidebar on the left; the Display page shows the brightness slider, the "
    "night light switch and the scale list. The task asks for the scale, so I look for its list under the display's "
    "resolution, which sits below the fold of this page, and I must scroll the right pane first. "
) * 6
# What the side panel must show at τ without being scrolled: the verdict, the category, the correction's action
# editor (type, point, box, the canonical text and its checks), and the recorded action being corrected.
IN_VIEW = {
    "verdict": "#ws-verdict-panel .ws-verdict",
    "category": "#f-error_category",
    "action editor": ".ws-action-editor[data-slot='corrected']",
    "recorded action": "#ws-action",
}
SCREENAGENT_SESSION = Path("screenagent/data/ScreenAgent/train/b18c655c8160419fa2e4eabbd8348b0b")


@pytest.fixture(params=VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def viewport(request):
    return request.param


def correct_at_tau(page, tau: int) -> None:
    """From the first step: to step ``tau``, mark it, pick the first category, the corrected type click."""
    for _ in range(tau - 1):
        page.keyboard.press("j")
    page.keyboard.press("e")
    page.keyboard.press("1")
    page.keyboard.press("Tab")
    page.select_option("[data-slot-type='corrected']", "click")
    page.keyboard.press("Escape")
    page.wait_for_selector("[data-errors='corrected'] li")  # checked: the editor is drawn for the last time
    page.wait_for_timeout(300)


def out_of_view(page) -> dict:
    """Each of IN_VIEW's parts not wholly inside the side panel's view with the panel scrolled to its top, and how
    far out (px), with nothing focused."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.evaluate("document.querySelector('.ws-side').scrollTop = 0")
    page.wait_for_timeout(100)
    return page.evaluate(
        """(parts) => {
        const side = document.querySelector('.ws-side').getBoundingClientRect();
        const out = {};
        for (const [name, selector] of Object.entries(parts)) {
          const node = document.querySelector(selector);
          const b = node && node.getBoundingClientRect();
          if (!b || !b.height) { out[name] = 'not shown'; continue; }
          const below = b.bottom - side.bottom, above = side.top - b.top;
          if (below > 1 || above > 1) out[name] = Math.round(Math.max(below, above));
        }
        return out;
      }""",
        IN_VIEW,
    )


def open_workspace(browser, live_server, annotator, viewport):
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    return context, page, errors


def measure(page, name, viewport, artifacts_dir) -> None:
    heights = page.evaluate(
        "(() => { const s = document.querySelector('.ws-side'); return [s.scrollHeight, s.clientHeight]; })()"
    )
    print(f"\n{name} at τ, {viewport[0]}×{viewport[1]}: {heights[0]} px of side panel in a {heights[1]} px pane")
    page.screenshot(path=str(artifacts_dir / f"fit-{name}-{viewport[0]}.png"))


@pytest.mark.parametrize("case", ["long-thought", "phone"])
def test_at_tau_the_verdict_category_and_action_editor_are_in_view(
    browser, live_server, project, annotator, tmp_path, viewport, case, artifacts_dir
):
    size = (1080, 2400) if case == "phone" else (1920, 1080)
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, size=size, thoughts={2: LONG}, external_id=case))
    context, page, errors = open_workspace(browser, live_server, annotator, viewport)
    correct_at_tau(page, 2)
    missing = out_of_view(page)
    measure(page, case, viewport, artifacts_dir)
    assert missing == {}
    # A phone's portrait screenshot takes the pane's height.
    stage = page.locator("#ws-stage").bounding_box()
    frame = page.locator(".ws-frame").first.bounding_box()
    if case == "phone":
        assert frame["height"] >= stage["height"] * 0.85, (frame, stage)
    # Writing the corrected thought: it grows, and the action editor's type stays in the window.
    page.keyboard.press("f")
    page.keyboard.type("Scroll the right pane down to the scale list first.")
    assert page.locator("#f-corrected_thought").bounding_box()["height"] > 80
    page.screenshot(path=str(artifacts_dir / f"fit-{case}-writing-{viewport[0]}.png"))
    page.keyboard.press("Escape")
    assert out_of_view(page) == {}
    context.close()
    assert errors == []


def test_a_screenagent_step_at_tau_fits(browser, live_server, project, annotator, viewport, realtraces, artifacts_dir):
    from tests.traces.test_importers import run_import

    job = run_import(project, realtraces / SCREENAGENT_SESSION)
    assert job.status == "succeeded", job.message
    context, page, errors = open_workspace(browser, live_server, annotator, viewport)
    # The step with the longest recorded thought (ScreenAgent's are paragraphs), with its human-edited reply.
    lengths = page.evaluate(
        "JSON.parse(document.getElementById('ws-data').textContent).steps.map(s => (s.thought || '').length)"
    )
    tau = max(range(len(lengths)), key=lambda i: lengths[i]) + 1
    assert lengths[tau - 1] > 300, lengths
    correct_at_tau(page, tau)
    missing = out_of_view(page)
    measure(page, "screenagent", viewport, artifacts_dir)
    assert missing == {}
    context.close()
    assert errors == []


@pytest.mark.parametrize("viewport", [(1366, 768)], ids=["1366x768"])
def test_a_point_on_a_recorded_element_is_a_few_key_presses_away(
    browser, live_server, project, annotator, tmp_path, viewport, artifacts_dir
):
    import_folder(project, write_trace(tmp_path / "t"))
    context, page, errors = open_workspace(browser, live_server, annotator, viewport)
    correct_at_tau(page, 2)
    page.locator("#ws-step-label").click()  # nothing focused: the page's keys are live
    # The keyboard cursor starts on the recorded click (700,700); Save is up and to the left, with Cancel between.
    presses = ["Control+ArrowUp", "Control+ArrowLeft"]
    page.keyboard.press("p")
    for key in presses:
        page.keyboard.press(key)
    page.screenshot(path=str(artifacts_dir / f"fit-keyboard-jump-{viewport[0]}.png"))
    assert page.locator(".ws-overlay .ws-element-hover").count() == 1  # the element jumped to is outlined
    page.keyboard.press("Enter")
    # As a click on the element: its box is the target's, the point at the box's centre.
    page.wait_for_function(
        "b => (document.querySelector(\"[data-box='corrected']\") || {}).textContent === b",
        arg=f"[{', '.join(map(str, SAVE))}]",
    )
    page.wait_for_function(
        "() => document.querySelector(\"[data-canonical='corrected']\").innerText.includes('(200,230)')"
    )
    assert len(presses) + 2 <= 6  # p, the jumps, Enter
    # No element that way: said under the screenshot, and the cursor stays.
    page.keyboard.press("p")
    page.keyboard.press("Control+ArrowDown")  # nothing was recorded below the two buttons
    assert "No recorded element lies that way" in page.inner_text("#ws-place-hint")
    page.keyboard.press("Escape")
    context.close()
    assert errors == []


# What finishing a correction takes, each wholly inside the window: the recorded action, the verdict, the category,
# the corrected thought, the action's type and point, the server-checked action and its verdict ("✓ valid"), Submit.
TO_FINISH = {
    "recorded action": "#ws-action",
    "verdict": "#ws-verdict-panel .ws-verdict",
    "category": "#f-error_category",
    "corrected thought": "#f-corrected_thought",
    "action type": "[data-slot-type='corrected']",
    "server-checked action": "[data-canonical='corrected']",
    "check": "[data-errors='corrected'] li.ok",
    "submit": "#ws-submit",
}


def outside_window(page, parts: dict) -> dict:
    """Each of ``parts`` not wholly inside the window (its innerHeight) with the side panel at its top, and how far
    out (px)."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.evaluate("document.querySelector('.ws-side').scrollTop = 0")
    page.wait_for_timeout(100)
    return page.evaluate(
        """(parts) => {
        const out = {};
        for (const [name, selector] of Object.entries(parts)) {
          const node = document.querySelector(selector);
          const b = node && node.getBoundingClientRect();
          if (!b || !b.height) { out[name] = 'not shown'; continue; }
          const below = b.bottom - window.innerHeight, above = -b.top;
          if (below > 0 || above > 0) out[name] = Math.round(Math.max(below, above));
        }
        return out;
      }""",
        parts,
    )


@pytest.mark.parametrize("viewport", [(1366, 650)], ids=["1366x650"])
@pytest.mark.parametrize("case", ["long-thought", "screenagent"])
def test_a_laptop_window_shows_everything_a_correction_needs(
    browser, live_server, project, annotator, tmp_path, viewport, case, request, artifacts_dir
):
    """A 1366×768 laptop's browser shows about 650 px of it: the correction is finished there without scrolling, for
    a long recorded thought and for a real ScreenAgent step (a paragraph of thought and a human-edited reply)."""
    if case == "screenagent":
        from tests.traces.test_importers import run_import

        job = run_import(project, request.getfixturevalue("realtraces") / SCREENAGENT_SESSION)
        assert job.status == "succeeded", job.message
    else:
        import_folder(project, write_native_trace(tmp_path / "t", steps=3, thoughts={2: LONG}, external_id="laptop"))
    context, page, errors = open_workspace(browser, live_server, annotator, viewport)
    lengths = page.evaluate(
        "JSON.parse(document.getElementById('ws-data').textContent).steps.map(s => (s.thought || '').length)"
    )
    correct_at_tau(page, max(range(len(lengths)), key=lambda i: lengths[i]) + 1)
    page.keyboard.press("f")
    page.keyboard.type("Scroll the right pane down to the scale list first.")
    page.keyboard.press("Escape")
    frame = page.locator(".ws-frame.placing").bounding_box()
    page.mouse.click(frame["x"] + frame["width"] * 0.3, frame["y"] + frame["height"] * 0.4)
    page.wait_for_selector("[data-errors='corrected'] li.ok")
    missing = outside_window(page, TO_FINISH)
    measure(page, f"laptop-650-{case}", viewport, artifacts_dir)
    assert missing == {}
    context.close()
    assert errors == []
