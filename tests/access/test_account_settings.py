"""One's own settings: how single-key shortcuts work (studio.models.ShortcutMode), stored per person and carried on
every page's body for static/js/keys.js; a value that is no mode is refused by name."""

from __future__ import annotations

import pytest

from studio.selectors import shortcut_mode_of

pytestmark = pytest.mark.django_db


def test_a_person_chooses_how_single_key_shortcuts_work(client, annotator, lead):
    client.force_login(annotator)
    assert b'data-shortcuts="single"' in client.get("/account/settings/").content
    saved = client.post("/account/settings/", {"shortcuts": "off"})
    assert saved.status_code == 200 and b'id="settings-saved"' in saved.content
    assert shortcut_mode_of(annotator) == "off" and shortcut_mode_of(lead) == "single"
    assert b'data-shortcuts="off"' in client.get("/projects/").content
    refused = client.post("/account/settings/", {"shortcuts": "sometimes"})
    assert refused.status_code == 400 and b"shortcuts must be one of single, modifier, off" in refused.content
    assert shortcut_mode_of(annotator) == "off"
