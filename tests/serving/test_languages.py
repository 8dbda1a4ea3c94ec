"""The studio in Simplified Chinese (docs/architecture.md, "Languages").

- The catalogs are whole: every message of the pages, the scripts and the server has a reviewed translation (none
  empty, none fuzzy), and the committed .mo files say what the .po files say (a .po edited without compiling fails).
- The most-used pages, rendered for a person whose account chose Chinese or whose browser asks for it, show no
  English: every visible text and every title, placeholder, label and alt of the page is walked, the data the page
  shows (names, instructions, recorded thoughts and actions) is taken out, and any Latin word left that is not a
  name of a thing (τ, CSV, Qwen2-VL, …) is an unmarked or untranslated string. A control shows the walk finds one.
- The language: the account's choice wins over the browser's, the browser's is the default, English is the default
  of both.
"""

from __future__ import annotations

import gettext as gettext_module
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from tests.conftest import REPO

LOCALE = REPO / "locale" / "zh_Hans" / "LC_MESSAGES"
DOMAINS = ("django", "djangojs")

# Words that are names, not English: what a Chinese page writes as they are.
NAMES = {
    "Trace",
    "Studio",
    "Krippendorff's",
    "English",
    "LLaMA-Factory",
    "Mobile-Agent",
    "sharegpt",
    "Parquet",
    "verl",
    "osworld",
    "screenagent",
    "mobile-agent",
    "uitars-messages",
    "pref",  # the search syntax's example (pref*)
    "token",
    "log",
    "Web",
    "API",
    "CSV",
    "JSON",
    "JSONL",
    "ID",
    "IoU",
    "SFT",
    "DPO",
    "PRM",
    "NLL",
    "HTTP",
    "HTTPS",
    "Qwen",
    "VL",
    "UI",
    "TARS",
    "Krippendorff",
    "Wilson",
    "Ctrl",
    "Shift",
    "Enter",
    "Esc",
    "Alt",
    "Backspace",
    "Home",  # keys are named as their caps print them
    "End",
    "Option",
    "Mac",
    "Webhook",
    "sha",
    "nats",
    "README",
    "OSWorld",
    "ScreenAgent",
    "Mobile",
    "Agent",
    "zip",
    "jsonl",
    "gpu",
}
# Texts of no language a page shows (keys, symbols, sub- and superscripts).
SKIPPED_ELEMENTS = {"script", "style", "code", "kbd", "pre", "sub", "sup"}
CHECKED_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}


def po_entries(path: Path) -> list[dict]:
    """The entries of a .po file: msgid, msgid_plural, msgstr (or msgstr[n]) and flags, by the format's rules."""
    entries: list[dict] = []
    entry: dict = {}
    key = None
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if "msgid" in entry:
                entries.append(entry)
            entry, key = {}, None
            continue
        if line.startswith("#,"):
            entry.setdefault("flags", set()).update(flag.strip() for flag in line[2:].split(","))
            continue
        if line.startswith("#"):
            continue
        match = re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?) (".*")$', line)
        if match:
            key = match.group(1)
            entry[key] = eval(match.group(2))  # a C string literal: Python reads it the same  # noqa: S307
        elif key and line.startswith('"'):
            entry[key] += eval(line)  # noqa: S307
    return entries


