"""The language of a trace's text (traces.languages; WCAG 3.1.2): said by the native format's ``language``, else by
the project's setting, else by the script of the instruction; the pages put it on the text as ``lang``."""

from __future__ import annotations

import pytest

from tests.fixtures_annotation import import_folder, write_native_trace
from traces.languages import language_detect, language_problem
from traces.models import Trace


def test_the_script_of_a_text_names_its_language():
    assert language_detect("打开设置，然后点击显示") == "zh"
    assert language_detect("設定を開いて、表示をクリックします") == "ja"
    assert language_detect("افتح الإعدادات ثم انقر على العرض") == "ar"
    assert language_detect("설정을 여세요") == "ko"
    assert language_detect("Open the settings, then click Display") == ""
    assert language_detect("Open 设置") == "zh"  # a third of the letters suffice: the names of buttons are Latin
    assert language_detect("") == language_detect("1234 !!") == ""
    assert language_problem("zh-Hans") == language_problem("") == ""
    assert "BCP 47" in language_problem("chinese simplified")


@pytest.mark.django_db
def test_a_trace_says_its_language_else_its_project_else_its_script(client, project, lead, tmp_path):
    import_folder(
        project,
        write_native_trace(
            tmp_path / "said",
            steps=1,
            size=(160, 100),
            final=False,
            instruction="打开设置",
            language="ja",
            external_id="said",
        ),
    )
    import_folder(
        project,
        write_native_trace(
            tmp_path / "seen", steps=1, size=(160, 100), final=False, instruction="افتح الإعدادات", external_id="seen"
        ),
    )
    import_folder(
        project, write_native_trace(tmp_path / "latin", steps=1, size=(160, 100), final=False, external_id="latin")
    )
    project.text_language = "fr"
    project.save(update_fields=["text_language"])
    import_folder(
        project,
        write_native_trace(
            tmp_path / "proj",
            steps=1,
            size=(160, 100),
            final=False,
            instruction="打开设置",
            external_id="proj",
            variant=1,
        ),
    )
    languages = dict(Trace.objects.values_list("external_id", "language"))
    assert languages == {"said": "ja", "seen": "ar", "latin": "", "proj": "fr"}
    client.force_login(lead)
    page = client.get(f"/traces/{Trace.objects.get(external_id='seen').pk}/").content.decode()
    assert '<p id="instruction-text" lang="ar">' in page and '<p class="thought" lang="ar">' in page
    latin = client.get(f"/traces/{Trace.objects.get(external_id='latin').pk}/").content.decode()
    assert '<p id="instruction-text">' in latin
    refused = client.patch(
        f"/api/projects/{project.pk}/", {"text_language": "Chinese"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "BCP 47" in refused.json()["detail"]
    changed = client.patch(f"/api/projects/{project.pk}/", {"text_language": "zh"}, content_type="application/json")
    assert changed.status_code == 200, changed.content
    project.refresh_from_db()
    assert changed.json()["text_language"] == project.text_language == "zh"
