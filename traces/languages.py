"""The language a trace's text is written in (WCAG 3.1.2, language of parts): the pages put it on the instruction,
the thoughts and the corrections (``lang``), so a screen reader reads Chinese with a Chinese voice, and the fonts
pick the right glyphs. A trace says it (the native format's ``language``), else its project does (its setting), else
the script of its instruction does (``language_detect``); "" where nothing says: the page's own language."""

from __future__ import annotations

import re

from django.utils.translation import gettext

# A BCP 47 tag as people write one: a language, then subtags (zh, zh-Hans, pt-BR, ja).
LANGUAGE_TAG = re.compile(r"^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8}){0,3}$")
LANGUAGE_MAX = 35

# Scripts that name their language well enough for a voice and a font: kana is Japanese (a Japanese text mixes kana
# with its kanji), Hangul Korean, then Han alone Chinese; the Arabic script Arabic (Persian and Urdu write in it too:
# their traces say so with the native field or the project's setting).
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ARABIC = re.compile(r"[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]")
_LETTER = re.compile(r"[^\W\d_]")


def language_problem(tag: str) -> str:
    """What is wrong with ``tag`` as a language ("" when nothing is; "" itself is no language said)."""
    if tag == "" or (len(tag) <= LANGUAGE_MAX and LANGUAGE_TAG.match(tag)):
        return ""
    return gettext("language must be a BCP 47 tag such as zh, ja, ar or pt-BR, not %(tag)s") % {"tag": repr(tag[:40])}


def language_detect(text: str) -> str:
    """The language the script of ``text`` names, when at least a third of its letters are in that script: "ja",
    "ko", "zh", "ar"; "" for anything else (Latin text, too little text, a mix)."""
    letters = _LETTER.findall(text or "")
    if not letters:
        return ""
    joined = "".join(letters)
    enough = max(1, len(letters) // 3)
    if _KANA.search(joined) and len(_KANA.findall(joined)) + len(_HAN.findall(joined)) >= enough:
        return "ja"
    for tag, script in (("ko", _HANGUL), ("zh", _HAN), ("ar", _ARABIC)):
        if len(script.findall(joined)) >= enough:
            return tag
    return ""


def trace_language(*, said: str, project_language: str, instruction: str) -> str:
    """A new trace's language: what the trace said, else its project's setting, else its instruction's script."""
    return said or project_language or language_detect(instruction)