def translations(entry: dict) -> list[str]:
    return [value for key, value in entry.items() if key.startswith("msgstr")]


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_message_has_a_reviewed_translation(domain):
    entries = [e for e in po_entries(LOCALE / f"{domain}.po") if e["msgid"]]
    assert len(entries) > (600 if domain == "django" else 100), len(entries)
    assert [e["msgid"] for e in entries if "fuzzy" in e.get("flags", ())] == []
    assert [e["msgid"] for e in entries if not all(translations(e))] == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_compiled_catalogs_say_what_the_po_files_say(domain):
    compiled = gettext_module.GNUTranslations((LOCALE / f"{domain}.mo").open("rb"))
    stale = []
    for entry in po_entries(LOCALE / f"{domain}.po"):
        if not entry["msgid"]:
            continue
        if "msgid_plural" in entry:
            said = compiled.ngettext(entry["msgid"], entry["msgid_plural"], 1)
            wanted = entry["msgstr[0]"]
        elif "msgctxt" in entry:
            said, wanted = compiled.pgettext(entry["msgctxt"], entry["msgid"]), entry["msgstr"]
        else:
            said, wanted = compiled.gettext(entry["msgid"]), entry["msgstr"]
        if said != wanted:
            stale.append(entry["msgid"])
    assert stale == [], "run `manage.py compilemessages` and commit the .mo files"


class VisibleText(HTMLParser):
    """The texts a person reads on a page: text nodes outside scripts, styles and code, and the attributes
    that are read aloud or shown on hover."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIPPED_ELEMENTS:
            self.skipping.append(tag)
        self.texts.extend(value for name, value in attrs if name in CHECKED_ATTRIBUTES and value)

    def handle_endtag(self, tag):
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data):
        if not self.skipping and data.strip():
            self.texts.append(data)


def english_left(html: str, data: list[str]) -> list[str]:
    """The texts of ``html`` holding a Latin word that is neither one of ``data`` nor a name (NAMES)."""
    parser = VisibleText()
    parser.feed(html)
    left = []
    for text in parser.texts:
        for value in data:
            text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", " ", text)
        # a path, a file, a setting's name or a model's name (docs/rounds.md, trace.json, STUDIO_…, ui-tars-1.5-7b) is
        # no language
        text = re.sub(r"\S*[/_\d]\S*|\b[A-Z]{2,}\b|\S*\.(?:json|jsonl|zip|md)\b", " ", text)
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]*[A-Za-z]", text) if w not in NAMES]
        # a lone letter or a step's o_i / t*_τ is notation; two letters or more of a word are language
        if any(len(w) > 2 or w.lower() in {"of", "to", "in", "on", "by", "or", "no", "is", "at"} for w in words):
            left.append(" ".join(text.split()))
    return left


def test_the_walk_finds_english_it_is_shown():
    page = '<p title="Zoom in">放大</p><p>第 1 步 · Ann</p><code>click(start_box)</code><p>Ctrl+Z · τ · CSV</p>'
    assert english_left(page, data=["Ann"]) == ["Zoom in"]
    assert english_left("<p>Not saved</p>", data=[]) == ["Not saved"]


def page_data(world) -> list[str]:
    """What the world's pages show that people or runners wrote: kept in their own words, never translated."""
    from django.contrib.auth import get_user_model

    from traces.models import Project, Step, Trace

    values: set[str] = set()
    for project in Project.objects.all():
        values.update([project.name, *project.error_categories])
    values.update(get_user_model().objects.values_list("username", flat=True))
    for trace in Trace.objects.all():
        values.update([trace.instruction, trace.external_id, trace.source])
    for step in Step.objects.all():
        values.update([step.thought, step.action_text])
    # the longest first, so a name inside a longer text goes with it
    return sorted((v for v in values if v), key=len, reverse=True)


@pytest.fixture
def world_in_chinese(tmp_path, project, annotator, lead):
    from studio.services import account_settings_update
    from tests.factories import make_world

    world = make_world(tmp_path, project=project, annotator=annotator, lead=lead, outsider=False)
    account_settings_update(user=annotator, language="zh-hans")
    return world


