"""Build and save a random-weight Qwen2-VL checkpoint offline (no hub): for tests and the CPU bench.

The directory it writes has the same files a real checkpoint has (config.json, safetensors weights,
tokenizer files with the Qwen2-VL chat template, preprocessor_config.json), so scoring goes through
exactly the loading path real weights take (:func:`prescoring.qwen2vl.load_scorer`).

``size="tiny"`` is the ~160k-parameter model the tests and the CPU bench score with; ``size="2b"`` has Qwen2-VL-2B's
real dimensions (random weights) for the GPU bench. Both use a small byte-level BPE tokenizer
trained on the spot, with the Qwen special tokens; the config's token ids point at its ids.
"""

from __future__ import annotations

import json
from pathlib import Path

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

SIZES = {
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


def build_tiny_qwen2vl(
    path: str | Path,
    *,
    size: str = "tiny",
    seed: int = 0,
    dtype: str = "float32",
    device: str = "cpu",
    min_pixels: int = 3136,
    max_pixels: int = 1003520,
) -> Path:
    """Write a random-weight Qwen2-VL checkpoint to ``path`` and return it. Needs torch + transformers.
    ``device``: where the random weights are drawn (a GPU draws 2B of them in a second; the CPU takes a minute)."""
    import torch
    from transformers import Qwen2VLForConditionalGeneration

    from prescoring.qwen2vl import image_processor_class

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    config = build_config(tokenizer, size)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2VLForConditionalGeneration(config).to(getattr(torch, dtype)).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    image_processor_class()(min_pixels=min_pixels, max_pixels=max_pixels).save_pretrained(path)
    (path / "chat_template.jinja").write_text(QWEN2VL_CHAT_TEMPLATE)
    (path / "tiny_model.json").write_text(json.dumps({"size": size, "seed": seed, "random_weights": True}))
    return path
