"""The search's text rules, once for both sides: what a search entry's text columns hold (written by
``services.search_entry_refresh`` and migration 0007) and how a query is split into terms (read by
``selectors.search``), so that a query's words are the index's words.

An entry holds three texts, lower-case:

- ``actions``: the recorded, corrected and post-reflection actions as people write them, the grammar's plain form
  (``click(start_box='(500,300)')``: no ``<|box_start|>`` tokens; text that does not parse stays as written, its
  tokens taken out). A term of action syntax (``start_box='(500``, ``type(``) is found here, as written.
- ``document``: every text of the correction and its step in words: the instruction, the recorded thought, each
  action as its type and its values (``click 500 300``, ``type hello world``), the corrected thought, the
  post-reflection, the note, the reviewer's comment, the category. The action syntax's tokens (box tokens, argument
  names, quotes) are not words: ``box``, ``start`` or ``end`` find what people wrote, not every click.
- ``correction``: what the annotator wrote (the corrected thought and action, the post-reflection, the note), part of
  ``document`` too: the full-text index weighs it most, and an entry whose correction holds the words comes first.

A query is words and "double-quoted phrases" (at most ``selectors.MAX_TERMS``); ``OR`` between two terms lets
either match; a term ending in ``*`` matches words that begin with it. A term holding action syntax (``SYNTAX``) is a fragment,
matched as written; any other punctuation splits words as the index's tokenizers do (``search-box`` is the words
``search box``, ``click,`` the word ``click``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from traces import grammar

# A word: a run of letters and digits (FTS5's unicode61 tokenizer and PostgreSQL's parser split text so too).
WORD = re.compile(r"[^\W_]+")
# Characters of action syntax: a term holding one is a fragment of an action (or code), found as written.
SYNTAX = frozenset("()[]{}<>='\"`\\|_")
# The syntax of an action that does not parse: its tokens, tags and argument names are no words.
_TOKENS = re.compile(r"<\|[a-z_]*\|>|</?(?:point|bbox)>|\b[a-z_][a-z0-9_]*\s*=", re.IGNORECASE)
OR = "OR"
PREFIX = "*"
# Scripts written without spaces between words (Han, kana, Thai, Lao, Myanmar, Khmer): a run of them holds several
# words, so a word is found inside the run (LIKE), and the run's overlapping pairs of characters stand in for its
# words where words are compared or indexed. PostgreSQL's index of a document's pairs (migration 0009's
# ``insights_unspaced_bigrams``) spells this class out: a change here is a new migration remaking that index.
UNSPACED = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_UNSPACED_RUN = re.compile(f"[{UNSPACED}]{{2,}}")


def action_as_written(text: str) -> str:
    """The action part of a reply as people write it: each action in the grammar's plain form (no box tokens), one
    a line; text that does not parse as written, less its box tokens."""
    text = (text or "").strip()
    if not text:
        return ""
    try:
        return "\n".join(grammar.render_action(a, box_tokens=False) for a in grammar.parse_actions(text))
    except (grammar.ActionSyntaxError, TypeError, ValueError):
        return text.replace(grammar.BOX_START, "").replace(grammar.BOX_END, "")


def action_words(text: str) -> str:
    """The words of an action part: each action's type and its values (a point as its two numbers), no syntax."""
    text = (text or "").strip()
    if not text:
        return ""
    try:
        actions = grammar.parse_actions(text)
    except grammar.ActionSyntaxError:
        return " ".join(WORD.findall(_TOKENS.sub(" ", text)))
    lines = []
    for action in actions:
        values = [action.type]
        for _, value in action.args:
            values.extend(str(v) for v in value) if isinstance(value, tuple) else values.append(str(value))
        lines.append(" ".join(" ".join(values).split()))
    return "\n".join(lines)


def entry_texts(annotation, step, *, instruction: str) -> dict[str, str]:
    """A search entry's ``document``, ``correction`` and ``actions`` (module docstring), lower-case, from its
    annotation, its step at τ (or None) and its trace's instruction (model instances or a migration's)."""

    def joined(*parts: str) -> str:
        return "\n".join(p for p in parts if p and p.strip()).lower()

    recorded_thought, recorded_action = (step.thought, step.action_text) if step else ("", "")
    correction = joined(
        annotation.corrected_thought,
        action_words(annotation.corrected_action),
        annotation.reflection_thought,
        action_words(annotation.reflection_action),
        annotation.note,
    )
    return {
        "document": joined(
            instruction,
            recorded_thought,
            action_words(recorded_action),
            correction,
            annotation.review_comment,
            annotation.error_category,
        ),
        "correction": correction,
        "actions": joined(
            action_as_written(recorded_action),
            action_as_written(annotation.corrected_action),
            action_as_written(annotation.reflection_action),
        ),
    }


# --- queries ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One term of a query: ``text`` as typed (lower-case, spaces made single); ``words`` its words, none for a
    fragment (a term of action syntax, or without a letter or digit), which is found as written; ``prefix``: its last
    word may go on (``pel*``)."""

    text: str
    words: tuple[str, ...] = ()
    prefix: bool = False

    @property
    def phrase(self) -> str:
        return " ".join(self.words)


# A "quoted phrase" or a run of other characters; a double quote without its pair is dropped.
_TOKEN = re.compile(r'"([^"]*)"|([^\s"]+)')


def _term(raw: str, *, quoted: bool) -> Term | None:
    text = " ".join(raw.lower().split())
    if not text:
        return None
    words = tuple(WORD.findall(text))
    if not words or any(c in SYNTAX for c in text):
        return Term(text)
    return Term(text, words, prefix=not quoted and text.endswith(PREFIX))


def query_groups(q: str) -> list[tuple[Term, ...]]:
    """``q``'s terms in groups: every group must match, and any one term of a group (``a OR b``). A term alone is kept
    once; ``OR`` first, last or doubled is the word "or"."""
    tokens = [(m.group(1), True) if m.group(1) is not None else (m.group(2), False) for m in _TOKEN.finditer(q)]
    groups: list[list[Term]] = []
    joining = False
    for i, (raw, quoted) in enumerate(tokens):
        if not quoted and raw == OR and groups and not joining and i + 1 < len(tokens):
            joining = True
            continue
        term = _term(raw, quoted=quoted)
        if term is None:
            continue
        if joining:
            if term not in groups[-1]:
                groups[-1].append(term)
            joining = False
        elif [term] not in groups:
            groups.append([term])
    return [tuple(g) for g in groups]


def query_terms(q: str) -> list[Term]:
    """Every term of ``q``, each once (what counts against ``MAX_TERMS``)."""
    return list(dict.fromkeys(t for group in query_groups(q) for t in group))


def unspaced_bigrams(text: str) -> list[str]:
    """The overlapping pairs of characters of ``text``'s runs of unspaced scripts, each once, in order: a document
    holding ``text`` holds every one of them, so on PostgreSQL they narrow a LIKE to the entries whose index of pairs
    holds them all (a two-character Chinese word is one pair; trigrams need three characters)."""
    pairs = (run[i : i + 2] for run in _UNSPACED_RUN.findall(text) for i in range(len(run) - 1))
    return list(dict.fromkeys(pairs))
