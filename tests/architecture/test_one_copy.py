"""Rules that exist once: greps that fail when a second, hand-made copy comes back."""

from __future__ import annotations

import re
import subprocess

from tests.conftest import REPO

# The screenshot URL has one owner, the URL conf (name "screenshot-file"); everyone else asks reverse() or
# Screenshot.image_url / thumbnail_url. The storage key "screenshots/<xx>/<sha>.<ext>" (traces/models.py)
# is a file name inside the bucket, not a URL, and has no leading slash.
_URL_OWNER = "traces/urls.py"
_HAND_BUILT_URL = re.compile(r"/screenshots/|`screenshots/\$\{|[\"'`]screenshots/[\"'`]\s*\+")


def _tracked(*patterns: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=REPO, capture_output=True, text=True, check=True)
    return [p for p in out.stdout.splitlines() if p and not p.startswith(("tests/", "docs/"))]


def test_no_screenshot_url_is_built_by_hand_outside_the_url_conf() -> None:
    files = _tracked("*.py", "*.html", "*.js")
    assert files, "git ls-files found nothing: the test would pass vacuously"
    offenders = []
    for path in files:
        if path == _URL_OWNER:
            continue
        text = (REPO / path).read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if _HAND_BUILT_URL.search(line):
                offenders.append(f"{path}:{n}: {line.strip()}")
    assert offenders == [], "screenshot URLs built by hand (use reverse('screenshot-file') / image_url):\n" + "\n".join(
        offenders
    )


def test_the_pattern_catches_the_hand_built_forms() -> None:
    for line in (
        'url = f"/screenshots/{sha}/full"',
        "src = '/screenshots/' + sha + '/thumb'",
        "const u = `screenshots/${sha}/full`",
        '"screenshots/" + sha',
    ):
        assert _HAND_BUILT_URL.search(line), line
    assert not _HAND_BUILT_URL.search('return f"screenshots/{instance.sha256[:2]}/{instance.sha256}.png"')


def test_code_cites_only_documents_and_sections_this_repository_has() -> None:
    # method.md and the research notes' formats.md are not in this repository; docs/formats.md numbers its sections
    # "## 1." .. "## 5." only, so "§1.4" or "§5" from the notes pointed at the wrong text.
    sections = set(re.findall(r"^## (\d+)\.", (REPO / "docs/formats.md").read_text(encoding="utf-8"), re.M))
    assert sections, "docs/formats.md has no numbered sections: the test would pass vacuously"
    problems = []
    for path in _tracked("*.py", "*.js", "*.html") + [p for p in _tracked_tests() if p.endswith(".py")]:
        if path == "tests/architecture/test_one_copy.py":
            continue
        for n, line in enumerate((REPO / path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if re.search(r"(?<![\w/])(method|anchors|formats)\.md", line) or "until it lands" in line:
                problems.append(f"{path}:{n}: {line.strip()}")
            for cited in re.findall(r"docs/formats\.md §([\d.]+)", line):
                if cited.rstrip(".") not in sections:
                    problems.append(f"{path}:{n}: no section {cited} in docs/formats.md")
    assert problems == [], "\n".join(problems)


def _tracked_tests() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", "tests"], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_production_code_does_not_import_the_test_model_builder() -> None:
    # prescoring/tiny.py builds a random-weight model for tests and benchmarks; what a worker runs must not
    # depend on it (the chat template both need lives in prescoring/chat_template.py).
    files = [p for p in _tracked("*.py") if not p.startswith(("bench/", "prescoring/tiny.py"))]
    assert "prescoring/qwen2vl.py" in files
    offenders = [
        path for path in files if re.search(r"prescoring\.tiny|prescoring import tiny", (REPO / path).read_text())
    ]
    assert offenders == []


# An export format and an importer are declared once (exports/formats/, traces/importers/registry.py); code that
# tests which one it holds instead of asking the writer or the registry is a second copy of the declaration.
_FORMAT_PLACES = ("exports/", "traces/importers/", "traces/api.py", "traces/views.py", "trace_studio_cli/")
_FORMAT_BRANCH = re.compile(
    r"isinstance\([^)]*Writer\)|\bfmt\s*(==|!=)|\bname\s*!=\s*[\"']native[\"']|EXPORT_FORMATS\s*=|\bWRITERS\s*[:=]"
)


def test_no_code_branches_on_which_format_or_importer_it_holds() -> None:
    files = [path for path in _tracked("*.py") if path.startswith(_FORMAT_PLACES)]
    assert any(path.startswith("exports/formats/") for path in files), files
    offenders = []
    for path in files:
        for n, line in enumerate((REPO / path).read_text(encoding="utf-8").splitlines(), 1):
            if _FORMAT_BRANCH.search(line):
                offenders.append(f"{path}:{n}: {line.strip()}")
    assert offenders == [], "a format or importer named outside its declaration (give the writer a method):\n" + (
        "\n".join(offenders)
    )


def test_the_format_pattern_catches_the_branches_it_replaces() -> None:
    for line in (
        "if isinstance(writer, VerlWriter):",
        '**({"labels": PRM_LABELS} if fmt == ExportFormat.PRM else {}),',
        'rules = _PRM_RULES if fmt == "prm" else _SFT_RULES',
        'ordered = [name for name in IMPORTERS if name != "native"] + ["native"]',
        'EXPORT_FORMATS = ("trl", "llamafactory", "parquet", "prm", "verl")',
        "WRITERS: dict[str, type[Writer]] = {",
    ):
        assert _FORMAT_BRANCH.search(line), line
    assert not _FORMAT_BRANCH.search("writer = export_format(fmt).writer")


# History lives in the commits: a name, comment, docstring or doc that says which issue asked for it tells a reader
# nothing about what the code does, and goes stale with the tracker.
_ISSUE_REFERENCE = re.compile(r"\bissues? #?\d+", re.I)
_PROSE_AND_CODE = ("*.py", "*.js", "*.mjs", "*.html", "*.css", "*.md", "*.toml", "*.yml", "Makefile", "Dockerfile")


def test_no_file_names_the_issue_it_came_from() -> None:
    out = subprocess.run(
        ["git", "ls-files", "--", *_PROSE_AND_CODE, ".ci/run"], cwd=REPO, capture_output=True, text=True, check=True
    )
    files = out.stdout.splitlines()
    assert {"tests/architecture/test_one_copy.py", "docs/architecture.md", "studio/web_entry.py"} <= set(files), files[
        :5
    ]
    offenders = []
    for path in files:
        for n, line in enumerate((REPO / path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if _ISSUE_REFERENCE.search(line):
                offenders.append(f"{path}:{n}: {line.strip()}")
    assert offenders == [], "say what the code does; which issue asked for it belongs in the commit:\n" + (
        "\n".join(offenders)
    )


def test_the_issue_pattern_catches_the_references_it_replaces() -> None:
    # Built with f-strings so that this file's own lines hold no reference for the scan above to find.
    for line in (
        f'"""Issue {36}: search across corrections (facets, step cards, CSV)."""',
        f"Gaps in a recording (issue {13}, item {6}): the native format says steps are missing",
        f"## Real data, second pass (issues {13}, {18}, {20})",
        f"// see issue #{21}",
    ):
        assert _ISSUE_REFERENCE.search(line), line
    for line in ("a native trace object (docs/formats.md §1)", "the import's issues: 3 traces refused", "tissue 4"):
        assert not _ISSUE_REFERENCE.search(line), line