def chinese_pages(world) -> list[tuple[str, str, dict]]:
    """(who, URL name, kwargs) of the pages most used: the annotator's day, the lead's review and dashboards."""
    project_id, annotation_id = world["project"].pk, world["annotation"].pk
    trace_id = world["traces"][0].pk
    return [
        ("annotator", "project-list", {}),
        ("annotator", "annotation-queue", {}),
        ("annotator", "annotation-workspace", {"annotation_id": annotation_id}),
        ("annotator", "account-settings", {}),
        ("lead", "project-list", {}),
        ("lead", "trace-list", {"project_id": project_id}),
        ("lead", "trace-detail", {"trace_id": trace_id}),
        ("lead", "annotation-queue", {}),
        ("lead", "review-queue", {}),
        ("lead", "review-detail", {"annotation_id": annotation_id}),
        ("lead", "project-dashboard", {"project_id": project_id}),
        ("lead", "round-dashboard", {"project_id": project_id}),
        ("lead", "instructions-upload", {"project_id": project_id}),
        ("lead", "account-token", {}),
        ("lead", "project-slices", {"project_id": project_id}),
        ("lead", "project-clusters", {"project_id": project_id}),
        ("lead", "project-alignment", {"project_id": project_id}),
        ("annotator", "qualification", {"project_id": project_id}),
        ("lead", "project-settings", {"project_id": project_id}),
        ("lead", "project-quality", {"project_id": project_id}),
        ("lead", "import-upload", {"project_id": project_id}),
        ("lead", "export-home", {}),
        ("lead", "project-webhooks", {"project_id": project_id}),
        ("lead", "search-home", {}),
        ("lead", "project-search", {"project_id": project_id}),
        ("lead", "project-evaluations", {"project_id": project_id}),
    ]


def test_the_most_used_pages_show_no_english_in_chinese(world_in_chinese):
    world = world_in_chinese
    # The annotator chose Chinese in the account; the lead's browser asks for it (no account choice).
    annotator = Client()
    annotator.force_login(world["annotator"])
    lead = Client(headers={"accept-language": "zh-CN,zh;q=0.9,en;q=0.5"})
    lead.force_login(world["lead"])
    clients = {"annotator": annotator, "lead": lead}
    data = page_data(world)
    found = {}
    for who, name, kwargs in chinese_pages(world):
        response = clients[who].get(reverse(name, kwargs=kwargs))
        assert response.status_code == 200, (name, response.status_code)
        assert response.headers["Content-Language"] == "zh-hans", name
        html = response.content.decode()
        assert '<html lang="zh-hans">' in html, name
        if left := english_left(html, data):
            found[name] = left
    login = Client(headers={"accept-language": "zh-CN"}).get(reverse("login"))
    if left := english_left(login.content.decode(), data):
        found["login"] = left
    assert found == {}, "\n".join(f"{name}: {texts}" for name, texts in found.items())


def test_the_account_choice_wins_over_the_browser_and_english_is_the_default(client, annotator, db):
    from studio.services import account_settings_update

    assert client.get(reverse("login")).headers["Content-Language"] == "en"
    assert client.get(reverse("login"), headers={"accept-language": "zh-CN"}).headers["Content-Language"] == "zh-hans"
    account_settings_update(user=annotator, language="zh-hans")
    client.force_login(annotator)
    page = client.get(reverse("project-list"), headers={"accept-language": "en-US,en"})
    assert page.headers["Content-Language"] == "zh-hans"
    assert "<h1>项目</h1>" in page.content.decode()
    # Choosing "the browser's" on the account page: the browser's language from the next page on, and kept.
    response = client.post(reverse("account-settings"), {"language": ""})
    assert response.status_code == 200
    assert client.get(reverse("project-list"), headers={"accept-language": "en"}).headers["Content-Language"] == "en"
    client.post(reverse("account-settings"), {"language": "zh-hans"})
    client.logout()
    client.force_login(annotator)
    assert client.get(reverse("project-list")).headers["Content-Language"] == "zh-hans"


def test_an_unknown_language_is_refused_by_name(client, annotator, db):
    client.force_login(annotator)
    response = client.post(reverse("account-settings"), {"language": "xx"})
    assert response.status_code == 400
    assert "xx" in response.content.decode()


