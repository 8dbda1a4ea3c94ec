"""What each sample costs its trainer in tokens, and the sequence length that holds every sample of a bundle.

A trainer cuts a sequence longer than its limit (LLaMA-Factory's ``cutoff_len``, TRL's ``max_length``) without a
word; for a Qwen2-VL sample the cut usually falls inside an image's placeholder tokens and the forward pass fails
("Image features and image tokens do not match"). So the exporter counts each sample as the trainer will and writes
a limit that holds the longest one (``exports.services``: manifest ``tokens``, the LLaMA-Factory configs, the
README's TRL code).

How a sample is counted:

- **Images**, exactly: Qwen2-VL cuts the screenshot, resized by ``smart_resize`` within the bundle's pixel bounds,
  into 14 px patches and merges 2×2 of them into one token, so an image of ``h × w`` resized pixels is
  ``(h / 28) · (w / 28)`` ``<|image_pad|>`` tokens (transformers' ``Qwen2VLImageProcessor``: ``image_grid_thw`` =
  (1, h/14, w/14), tokens = its product / merge_size²; ``tests/exports/test_export_tokens.py`` compares).
- **Text**: the sample's messages rendered by the Qwen2-VL chat template (every image as
  ``<|vision_start|><|image_pad|><|vision_end|>``), tokenized, in this order of preference, by the model's own
  tokenizer (``STUDIO_EXPORT_TOKENIZER_DIR``, a checkpoint folder with its tokenizer files); by Qwen2's vocabulary
  as a package ships it (``dashscope``'s ``qwen.tiktoken``, the ``tokens`` extra: :class:`Qwen2Vocabulary`), exact
  too; or, with neither, an upper bound, the rendered text's UTF-8 bytes: Qwen's tokenizer is a byte-level BPE,
  whose every token stands for at least one byte.
- The sample is the whole sequence the trainer builds: prompt and target; a pair's prompt and the longer of its two
  replies (each side is one sequence); a process record's every step; an RL row's prompt and annotated reply.

The chat template's layout is the longest a trainer makes of these messages: LLaMA-Factory's sharegpt records merge
a user turn's text and image and consecutive history replies into one turn each, which only removes turn markers.
"""

from __future__ import annotations

import base64
import functools
import importlib.metadata
import importlib.util
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from traces import grammar, prompting

log = logging.getLogger(__name__)

# Qwen2-VL's vision tower: 14 px patches, merged 2×2 into one language-model token (grammar.IMAGE_FACTOR = 28).
PATCH_SIZE = 14
MERGE_SIZE = 2
IMAGE_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>"
# A trainer's limit is the longest sample rounded up to this: a round number, and room for a tokenizer's merges
# across the joins of a trainer's own turn layout.
LENGTH_STEP = 64
BOUND = "utf8-bytes"  # counted_with when no tokenizer is set: the rendered text's UTF-8 bytes bound its tokens
QWEN2_VOCABULARY = "qwen2-vocabulary"  # counted_with's start when Qwen2's vocabulary from a package counted the text
# What Qwen2's tokenizer makes of a sample's rendered text (chat template, UI-TARS prompt, English replies), in UTF-8
# bytes a token: 4.6 to 4.9 over every SFT/DPO sample and process record of the public dart-gui (OSWorld), ScreenAgent
# and Mobile-Agent traces, counted with Qwen2's vocabulary (docs/formats.md, "Sequence length"). The estimate takes the
# low end, the larger count, so the overstatement the README names is not overstated itself.
QWEN2_BYTES_PER_TOKEN = (4.6, 4.9)


