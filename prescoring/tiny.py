"""Build and save a random-weight Qwen2-VL checkpoint offline (no hub): for tests and the CPU bench.

The directory it writes has the same files a real checkpoint has (config.json, safetensors weights,
tokenizer files with the Qwen2-VL chat template, preprocessor_config.json), so scoring goes through
exactly the loading path real weights take (:func:`prescoring.qwen2vl.load_scorer`).

``size="tiny"`` is the ~160k-parameter model the tests and the CPU bench score with; ``size="2b"`` has Qwen2-VL-2B's
real dimensions (random weights) for the GPU bench. Both use a small byte-level BPE tokenizer
trained on the spot, with the Qwen special tokens; the config's token ids point at its ids.

With ``reply=`` (a :class:`Reply`) the checkpoint *speaks the grammar*: greedy decoding writes a fixed, valid UI-TARS
reply whatever the prompt, and sampling draws one of its actions, so the paths that parse a model's reply (pre-scoring's
greedy action, on-policy alternatives, checkpoint evaluation) run end to end on it. How, all in the weights (the
loading, scoring and sampling code is the product's, untouched):

* Every decoder layer's attention output projection (``o_proj``) and MLP output projection (``down_proj``) is zeroed:
  each layer adds nothing to the residual stream, so the last hidden state at a position is that position's token
  embedding (through the final RMSNorm), and the next token's logits depend on the current token only: a bigram
  model. A random model gives no signal a reply could be read from (its attention mixes the whole prompt); the last
  input token is the one signal every prompt ends with the same way. The prompt, screenshots included, still runs
  through the whole network (the vision tower's features replace the ``<|image_pad|>`` embeddings) but only reaches
  other positions through attention, which is now silent.
* The reply's pieces are *added tokens*: the thought (``"Thought: …\nAction: "``) and one token per action. None
  repeats, so a bigram chain writes the reply: the generation prompt's last token (the ``\n`` after
  ``<|im_start|>assistant``) → thought → an action → ``<|im_end|>``.
* The chain is set in the embeddings and the LM head: each chain token's embedding is a unit vector on a dimension of
  its own, and the LM head's column for that dimension gives its successors a logit of :data:`MARGIN` and every other
  token 0. At temperature 1 any other token has a probability below 1e-14, so greedy, sampled and nucleus decoding
  all follow the chain. After the thought the actions tie: greedy decoding (the first maximum) writes the first one,
  sampling draws each with equal chance (k sampled alternatives differ, as a real checkpoint's do; a seed repeats
  them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prescoring.chat_template import QWEN2VL_CHAT_TEMPLATE

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<|box_start|>",
    "<|box_end|>",
]


# Text the BPE learns merges from: the UI-TARS reply and prompt vocabulary.
_CORPUS = [
    "You are a GUI agent. You are given a task and your action history, with screenshots.",
    "Thought: I need to open the File menu and click Open.\nAction: click(start_box='(177,549)')",
    "Action: left_double(start_box='(100,200)') right_single drag(start_box='(1,2)', end_box='(3,4)')",
    "hotkey(key='ctrl c') type(content='hello world\\n') scroll(start_box='(5,6)', direction='down')",
    "wait() finished(content='done') call_user() long_press open_app(app_name='Gmail') press_home() press_back()",
    "## Output Format ## Action Space ## Note ## User Instruction Use English in Thought part.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:'\"()[]{}<>_-=+*/\\|!?@#$%^&~`",
]

SIZES: dict[str, dict[str, Any]] = {
    # Runs with transformers 4.57 and 5.23.
    "tiny": {
        "text": dict(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            mrope_section=[2, 3, 3],
        ),
        "vision": dict(depth=1, embed_dim=32, num_heads=2, mlp_ratio=2, hidden_size=64),
        "vocab_size": None,  # the tokenizer's size
    },
    # Qwen2-VL-2B-Instruct's dimensions (config.json of the released checkpoint).
    "2b": {
        "text": dict(
            hidden_size=1536,
            intermediate_size=8960,
            num_hidden_layers=28,
            num_attention_heads=12,
            num_key_value_heads=2,
            mrope_section=[16, 24, 24],
            tie_word_embeddings=True,
        ),
        "vision": dict(depth=32, embed_dim=1280, num_heads=16, mlp_ratio=4, hidden_size=1536),
        "vocab_size": 151936,
    },
}


def build_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_CORPUS * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    tokenizer.chat_template = QWEN2VL_CHAT_TEMPLATE
    return tokenizer


def build_config(tokenizer, size: str = "tiny"):
    from transformers import Qwen2VLConfig

    spec = SIZES[size]
    text = dict(spec["text"])
    mrope = text.pop("mrope_section")
    tie = text.pop("tie_word_embeddings", False)
    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in SPECIAL_TOKENS}
    vocab = spec["vocab_size"] or len(tokenizer)
    return Qwen2VLConfig(
        text_config=dict(
            vocab_size=vocab,
            rope_parameters={"rope_type": "default", "mrope_section": mrope, "rope_theta": 1000000.0},
            bos_token_id=ids["<|endoftext|>"],
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
            tie_word_embeddings=tie,
            max_position_embeddings=32768,
            **text,
        ),
        vision_config=dict(patch_size=14, spatial_merge_size=2, temporal_patch_size=2, in_channels=3, **spec["vision"]),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=tie,
    )


# The logit a speaking checkpoint gives a chain token's successors over every other token (0).
MARGIN = 40.0
REPLY_END = "<|im_end|>"


@dataclass(frozen=True)
class Reply:
    """What a speaking checkpoint writes: ``thought`` (the reply's text up to the action, ``"Thought: …\\nAction: "``)
    then one of ``actions`` (UI-TARS calls; greedy decoding takes the first), then ``<|im_end|>``."""

    thought: str = "Thought: The item I need is in the middle of the screen.\nAction: "
    actions: Sequence[str] = ("click(start_box='<|box_start|>(500,500)<|box_end|>')",)

    def text(self, action: str | None = None) -> str:
        """The reply as the scorer decodes it when the checkpoint writes ``action`` (None: the greedy one)."""
        return f"{self.thought}{self.actions[0] if action is None else action}".strip()

    def check(self) -> None:
        """Refuse pieces a bigram chain cannot write, and replies the grammar does not parse."""
        from traces import grammar

        pieces = [self.thought, *self.actions]
        if not self.actions or not all(pieces) or len(set(pieces)) != len(pieces):
            raise ValueError("a reply needs a thought and at least one action, all distinct and non-empty")
        for action in self.actions:
            try:
                parsed = grammar.parse_response(self.text(action))
            except grammar.ActionSyntaxError as exc:
                raise ValueError(f"the reply with {action!r} does not parse: {exc}") from None
            if not parsed.actions:
                raise ValueError(f"the reply with {action!r} has no action")


def build_tiny_qwen2vl(
    path: str | Path,
    *,
    size: str = "tiny",
    seed: int = 0,
    dtype: str = "float32",
    device: str = "cpu",
    min_pixels: int = 3136,
    max_pixels: int = 1003520,
    reply: Reply | None = None,
) -> Path:
    """Write a random-weight Qwen2-VL checkpoint to ``path`` and return it. Needs torch + transformers.
    ``device``: where the random weights are drawn (a GPU draws 2B of them in a second; the CPU takes a minute).
    ``reply``: the checkpoint speaks it (the module's docstring says how); needs an LM head not tied to the
    embeddings (``size="tiny"``)."""
    import torch
    from tokenizers import AddedToken
    from transformers import Qwen2VLForConditionalGeneration

    from prescoring.qwen2vl import image_processor_class

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    if reply is not None:
        reply.check()
        if SIZES[size]["text"].get("tie_word_embeddings"):
            raise ValueError(f"size {size!r} ties the LM head to the embeddings: it cannot speak a reply")
        pieces = [reply.thought, *reply.actions]
        # Matched on the raw text like the special tokens, so an action's <|box_start|> does not split it: a target
        # that is the reply is then encoded as the three tokens the model writes.
        if tokenizer.add_tokens([AddedToken(piece, normalized=False) for piece in pieces]) != len(pieces):
            raise ValueError("a piece of the reply is already a token of the vocabulary")
    config = build_config(tokenizer, size)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2VLForConditionalGeneration(config).to(getattr(torch, dtype)).eval()
    described: dict = {"size": size, "seed": seed, "random_weights": True}
    if reply is not None:
        _speak(model, tokenizer, reply)
        described["reply"] = {"thought": reply.thought, "actions": list(reply.actions)}
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    image_processor_class()(min_pixels=min_pixels, max_pixels=max_pixels).save_pretrained(path)
    (path / "chat_template.jinja").write_text(QWEN2VL_CHAT_TEMPLATE)
    (path / "tiny_model.json").write_text(json.dumps(described))
    return path


def _speak(model, tokenizer, reply: Reply) -> None:
    """Set the weights so that ``model`` writes ``reply`` (the bigram chain of the module's docstring)."""
    import torch

    ids = tokenizer.convert_tokens_to_ids
    # What the chat template's generation prompt ends with: the model's first reply token follows it.
    start = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"][-1]
    chain = {start: [ids(reply.thought)], ids(reply.thought): [ids(a) for a in reply.actions]}
    for action in reply.actions:
        chain[ids(action)] = [ids(REPLY_END)]
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
            # The token's final hidden state: its embedding through the model's own final norm.
            scale = float(language.norm(embed[token][None, None, :])[0, 0, slot])
            head[:, slot] = 0.0
            head[successors, slot] = MARGIN / scale