def test_a_refusal_speaks_the_request_language(client, annotator, db):
    client.force_login(annotator)
    response = client.get("/api/traces/999999999/", headers={"accept-language": "zh-CN"})
    assert response.status_code == 404
    assert response.json()["kind"] == "not_found"
    assert response.json()["detail"] == "在您可访问的范围内没有这个轨迹。"


def test_an_input_refusal_speaks_the_request_language(client, annotator, project, db):
    """The input rules' refusal (studio.inputs, asked by the middleware): the why in the request's language, the
    field's name and the character's escape as they are; English is unchanged."""
    client.force_login(annotator)
    url = f"/api/projects/{project.pk}/traces/"
    chinese = client.get(url, {"q": "a\x00b"}, headers={"accept-language": "zh-CN"})
    english = client.get(url, {"q": "a\x00b"})
    assert chinese.status_code == english.status_code == 400
    assert chinese.json()["detail"] == "已拒绝：q：包含 NUL 字符（\\u0000）。"
    assert english.json()["detail"] == "Refused: q: contains a NUL character (\\u0000)."


def test_a_helpers_refusal_is_worded_in_the_active_language():
    """The helpers that say why (``*_problem``, ``*_refusal``) word it in the active language, the values as they
    are: a language tag, a webhook's address inside the network, a value JSON cannot hold."""
    from studio.inputs import input_problem
    from traces.languages import language_problem
    from webhooks.network import registration_refusal

    with translation.override("zh-hans"):
        assert language_problem("chinese") == (
            "language 必须是 BCP 47 语言标签，例如 zh、ja、ar 或 pt-BR，而不是 'chinese'"
        )
        assert registration_refusal("127.0.0.1") == (
            "127.0.0.1 是 127.0.0.1，这是 Studio 内部网络中的地址；只有 STUDIO_WEBHOOKS_ALLOW_PRIVATE_HOSTS "
            "中列出的主机才会接收投递"
        )
        assert input_problem({"a": [float("nan")]}) == "a[0]：是 nan，JSON 无法表示"
    with translation.override("en"):
        assert language_problem("chinese") == (
            "language must be a BCP 47 tag such as zh, ja, ar or pt-BR, not 'chinese'"
        )
        assert input_problem({"a": [float("nan")]}) == "a[0]: is nan, which JSON cannot hold"


def test_pre_scorings_model_type_warning_is_worded_in_the_requests_language(project, lead, tmp_path):
    """The note a model run keeps in ``job.errors`` when the checkpoint is not of the project's usual model type,
    and the refusal of a model directory that is not there, in the language of whoever asked for the run."""
    from prescoring import services
    from traces import grammar

    smart = project.coordinate_convention == grammar.SMART_RESIZE_PIXELS
    other_type = "qwen2_vl" if smart else "qwen2_5_vl"
    (tmp_path / "config.json").write_text(json.dumps({"model_type": other_type}))
    with translation.override("zh-hans"):
        job = services.prescore_job_create(
            project=project, user=lead, scorer="qwen2vl", model_path=str(tmp_path), enqueue=False
        )
        with pytest.raises(services.PrescoreError) as missing:
            services.prescore_job_create(
                project=project, user=lead, scorer="qwen2vl", model_path=str(tmp_path / "nowhere"), enqueue=False
            )
    expected = "qwen2_5_vl" if smart else "qwen2_vl"
    assert job.errors == [
        {"error": f"项目的 {project.coordinate_convention} 坐标通常用 {expected} 模型评分；这个检查点是 {other_type}"}
    ]
    assert str(missing.value) == f"模型目录 {tmp_path / 'nowhere'} 不存在"


def test_the_scripts_catalog_is_served_in_the_page_language(client, db):
    body = client.get(reverse("javascript-catalog"), headers={"accept-language": "zh-CN"}).content.decode()
    assert json.dumps("已保存") in body  # the catalog writes its texts as JSON


