"""The pages' scripts put no English words on a page unmarked: text a script writes into an element (``textContent``,
``innerText``), a tooltip, placeholder or accessible name (``title``, ``placeholder``, ``ariaLabel``, the same by
``setAttribute``, and ``alt``), and the text given to the modules' element makers (``el``, ``svg``, a module's
``node``) is a ``gettext`` call (static/js/i18n.js, Django's JavaScript catalog) or a value made elsewhere, never a
string literal with words. A key's name in a ``kbd`` element is the key's, the same in every language.

The Chinese crawl (tests/serving/test_languages.py) sees what the most used pages show; this rule sees the texts a
script writes only in some state (an empty presence list, a run starting, a panel opened), which a crawl may miss."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JS = REPO / "static" / "js"

WORDS = re.compile(r"[A-Za-z]{2,}")
LITERAL = r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)"""
WRITES = (
    re.compile(r"\.(?:textContent|innerText|title|placeholder|ariaLabel)\s*=\s*" + LITERAL),
    re.compile(r"setAttribute\(\s*[\"'](?:aria-label|title|placeholder|alt)[\"']\s*,\s*" + LITERAL),
    # el(tag, attributes, text): the text is the last argument; a kbd element's text is a key's name.
    re.compile(
        r"\b(?:el|svg|node)\(\s*[\"'](?!kbd[\"'])[\w-]+[\"']\s*,\s*(?:\{[^{}]*\}|[^,(){}]+)\s*,\s*" + LITERAL + r"\s*\)"
    ),
)


def unmarked(source: str) -> list[str]:
    """``line: literal`` for each literal with words a script writes onto the page without ``gettext``."""
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        if line.lstrip().startswith(("//", "*", "/*")):
            continue
        for write in WRITES:
            for match in write.finditer(line):
                literal = match.group(1)
                if WORDS.search(re.sub(r"\$\{[^}]*\}", "", literal[1:-1])):
                    found.append(f"{number}: {literal}")
    return found


def test_no_script_writes_unmarked_words_onto_a_page():
    modules = sorted(JS.rglob("*.js"))
    assert len(modules) > 30, modules
    found = [
        f"{path.relative_to(REPO)}:{hit}" for path in modules for hit in unmarked(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "mark these with gettext (static/js/i18n.js) and translate them:\n" + "\n".join(found)


def test_the_rule_finds_each_unmarked_write_and_passes_the_marked_ones():
    source = "\n".join(
        [
            'li.textContent = "nobody";',
            "status.title = `Started ${n} runs`;",
            'button.setAttribute("aria-label", "Close");',
            'const b = node("button", "versions-restore small", "Restore");',
            'svg("text", { x: 1, "font-size": 16 }, "model");',
            'li.textContent = gettext("nobody");',
            'button.setAttribute("aria-label", interpolate(gettext("Close %(name)s"), { name }));',
            'el("kbd", {}, "Ctrl+Z");',
            'el("select", { class: "ws-type", "data-slot-type": o.slot });',
            'status.textContent = "";',
            "cell.textContent = `${done} / ${total}`;",
            '// li.textContent = "a comment";',
        ]
    )
    assert unmarked(source) == [
        '1: "nobody"',
        "2: `Started ${n} runs`",
        '3: "Close"',
        '4: "Restore"',
        '5: "model"',
    ]
