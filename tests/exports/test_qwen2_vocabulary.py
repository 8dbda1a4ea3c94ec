"""Qwen2's vocabulary as the ``tokens`` extra ships it counts text exactly as Qwen2's own tokenizer does.

The reference is transformers' ``Qwen2Tokenizer`` (its normalizer, pre-tokenizer and added tokens) built from the
same ranks, with the merges its ``merges.txt`` lists: for each token, in rank order, the two pieces that the BPE of
the lower ranks makes of its bytes (so a merge's priority is its token's rank, as in Qwen2's file). Only the tokens
that occur inside the compared text get their merge (a merge whose token is in no piece of the text never applies),
which keeps the reference cheap to build. The compared text: every string of the public traces under
``settings.REALTRACES_DIR`` (instructions, thoughts, actions, the UI-TARS prompts) and text that a byte count and a
careless tokenizer get wrong (combining marks, CJK, emoji sequences, NUL, CRLF runs, the template's tokens).
"""

from __future__ import annotations

import json
import unicodedata

import pytest

from exports import tokens

pytest.importorskip("tiktoken")
pytest.importorskip("transformers")
if tokens.qwen2_ranks_file() is None:
    pytest.skip(f"{tokens.QWEN2_RANKS_PACKAGE} (the tokens extra) is not installed", allow_module_level=True)

# Of each public source (dart-gui's OSWorld run, ScreenAgent's sessions in Chinese and English, Mobile-Agent's runs),
# this much text: each is a few hundred strings, and the whole 1.4 MB would cost seconds to compare.
SOURCE_SAMPLE_BYTES = 100_000
ODD_TEXT = [
    "naïve cafe\u0301 \u212b A\u030a ﬁle",  # decomposed marks: Qwen2's NFC composes them
    "中文：点击“开始”按钮，然后输入 你好世界。日本語のテキスト",
    "👍🏽 👨\u200d👩\u200d👧 🇫🇷 \U0001fae0",
    "NUL\x00inside\x00\x00 and \x7f",
    "tabs\t\t\r\n\r\n  \n   \n\n",
    "<|im_end|>\u0338 >\u0338",  # a combining mark after a special token does not compose with its '>'
    "’’ “quotes” — dashes… १२३ ٣٤٥ 12345678901234",
    "click(start_box='<|box_start|>(34,546)<|box_end|>')<|im_start|><|im_start|>",
    "<|vision_start|><|image_pad|><|vision_end|><|object_ref_start|>x<|object_ref_end|><|quad_start|><|quad_end|>",
    "<|im_start <|im_end|| |>",  # near misses stay text
    "don't I'LL we've   trailing   ",
]


def strings_in(value, out: dict[str, None]) -> None:
    """Every string of a JSON value into ``out`` (in order, once each), inline images left out."""
    if isinstance(value, str):
        if not value.startswith("data:"):
            out.setdefault(value)
    elif isinstance(value, dict):
        for item in value.values():
            strings_in(item, out)
    elif isinstance(value, list):
        for item in value:
            strings_in(item, out)


def realtrace_strings(root, *, per_source: int = SOURCE_SAMPLE_BYTES) -> list[str]:
    """The distinct strings of each source's JSON files (each folder of ``root``), in file order, up to
    ``per_source`` UTF-8 bytes a source."""
    out: list[str] = []
    for source in sorted(path for path in root.iterdir() if path.is_dir()):
        seen: dict[str, None] = {}
        for path in sorted(source.rglob("*.json")):
            strings_in(json.loads(path.read_text(encoding="utf-8")), seen)
        size = 0
        for text in seen:
            if size >= per_source:
                break
            out.append(text)
            size += len(text.encode("utf-8"))
    return out


def qwen2_reference(texts: list[str]):
    """transformers' Qwen2 tokenizer on the ranks, with the merges of every token inside ``texts``' pieces."""
    import regex
    from transformers import Qwen2Tokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    ranks = tokens.read_ranks(tokens.qwen2_ranks_file())
    split = regex.compile(tokens.QWEN2_PRETOKENIZE)
    pieces = {
        piece.encode("utf-8")
        for text in texts
        for part in tokens.SPECIAL_TOKEN_SPLIT.split(text)[::2]
        for piece in split.findall(unicodedata.normalize("NFC", part))
    }
    inside = {
        data[start:end]
        for data in pieces
        for start in range(len(data))
        for end in range(start + 2, len(data) + 1)
        if data[start:end] in ranks
    }

    def merge_of(token: bytes, rank: int) -> tuple[bytes, bytes]:
        parts = [bytes([byte]) for byte in token]
        while len(parts) > 2:
            found = [(ranks.get(parts[i] + parts[i + 1], rank), i) for i in range(len(parts) - 1)]
            best, i = min(found)
            assert best < rank, token
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        return parts[0], parts[1]

    # A byte-level BPE's vocab.json spells each byte as a printable character (GPT-2's table).
    letters = str.maketrans({chr(byte): letter for byte, letter in bytes_to_unicode().items()})

    def spelled(data: bytes) -> str:
        return data.decode("latin-1").translate(letters)

    merges = [
        (spelled(left), spelled(right))
        for token in sorted(inside, key=ranks.__getitem__)
        for left, right in [merge_of(token, ranks[token])]
    ]
    vocab = {spelled(token): rank for token, rank in ranks.items()}
    reference = Qwen2Tokenizer(vocab=vocab, merges=merges)
    reference.add_special_tokens({"additional_special_tokens": list(tokens.QWEN2_SPECIAL_TOKENS)})
    return reference