# Qwen2's vocabulary without a checkpoint. Qwen2 (and Qwen2-VL, UI-TARS's base) keeps Qwen's byte-level BPE: the same
# 151,643 ranks, in the same order as the ids of its vocab.json, and the same pre-tokenizer. Alibaba's maintained SDK,
# dashscope (Apache-2.0), ships those ranks as a tiktoken file; the file is read where the package lies, without
# importing the package (its __init__ loads the whole SDK).
QWEN2_RANKS_PACKAGE = "dashscope"
QWEN2_RANKS_FILE = ("resources", "qwen.tiktoken")
QWEN2_RANKS = 151_643  # ids 0 … 151,642; the special tokens follow
# transformers' Qwen2 tokenizer (models/qwen2/tokenization_qwen2.py, PRETOKENIZE_REGEX): digits one by one.
QWEN2_PRETOKENIZE = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
# Qwen2-VL's added tokens, ids 151,643 on, in this order (its tokenizer_config.json's added_tokens_decoder; transformers'
# Qwen2VLConfig: image_token_id 151,655 is <|image_pad|>). The tokenizer takes each out of the text whole before the
# normalizer and the BPE, so each is one token wherever it stands (the template's turn markers, an action's
# <|box_start|>).
QWEN2_SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
# Where a text splits with no change to its tokens: after a line break and before a printable ASCII character, no
# piece of Qwen2's pre-tokenizer spans the cut (a piece holding a line break ends with it when the next character is
# neither a line break nor a space, and no pattern looks behind), and NFC leaves both sides as they are.
LINE_START = re.compile(r"(?<=\n)(?=[!-~])")
# The lines whose counts a vocabulary keeps, and the messages whose counts a counter keeps: what recurs is a trace's
# and the system turn, met again within a few samples; a few MB at most (a message is a few KB, a line less).
COUNTED_LINES = 8192
COUNTED_PIECES = 8192  # the pieces between added tokens whose counts a vocabulary keeps, as its lines'
COUNTED_MESSAGES = 1024
COUNTED_SIZES = 256  # the screenshot sizes whose image tokens a counter keeps
SPECIAL_TOKEN_SPLIT = re.compile("(" + "|".join(re.escape(token) for token in QWEN2_SPECIAL_TOKENS) + ")")


class Qwen2Vocabulary:
    """Qwen2's tokenizer as its ``tokenizer.json`` describes it, on ``tiktoken``: the added tokens taken out whole, the
    rest NFC-normalized (Qwen2's normalizer), cut by Qwen2's pre-tokenizer and merged by the BPE ranks.
    ``tests/exports/test_qwen2_vocabulary.py`` compares it with transformers' ``Qwen2Tokenizer`` built from the same
    ranks and Qwen2's merges."""

    def __init__(self, ranks: dict[bytes, int], source: str):
        import tiktoken

        self.source = source
        self.encoding = tiktoken.Encoding(
            "qwen2",
            pat_str=QWEN2_PRETOKENIZE,
            mergeable_ranks=ranks,
            special_tokens={token: len(ranks) + n for n, token in enumerate(QWEN2_SPECIAL_TOKENS)},
        )
        self._line_count = functools.lru_cache(maxsize=COUNTED_LINES)(self._encoded_length)
        self._piece_count = functools.lru_cache(maxsize=COUNTED_PIECES)(self._lines_length)

    def ids(self, text: str) -> list[int]:
        out: list[int] = []
        for n, piece in enumerate(SPECIAL_TOKEN_SPLIT.split(text)):
            if n % 2:  # an added token (split's odd pieces are the separators)
                out.append(self.encoding.encode_single_token(piece))
            elif piece:
                out += self.encoding.encode_ordinary(unicodedata.normalize("NFC", piece))
        return out

    def count(self, text: str) -> int:
        """``len(self.ids(text))``, each line of a piece between added tokens counted once a process
        (``COUNTED_LINES``): lines recur from sample to sample (the system prompt and the prompt template in every
        one, a trace's history in each sample of it, a pair's prompt on both sides), and the BPE is most of an
        export's work otherwise. A piece is kept whole too (``COUNTED_PIECES``): the template's pieces between its
        actions' ``<|box_start|>`` and ``<|box_end|>`` recur whole, so only the piece that holds a trace's
        instruction is cut into lines."""
        total = 0
        for n, piece in enumerate(SPECIAL_TOKEN_SPLIT.split(text)):
            if n % 2:
                total += 1
            elif piece:
                total += self._piece_count(piece)
        return total

    def _lines_length(self, piece: str) -> int:
        if "\n" not in piece:
            return self._line_count(piece)
        return sum(self._line_count(line) for line in line_pieces(piece))

    def _encoded_length(self, line: str) -> int:
        return len(self.encoding.encode_ordinary(unicodedata.normalize("NFC", line)))