def test_an_api_refusal_keeps_its_code_and_speaks_the_request_language(api_client, annotator, project):
    """A service's refusal (Invalid, 400): the same machine-read kind in both languages, the words in each."""
    client = api_client(annotator)
    url = f"/api/projects/{project.pk}/next-trace/"
    english = client.post(url, {"order": "bogus"}, format="json")
    chinese = client.post(url, {"order": "bogus"}, format="json", headers={"accept-language": "zh-CN"})
    assert english.status_code == chinese.status_code == 400
    assert english.json()["kind"] == chinese.json()["kind"] == "invalid"
    assert english.json()["detail"] == "order must be 'id' or 'suspicion', not 'bogus'"
    assert chinese.json()["detail"] == "order 必须是 'id' 或 'suspicion'，而不是 'bogus'"
    # no API endpoint at all: the 404 of the URL table, in words too
    missing = client.get("/api/no-such-endpoint/", headers={"accept-language": "zh-CN"})
    assert missing.status_code == 404 and missing.json()["kind"] == "not_found"
    assert missing.json()["detail"] == "/api/no-such-endpoint/ 处没有 API 端点或对象。"


def test_a_job_summary_is_worded_in_its_requesters_language(project, lead, annotator, tmp_path):
    """A job runs where no request is: its summary is written in the language of the account that asked for it."""
    from studio.services import account_settings_update
    from tests.traces.test_import_hostile import trace_files, write_zip
    from traces.services import import_job_create, import_job_run

    account_settings_update(user=lead, language="zh-hans")

    def summary(user):
        archive = write_zip(tmp_path / f"{user.username}.zip", trace_files(user.username))
        job = import_job_create(
            project=project,
            user=user,
            upload_name=str(archive),
            original_name=archive.name,
            server_path=True,
            enqueue=False,
        )
        return import_job_run(job_id=job.pk).message

    assert summary(lead).startswith("1 条轨迹，2 个步骤，已存储 2 张截图")
    assert summary(annotator).startswith("1 trace, 2 steps, 2 screenshots stored")  # the browser's: the default


def test_an_imports_per_file_errors_and_progress_are_worded_in_its_requesters_language(project, lead, tmp_path):
    """The error list a lead reads on an import job: each broken file's problem in the lead's language, the file's
    name and the JSON parser's own words as they are."""
    from studio.services import account_settings_update
    from tests.traces.test_import_hostile import trace_files, write_zip
    from traces.selectors import import_job_report
    from traces.services import import_job_create, import_job_run

    account_settings_update(user=lead, language="zh-hans")
    files = trace_files("kept") | {"broken/trace.json": b'{"format": "trace-studio/v1",'}
    archive = write_zip(tmp_path / "mixed.zip", files)
    job = import_job_create(
        project=project,
        user=lead,
        upload_name=str(archive),
        original_name=archive.name,
        server_path=True,
        enqueue=False,
    )
    job = import_job_run(job_id=job.pk)
    messages = [entry["error"] for entry in job.errors]
    assert any("broken/trace.json" in m and "的 JSON 无效" in m for m in messages), messages
    with translation.override("zh-hans"):
        assert import_job_report(job).progress == "已读取 2 / 2 条轨迹"
    assert import_job_report(job).progress == "2 of 2 traces read"


def test_an_archive_refusal_is_worded_in_the_active_language(tmp_path):
    """An upload that is no zip is refused in the lead's language, the file's name as it is; English is unchanged."""
    from traces.importers.archive import ArchiveError, safe_extract

    upload = tmp_path / "traces.zip"
    upload.write_bytes(b"not a zip at all")

    def refusal() -> str:
        with pytest.raises(ArchiveError) as caught:
            safe_extract(upload, tmp_path / "out")
        return str(caught.value)

    with translation.override("zh-hans"):
        assert refusal() == "traces.zip：不是 zip 压缩包（或已被截断）"
    with translation.override("en"):
        assert refusal() == "traces.zip: not a zip archive (or it is truncated)"