@pytest.fixture(scope="module")
def compared(realtraces) -> list[str]:
    return sorted({*realtrace_strings(realtraces), *ODD_TEXT})


def test_the_packaged_vocabulary_counts_as_qwen2s_tokenizer(compared):
    vocabulary = tokens.qwen2_vocabulary()
    assert vocabulary is not None and vocabulary.source.startswith(tokens.QWEN2_RANKS_PACKAGE)
    reference = qwen2_reference(compared)
    assert [reference.convert_tokens_to_ids(token) for token in tokens.QWEN2_SPECIAL_TOKENS] == list(
        range(151_643, 151_643 + len(tokens.QWEN2_SPECIAL_TOKENS))
    )
    assert reference.convert_tokens_to_ids("<|image_pad|>") == 151_655  # Qwen2-VL's image_token_id
    expected = reference(compared, add_special_tokens=False)["input_ids"]
    assert [text[:80] for text, ids in zip(compared, expected, strict=True) if vocabulary.ids(text) != ids] == []
    # Real text, not a handful of strings; and far fewer tokens than bytes (the bound's overstatement).
    counted = sum(vocabulary.count(text) for text in compared)
    size = sum(len(text.encode("utf-8")) for text in compared)
    assert size > 2 * SOURCE_SAMPLE_BYTES and 4 * counted < size


def test_a_trace_step_is_qwen2s_ids():
    """Ids anyone can look up in Qwen2-VL's vocab.json and tokenizer_config.json."""
    vocabulary = tokens.qwen2_vocabulary()
    assert vocabulary.ids("<|im_start|>user\n") == [151644, 872, 198]
    assert vocabulary.ids("<|box_start|>(34,546)<|box_end|>") == [151648, 7, 18, 19, 11, 20, 19, 21, 8, 151649]
    assert vocabulary.count("cafe\u0301") == vocabulary.count("café")  # NFC, as Qwen2's normalizer


LINE_BREAK_TEXT = [
    "Thought: first.\nAction: click(start_box='(1,2)')\n\nnext\n  indented\n\tTab\n\r\nCR\n\u0301mark\n中文\n😀\n",
    "a.\n.b\n\n\nc \n d\n'\n's\n'S\n123\n\n 4\n",
]


def test_counting_by_lines_counts_what_the_whole_text_holds(compared):
    """``count`` cuts a piece into lines at ``LINE_START`` and counts each line once a process; the counts are the
    tokens of the whole text, cut nowhere (``ids``), for every text compared above and text full of line breaks."""
    vocabulary = tokens.qwen2_vocabulary()
    texts = [*compared, *LINE_BREAK_TEXT, "\n".join(compared[:200]), "\n".join(LINE_BREAK_TEXT * 3)]
    assert [text[:80] for text in texts if vocabulary.count(text) != len(vocabulary.ids(text))] == []
    # The control: a cut after every line break, before a space too, changes the tokens of such text.
    whole = LINE_BREAK_TEXT[1]
    cut_anywhere = sum(len(vocabulary.ids(line)) for line in whole.splitlines(keepends=True))
    assert cut_anywhere != len(vocabulary.ids(whole)) == vocabulary.count(whole)


def test_line_pieces_cut_where_line_start_cuts():
    """``line_pieces`` cuts a text where ``LINE_START`` does: after a line break before a printable ASCII character,
    never before a space, a tab, a line break or a character outside ASCII."""
    texts = [
        *LINE_BREAK_TEXT,
        "",
        "\n",
        "\n\n",
        "a",
        "\na",
        "a\n",
        "a\n\nb",
        " \n!\n~\n\x7f\n",
        "\n".join(LINE_BREAK_TEXT),
    ]
    assert [text for text in texts if tokens.line_pieces(text) != tokens.LINE_START.split(text)] == []
    # The control: the text above is cut in several places, and not at the space, the tab or the accent.
    assert tokens.line_pieces(LINE_BREAK_TEXT[0]) == [
        "Thought: first.\n",
        "Action: click(start_box='(1,2)')\n\n",
        "next\n  indented\n\tTab\n\r\n",
        "CR\n\u0301mark\n中文\n😀\n",
    ]
