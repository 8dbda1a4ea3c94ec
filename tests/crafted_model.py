"""A tiny Qwen2-VL checkpoint whose replies are known in advance: grammar-valid UI-TARS replies, for tests that
need a model's output to parse (the random-weight one of prescoring/tiny.py never writes an action).

How it is made (all in the weights; the loading and sampling code is the product's, untouched):

* It starts from the tiny random-weight model (``prescoring.tiny``: same config, tokenizer, chat template,
  image processor, safetensors), saved to a directory and loaded from there like any real checkpoint.
* Every decoder layer's attention output projection (``o_proj``) and MLP output projection (``down_proj``) is zeroed:
  each layer then adds nothing to the residual stream, so the last hidden state at a position is that position's
  token embedding (then the final RMSNorm). The logits of the next token depend on the current token only: a bigram
  model. The prompt, screenshots included, still runs through the whole network — the vision tower encodes the
  pixels and its features replace the ``<|image_pad|>`` embeddings — but they only reach other positions through
  attention, which is now silent; they cannot change the reply.
* The reply is a few *added tokens*, one per piece of text: ``thought`` (``"Thought: …\\nAction: "``) and one token per
  action (``"click(start_box='<|box_start|>(500,500)<|box_end|>')"``). None repeats, so a bigram chain can write it:
  the prompt's last token (the ``\\n`` after ``<|im_start|>assistant``) → ``thought`` → any one of the actions →
  ``<|im_end|>``.
* The chain is set in the embeddings and the LM head: each chain token's embedding is a unit vector on a dimension of
  its own, and the LM head's column for that dimension gives its successors a logit of ``MARGIN`` (40) and every other
  token 0. At temperature 1 any other token has a probability below 1e-14: sampling, greedy decoding and nucleus
  sampling all follow the chain. With several actions, each is drawn with equal chance (the k sampled
  alternatives differ, as a real checkpoint's do, and a seed repeats them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from prescoring.tiny import build_tiny_qwen2vl

MARGIN = 40.0
END = "<|im_end|>"


def reply_text(thought: str, action: str) -> str:
    """The reply the checkpoint writes when it draws ``action`` (as the scorer decodes it)."""
    return f"{thought}{action}".strip()


def build_crafted_qwen2vl(path: str | Path, *, thought: str, actions: Sequence[str]) -> Path:
    """Write the checkpoint to ``path`` (see the module's docstring) and return it. ``thought`` is the reply's text up
    to the action (``"Thought: …\\nAction: "``); ``actions`` the UI-TARS actions it may go on with, one per reply."""
    import torch
    from transformers import AutoTokenizer, Qwen2VLForConditionalGeneration

    if not actions or len(set(actions)) != len(actions) or thought in actions:
        raise ValueError("the thought and the actions must be distinct pieces, and there must be at least one action")
    path = build_tiny_qwen2vl(path)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    tokenizer.add_tokens([thought, *actions])
    tokenizer.save_pretrained(path)
    model = Qwen2VLForConditionalGeneration.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    torch.manual_seed(0)  # the new rows' initial values: the same weights (and hash) on every build
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    model.config.text_config.vocab_size = len(tokenizer)

    ids = tokenizer.convert_tokens_to_ids
    # What the chat template's generation prompt ends with: the model's first reply token follows it.
    start = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"][-1]
    chain = {start: [ids(thought)], ids(thought): [ids(a) for a in actions]}
    for action in actions:
        chain[ids(action)] = [ids(END)]

    language = model.model.language_model
    hidden = language.embed_tokens.weight.shape[1]
    if len(chain) > hidden:
        raise ValueError(f"{len(chain)} chain tokens do not fit in {hidden} embedding dimensions")
    with torch.no_grad():
        for layer in language.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embed, head = language.embed_tokens.weight, model.lm_head.weight
        for slot, (token, successors) in enumerate(chain.items()):
            embed[token] = 0.0
            embed[token, slot] = 1.0
            # The final hidden state of the token: its embedding through the model's own final norm.
            scale = float(language.norm(embed[token][None, None, :])[0, 0, slot])
            head[:, slot] = 0.0
            head[successors, slot] = MARGIN / scale
    for stale in path.glob("*.safetensors*"):
        stale.unlink()
    model.save_pretrained(path)
    (path / "tiny_model.json").write_text(
        json.dumps({"size": "tiny", "crafted": True, "thought": thought, "actions": list(actions)})
    )
    return path