def test_a_services_refusal_is_worded_in_the_active_language():
    """A service's refusal (an export's options) in the reader's language, the values as they are; English is
    unchanged."""
    from exports.builders import ExportOptions, OptionsError

    def refusal() -> str:
        with pytest.raises(OptionsError) as caught:
            ExportOptions.parse({"bogus": 1, "split_seed": 2})
        return str(caught.value)

    with translation.override("zh-hans"):
        assert refusal() == "未知的导出选项：bogus"
    with translation.override("en"):
        assert refusal() == "unknown export option(s): bogus"


def test_a_missing_instruction_note_quotes_the_importers_warning_in_its_requesters_language(project, realtraces, lead):
    """A Chinese-speaking lead's note on a Mobile-Agent run without instruction: the note and the importer's hint it
    quotes are both in Chinese."""
    from studio.services import account_settings_update
    from traces.selectors import INSTRUCTION_MISSING
    from traces.services import import_job_create, import_job_run

    account_settings_update(user=lead, language="zh-hans")
    run = realtraces / "mobile-agent-v1" / "results" / "Gmail" / "2"
    job = import_job_create(
        project=project, user=lead, upload_name=str(run), server_path=True, enqueue=False, fmt="mobile-agent"
    )
    job = import_job_run(job_id=job.pk)
    (entry,) = [e for e in job.errors if e.get("kind") == INSTRUCTION_MISSING]
    assert "源文件中没有找到任务指令（Mobile-Agent 的文件中没有记录任务指令；" in entry["error"], entry["error"]
    assert entry["error"].endswith("此轨迹不会进入标注队列"), entry["error"]


@pytest.mark.django_db(transaction=True)
def test_a_socket_refusal_speaks_the_pages_language(project, annotator, role_groups):
    """The live socket's error frames are worded in the handshake's language, with the same kind."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from channels.testing import WebsocketCommunicator

    from annotation.consumers import LiveConsumer

    async def refusal(language: bytes) -> dict:
        comm = WebsocketCommunicator(LiveConsumer.as_asgi(), "/ws/live/", headers=[(b"accept-language", language)])
        comm.scope["user"] = annotator
        connected, _ = await comm.connect()
        assert connected
        await comm.send_json_to({"type": "no.such.type"})
        while (frame := await comm.receive_json_from(timeout=5))["type"] != "error":
            pass
        await comm.disconnect()
        return frame

    with ThreadPoolExecutor(1) as pool:  # a browser test's event loop may run in this thread
        english = pool.submit(asyncio.run, refusal(b"en")).result()
        chinese = pool.submit(asyncio.run, refusal(b"zh-CN,zh;q=0.9")).result()
    assert english["kind"] == chinese["kind"] == "invalid"
    assert english["detail"] == "unknown message type 'no.such.type'"
    assert chinese["detail"] == "未知的消息类型 'no.such.type'"


def test_dates_on_a_page_follow_its_language(world_in_chinese):
    """The review queue's submitted dates: "2026年12月7日 15:04" in Chinese, "Dec 7, 2026, 3:04 PM" in English."""
    from datetime import UTC, datetime

    from annotation.models import Annotation

    Annotation.objects.filter(pk=world_in_chinese["annotation"].pk).update(
        status="submitted", submitted_at=datetime(2026, 12, 7, 15, 4, tzinfo=UTC)
    )
    lead = Client()
    lead.force_login(world_in_chinese["lead"])
    chinese = lead.get(reverse("review-queue"), headers={"accept-language": "zh-CN"}).content.decode()
    english = lead.get(reverse("review-queue"), headers={"accept-language": "en"}).content.decode()
    assert "2026年12月7日 15:04" in chinese and "Dec 7, 2026" not in chinese
    assert "Dec 7, 2026, 3:04 PM" in english and "2026年12月7日" not in english