def line_pieces(text: str) -> list[str]:
    """``LINE_START.split(text)``, without the regular expression's look at every position (most of the count of a
    text met for the first time): the text cut after each line break that a printable ASCII character follows."""
    first, *segments = text.split("\n")
    pieces = []
    current = first
    for segment in segments:
        if segment and "!" <= segment[0] <= "~":
            pieces.append(current + "\n")
            current = segment
        else:
            current += "\n" + segment
    pieces.append(current)
    return pieces


def qwen2_ranks_file(package: str = QWEN2_RANKS_PACKAGE) -> Path | None:
    """Where the installed ``package`` keeps Qwen's BPE ranks, found without importing it; ``None`` when absent."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder).joinpath(*QWEN2_RANKS_FILE)
        if path.is_file():
            return path
    return None


def read_ranks(path: Path) -> dict[bytes, int]:
    """A tiktoken ranks file: a base64 token and its rank a line (read here: tiktoken's own reader copies a local
    file into a cache folder first)."""
    ranks = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.lru_cache(maxsize=2)
def qwen2_vocabulary(package: str = QWEN2_RANKS_PACKAGE) -> Qwen2Vocabulary | None:
    """Qwen2's vocabulary from ``package``'s ranks file, loaded once a process (about a second and 60 MB); ``None``
    when the package or ``tiktoken`` is not installed or the file is not Qwen2's 151,643 ranks (logged)."""
    path = qwen2_ranks_file(package)
    if path is None or importlib.util.find_spec("tiktoken") is None:
        return None
    try:
        ranks = read_ranks(path)
        if sorted(ranks.values()) != list(range(QWEN2_RANKS)):
            log.warning(
                "export: %s holds %d ranks, not Qwen2's %d; not counting with it", path, len(ranks), QWEN2_RANKS
            )
            return None
        return Qwen2Vocabulary(ranks, f"{package} {importlib.metadata.version(package)}")
    except Exception:  # noqa: BLE001 - a file or package that does not load: the next way of counting still holds
        log.exception("export: Qwen2's vocabulary in %s did not load", path)
        return None


