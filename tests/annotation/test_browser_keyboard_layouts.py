"""The workspace's keys on a Russian and an Arabic keyboard layout (the key in e's place types у or ث and still
marks τ; a text field keeps what is typed), and the person's choice of single-key shortcuts (off: a sentence typed
with no field focused changes nothing; with Alt: Alt+e marks τ), the help and the key hints following both."""

from __future__ import annotations

import pytest

from studio.services import account_settings_update
from tests.annotation.test_browser_workspace import open_next_trace
from tests.conftest import login
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

# What the keys in the places of QWERTY's j, k, e and n type on each layout.
LAYOUTS = {
    "ru": {"KeyJ": "о", "KeyK": "л", "KeyE": "у", "KeyN": "т"},
    "ar": {"KeyJ": "ت", "KeyK": "ن", "KeyE": "ث", "KeyN": "ى"},
}


class Keyboard:
    """Key presses as a keyboard with another layout sends them (Chromium's Input.dispatchKeyEvent): the key's
    place (``code``) and what the layout types there (``key``, ``text``)."""

    def __init__(self, page):
        self.cdp = page.context.new_cdp_session(page)

    def press(self, code: str, key: str, modifiers: int = 0):
        vk = ord(code[-1]) if code.startswith("Key") else 0
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers}
        text = {} if modifiers else {"text": key, "unmodifiedText": key}
        self.cdp.send("Input.dispatchKeyEvent", {"type": "keyDown", **base, **text})
        self.cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", **base})


def _workspace(browser, live_server, project, annotator, tmp_path, name):
    import_folder(project, write_native_trace(tmp_path / name, steps=4, external_id=name))
    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, live_server.url, annotator.username)
    open_next_trace(page, live_server.url)
    return page, errors


@pytest.mark.parametrize("layout", ["ru", "ar"])
def test_the_keys_work_on_a_layout_without_latin_letters(
    browser, live_server, project, annotator, tmp_path, artifacts_dir, layout
):
    page, errors = _workspace(browser, live_server, project, annotator, tmp_path, f"layout-{layout}")
    keys, keyboard = LAYOUTS[layout], Keyboard(page)
    keyboard.press("KeyJ", keys["KeyJ"])  # j: the next step
    page.wait_for_function("document.getElementById('ws-step-label').textContent === 'Step 2 of 4'")
    # Told to a screen reader: the screen, its action, the verdict.
    page.wait_for_function("document.getElementById('ws-announce').textContent.startsWith('Step 2 of 4. Action:')")
    keyboard.press("KeyE", keys["KeyE"])  # e: the first error here
    page.wait_for_function("document.getElementById('ws-verdict-text').textContent.includes('First error at step 2')")
    assert page.evaluate("document.activeElement.id") == "f-error_category"
    # The hints and the help name the key as this layout prints it.
    assert page.inner_text("#ws-mark-error kbd") == keys["KeyE"]
    assert page.get_attribute("#ws-mark-error", "aria-keyshortcuts") == keys["KeyE"]
    # A text field keeps the letters typed: none of them runs a command.
    page.focus("#f-note")
    for code in ("KeyJ", "KeyE", "KeyN"):
        keyboard.press(code, keys[code])
    assert page.input_value("#f-note") == keys["KeyJ"] + keys["KeyE"] + keys["KeyN"]
    assert page.inner_text("#ws-step-label") == "Step 2 of 4"
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("?")
    page.wait_for_selector("#ws-help:not([hidden])")
    assert page.inner_text("#ws-help tr[data-command='error'] .ws-keys-of") == keys["KeyE"]
    page.screenshot(path=str(artifacts_dir / f"keyboard-layout-{layout}.png"))
    assert not errors


def test_single_key_shortcuts_off_and_with_alt(browser, live_server, project, annotator, tmp_path, artifacts_dir):
    account_settings_update(user=annotator, shortcuts="off")
    page, errors = _workspace(browser, live_server, project, annotator, tmp_path, "shortcuts")
    assert page.get_attribute("body", "data-shortcuts") == "off"
    page.keyboard.type("I think the next step is just fine, no error")  # no field has the focus
    assert page.inner_text("#ws-step-label") == "Step 1 of 4"
    assert page.inner_text("#ws-verdict-text") == "Not decided yet."
    assert page.is_hidden("#ws-mark-error kbd")
    assert page.get_attribute("#ws-mark-error", "title") == "First error at this step"
    page.keyboard.press("ArrowRight")  # not a character key: works in every mode
    page.wait_for_function("document.getElementById('ws-step-label').textContent === 'Step 2 of 4'")
    page.click("#ws-help-btn")
    assert page.inner_text("#ws-help tr[data-command='error'] .ws-keys-of") == "—"
    assert page.inner_text("#ws-help tr[data-command='previous'] .ws-keys-of") == "←"
    assert "shortcuts are off" in page.inner_text("#shortcut-mode")
    page.screenshot(path=str(artifacts_dir / "keyboard-shortcuts-off-help.png"))

    # The choice is the person's, on their settings page.
    page.goto(f"{live_server.url}/account/settings/")
    page.check("input[name=shortcuts][value=modifier]")
    page.click("#settings-save")
    page.wait_for_selector("#settings-saved")
    open_next_trace(page, live_server.url)
    page.keyboard.press("j")
    page.keyboard.press("e")
    assert page.inner_text("#ws-verdict-text") == "Not decided yet."
    assert page.inner_text("#ws-mark-error kbd") == "Alt+e"
    page.keyboard.press("Alt+KeyJ")
    page.wait_for_function("document.getElementById('ws-step-label').textContent === 'Step 2 of 4'")
    Keyboard(page).press("KeyE", "у", modifiers=1)  # Alt (1) on the Russian layout: the key's place decides
    page.wait_for_function("document.getElementById('ws-verdict-text').textContent.includes('First error at step 2')")
    assert not errors
