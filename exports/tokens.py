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
  ``<|vision_start|><|image_pad|><|vision_end|>``), tokenized by the model's own tokenizer when the studio has one
  (``STUDIO_EXPORT_TOKENIZER_DIR``, a checkpoint folder with its tokenizer files); otherwise an upper bound, the
  rendered text's UTF-8 bytes: Qwen's tokenizer is a byte-level BPE, whose every token stands for at least one byte.
- The sample is the whole sequence the trainer builds: prompt and target; a pair's prompt and the longer of its two
  replies (each side is one sequence); a process record's every step; an RL row's prompt and annotated reply.

The chat template's layout is the longest a trainer makes of these messages: LLaMA-Factory's sharegpt records merge
a user turn's text and image and consecutive history replies into one turn each, which only removes turn markers.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
# What Qwen2's tokenizer makes of a sample's rendered text (chat template, UI-TARS prompt, English replies), in UTF-8
# bytes a token: 4.6 to 4.9 over every SFT/DPO sample and process record of the public dart-gui (OSWorld), ScreenAgent
# and Mobile-Agent traces, counted with Qwen2's vocabulary (docs/formats.md, "Sequence length"). The estimate takes the
# low end, the larger count, so the overstatement the README names is not overstated itself.
QWEN2_BYTES_PER_TOKEN = (4.6, 4.9)


def image_tokens(width: int, height: int, *, min_pixels: int, max_pixels: int) -> int:
    """The ``<|image_pad|>`` tokens Qwen2-VL's processor gives a ``width × height`` screenshot within these bounds."""
    resized_h, resized_w = grammar.smart_resize(height, width, min_pixels=min_pixels, max_pixels=max_pixels)
    factor = PATCH_SIZE * MERGE_SIZE
    return (resized_h // factor) * (resized_w // factor)


def chat_text(messages: list[tuple[str, list]]) -> str:
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
    replies = [sample.chosen or "", sample.rejected or ""] if sample.is_preference else [sample.completion or ""]
    return [[*messages, ("assistant", [reply])] for reply in replies], list(prompt.images)


@dataclass(frozen=True)
class Count:
    tokens: int
    image_tokens: int
    text_tokens: int
    images: int


class TokenCounter:
    """Counts samples for a bundle's pixel bounds, with a tokenizer (exact) or the byte bound."""

    def __init__(self, *, min_pixels: int, max_pixels: int, tokenizer: Any = None, tokenizer_name: str = ""):
        self.min_pixels = min_pixels
        self.max_pixels = max_pixels
        self.tokenizer = tokenizer
        self.counted_with = f"tokenizer {tokenizer_name}" if tokenizer is not None else BOUND

    def text_tokens(self, text: str) -> int:
        if self.tokenizer is None:
            return len(text.encode("utf-8"))
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def image_tokens(self, screenshot) -> int:
        return image_tokens(screenshot.width, screenshot.height, min_pixels=self.min_pixels, max_pixels=self.max_pixels)

    def count(self, sample) -> Count:
        """The longest sequence of ``sample``, as the trainer's processor expands it."""
        sequences, images = sample_sequences(sample)
        text = max(self.text_tokens(chat_text(messages)) for messages in sequences)
        pads = [self.image_tokens(image) for image in images]
        # Each image's placeholder is one <|image_pad|> in the text; the processor repeats it per token.
        return Count(
            tokens=text + sum(pads) - len(pads), image_tokens=sum(pads), text_tokens=text - len(pads), images=len(pads)
        )


@functools.lru_cache(maxsize=4)
def _load_tokenizer(folder: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def token_counter(pixels: dict, tokenizer_dir: str | None) -> TokenCounter:
    """The counter for a bundle: ``tokenizer_dir``'s tokenizer when it loads, else the byte bound (logged)."""
    tokenizer = None
    if tokenizer_dir:
        try:
            tokenizer = _load_tokenizer(str(Path(tokenizer_dir)))
        except Exception:  # noqa: BLE001 - no transformers, no folder, no tokenizer files: the bound still holds
            log.exception("export: the tokenizer in %s did not load; counting the byte bound", tokenizer_dir)
    return TokenCounter(
        min_pixels=pixels["min_pixels"],
        max_pixels=pixels["max_pixels"],
        tokenizer=tokenizer,
        tokenizer_name=Path(tokenizer_dir).name if tokenizer_dir else "",
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