def image_tokens(width: int, height: int, *, min_pixels: int, max_pixels: int) -> int:
    """The ``<|image_pad|>`` tokens Qwen2-VL's processor gives a ``width × height`` screenshot within these bounds."""
    resized_h, resized_w = grammar.smart_resize(height, width, min_pixels=min_pixels, max_pixels=max_pixels)
    factor = PATCH_SIZE * MERGE_SIZE
    return (resized_h // factor) * (resized_w // factor)


def chat_text(messages: Sequence[tuple[str, Sequence]]) -> str:
    """The Qwen2-VL chat template's rendering of ``(role, parts)`` messages, each part a text or ``None`` for an
    image (the template's, prescoring.chat_template: a system turn is present in every prompt the builder makes)."""
    out = []
    for role, parts in messages:
        body = "".join(IMAGE_PLACEHOLDER if part is None else part for part in parts)
        out.append(f"<|im_start|>{role}\n{body}<|im_end|>\n")
    return "".join(out)


def _prompt_messages(prompt: prompting.StatePrompt) -> list[tuple[str, list]]:
    return [
        (message.role, [part.text if part.kind == prompting.TEXT else None for part in message.parts])
        for message in prompt.messages
    ]


def sample_sequences(sample) -> tuple[list[list[tuple[str, list]]], list]:
    """The sequences a trainer builds of ``sample`` as chat messages (a pair: one per side, the same prompt), and the
    images each holds, in order."""
    prompt = sample.prompt
    if isinstance(prompt, prompting.Trajectory):
        messages: list[tuple[str, list]] = [("system", [prompt.system]), ("user", [prompt.instruction])]
        for reply in prompt.replies:
            messages += [("user", [None]), ("assistant", [reply])]
        return [messages], list(prompt.images)
    messages = _prompt_messages(prompt)
    return [[*messages, ("assistant", [reply])] for reply in sample_replies(sample)], list(prompt.images)


def sample_replies(sample) -> list[str]:
    """A one-state sample's replies, each the last turn of one sequence: a pair's two sides, else its completion."""
    return [sample.chosen or "", sample.rejected or ""] if sample.is_preference else [sample.completion or ""]


@dataclass(frozen=True)
class Count:
    tokens: int
    image_tokens: int
    text_tokens: int
    images: int


class TokenCounter:
    """Counts samples for a bundle's pixel bounds, with ``text_count`` (a tokenizer's or Qwen2's vocabulary's, exact,
    named by ``counted_with``) or, without one, the byte bound."""

    def __init__(
        self,
        *,
        min_pixels: int,
        max_pixels: int,
        text_count: Callable[[str], int] | None = None,
        counted_with: str = BOUND,
        by_message: bool = False,
    ):
        self.min_pixels = min_pixels
        self.max_pixels = max_pixels
        self.text_count = text_count
        self.counted_with = counted_with if text_count is not None else BOUND
        # ``by_message``: ``text_count`` counts a chat text as the sum of its messages' counts, as Qwen2's vocabulary
        # does (each message starts and ends at an added token, where Qwen2's tokenizer cuts the text before anything
        # else) and the byte bound; then each message is counted once (``COUNTED_MESSAGES``): the system turn and a
        # trace's history recur in every sample of it, a pair's prompt on both sides. A tokenizer from a folder
        # counts whole texts (its added tokens' settings may join what the template puts around them).
        self._message_tokens = (
            functools.lru_cache(maxsize=COUNTED_MESSAGES)(self._chat_tokens)
            if by_message or text_count is None
            else None
        )
        self._image_tokens = functools.lru_cache(maxsize=COUNTED_SIZES)(self._size_tokens)
        # The last state prompt counted, with its text tokens and its images' tokens: a correction's prompt s_τ is
        # the prompt of its SFT sample and of each of its pairs, met one after the other.
        self._last_prompt: tuple[prompting.StatePrompt, int, list[int]] | None = None

    def text_tokens(self, text: str) -> int:
        if self.text_count is None:
            return len(text.encode("utf-8"))
        return self.text_count(text)

    def _chat_tokens(self, role: str, parts: tuple) -> int:
        return self.text_tokens(chat_text([(role, parts)]))

    def sequence_tokens(self, messages: list[tuple[str, list]]) -> int:
        """The text tokens of a sequence of ``(role, parts)`` messages, rendered by the chat template."""
        if self._message_tokens is None:
            return self.text_tokens(chat_text(messages))
        return sum(self._message_tokens(role, tuple(parts)) for role, parts in messages)

    def image_tokens(self, screenshot) -> int:
        return self._image_tokens(screenshot.width, screenshot.height)

    def _size_tokens(self, width: int, height: int) -> int:
        return image_tokens(width, height, min_pixels=self.min_pixels, max_pixels=self.max_pixels)

    def _prompt_tokens(self, prompt: prompting.StatePrompt) -> tuple[int, list[int]]:
        """A state prompt's text tokens (the sum of its messages') and its images' tokens, counted once for the
        samples that share it."""
        last = self._last_prompt
        if last is not None and last[0] is prompt:
            return last[1], last[2]
        assert self._message_tokens is not None
        text = sum(self._message_tokens(role, tuple(parts)) for role, parts in _prompt_messages(prompt))
        pads = [self.image_tokens(image) for image in prompt.images]
        self._last_prompt = (prompt, text, pads)
        return text, pads

    def count(self, sample) -> Count:
        """The longest sequence of ``sample``, as the trainer's processor expands it."""
        if self._message_tokens is not None and isinstance(sample.prompt, prompting.StatePrompt):
            # Counted by message, a sequence is its prompt's count and its reply's: the longest is the prompt's and
            # the longest reply's.
            text, pads = self._prompt_tokens(sample.prompt)
            text += max(self._message_tokens("assistant", (reply,)) for reply in sample_replies(sample))
        else:
            sequences, images = sample_sequences(sample)
            text = max(self.sequence_tokens(messages) for messages in sequences)
            pads = [self.image_tokens(image) for image in images]
        # Each image's placeholder is one <|image_pad|> in the text; the processor repeats it per token.
        return Count(
            tokens=text + sum(pads) - len(pads), image_tokens=sum(pads), text_tokens=text - len(pads), images=len(pads)
        )


@functools.lru_cache(maxsize=4)
def _load_tokenizer(folder: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def _tokenizer_count(tokenizer) -> Callable[[str], int]:
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def token_counter(pixels: dict, tokenizer_dir: str | None) -> TokenCounter:
    """The counter for a bundle, the first that loads of: ``tokenizer_dir``'s tokenizer, Qwen2's vocabulary from its
    package, the byte bound (each fallback logged)."""
    text_count, counted_with = None, BOUND
    if tokenizer_dir:
        try:
            text_count = _tokenizer_count(_load_tokenizer(str(Path(tokenizer_dir))))
            counted_with = f"tokenizer {Path(tokenizer_dir).name}"
        except Exception:  # noqa: BLE001 - no transformers, no folder, no tokenizer files: the next way still holds
            log.exception("export: the tokenizer in %s did not load; counting without it", tokenizer_dir)
    if text_count is None and (vocabulary := qwen2_vocabulary(QWEN2_RANKS_PACKAGE)) is not None:
        text_count, counted_with = vocabulary.count, f"{QWEN2_VOCABULARY} ({vocabulary.source})"
    if text_count is None:
        log.info("export: no tokenizer and no Qwen2 vocabulary (the tokens extra): counting the text's UTF-8 bytes")
    return TokenCounter(
        min_pixels=pixels["min_pixels"],
        max_pixels=pixels["max_pixels"],
        text_count=text_count,
        counted_with=counted_with,
        by_message=counted_with.startswith(QWEN2_VOCABULARY),
    )


def bound_estimate(longest: dict) -> dict:
    """For a longest sample counted with the byte bound: about how many tokens Qwen2's tokenizer makes of it (its text
    at ``QWEN2_BYTES_PER_TOKEN``), the limit that would hold that, and by how much the written limit overstates it."""
    text = math.ceil(longest["text_tokens"] / QWEN2_BYTES_PER_TOKEN[0])
    about = longest["image_tokens"] + text
    limit = trainer_length(longest["tokens"])
    return {
        "text_tokens_about": text,
        "tokens_about": about,
        "cutoff_len_about": trainer_length(about),
        "overstates_by_about": limit - trainer_length(about),
        "bytes_per_token": list(QWEN2_BYTES_PER_TOKEN),
    }


def trainer_length(tokens: int) -> int:
    """The sequence limit written for a longest sample of ``tokens``: rounded up to ``LENGTH_STEP``."""
    return max(LENGTH_STEP, math.ceil(tokens / LENGTH_STEP) * LENGTH_STEP)


def longer(current: dict | None, candidate: dict) -> dict:
    """The longer of two longest-sample records (the first on a tie, so the shard order decides)."""
    return candidate if current is None or candidate["tokens"] > current["tokens"] else current


def counter_record(counter: TokenCounter, sample, *, stem: str, row: int) -> dict:
    """One sample's count with what names it in the bundle: its annotation, kind, data file (a shard's stem, named at
    assembly) and row in that file (from 0)."""
    count = counter.count(sample)
    return {
        "tokens": count.tokens,
        "image_tokens": count.image_tokens,
        "text_tokens": count.text_tokens,
        "images": count.images,
        "annotation_id": sample.annotation_id,
        "trace_id": sample.trace_id,
        "kind": sample.kind,
        "stem": stem,
        "row": row,
    }
