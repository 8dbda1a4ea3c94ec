"""The TRL bundle trains, unchanged, with the real `trl`: one SFT step and one DPO step on a tiny random
Qwen2-VL built offline (prescoring/tiny.py: tokenizer from `tokenizers`, processor without torchvision)."""

import copy
import json
import zipfile

import pytest

from annotation.models import Verdict
from exports import services
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

SPECIAL = [
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
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_qwen2vl(corpus: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
    )

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=600, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=SPECIAL[1:]
    )
    tokenizer.chat_template = CHAT_TEMPLATE

    class ProcessorWithoutVideo(Qwen2VLProcessor):
        # torchvision is not installable next to the CPU torch: no video processor.
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template)

        @classmethod
        def get_attributes(cls):
            return ["image_processor", "tokenizer"]

    processor = ProcessorWithoutVideo(
        image_processor=Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=112 * 112),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL}
    config = Qwen2VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3]},
            bos_token_id=ids["<|endoftext|>"],
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(depth=1, embed_dim=32, num_heads=2, mlp_ratio=2, hidden_size=64, in_chans=3),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    return Qwen2VLForConditionalGeneration(config), processor


@pytest.fixture
def trl_bundle(project, annotator, lead, tmp_path):
    for n in range(3):
        trace = make_trace(project, replies=REPLIES, external_id=f"t{n}", image_seed=n + 1)
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=3,
            corrected_thought="Click Display.",
            corrected_action=f"click(start_box='({300 + n},260)')",
            reflection_thought="Wrong panel; go back.",
            reflection_action="hotkey(key='alt left')",
        )
    out = tmp_path / "bundle.zip"
    services.export_to_path(project=project, user=None, fmt="trl", options={"validation_fraction": 0}, out=out)
    folder = tmp_path / "bundle"
    with zipfile.ZipFile(out) as bundle:
        bundle.extractall(folder)
    return folder


@pytest.mark.training
@pytest.mark.django_db
def test_trl_trains_one_sft_and_one_dpo_step(trl_bundle, tmp_path, monkeypatch):
    from datasets import load_dataset
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    corpus = []
    for name in ("data/sft/train-00000-of-00001.jsonl", "data/dpo/train-00000-of-00001.jsonl"):
        for line in (trl_bundle / name).read_text().splitlines():
            record = json.loads(line)
            for key in ("prompt", "completion", "chosen", "rejected"):
                for message in record.get(key, []):
                    corpus += [c["text"] for c in message["content"] if c["type"] == "text"]
    model, processor = tiny_qwen2vl(corpus)
    monkeypatch.chdir(trl_bundle)  # image paths are relative to the bundle root, as the dataset card says
    common = dict(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=2,
        report_to=[],
        max_length=None,
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
    )

    sft = load_dataset(
        "json", data_files="data/sft/train-00000-of-00001.jsonl", split="train", cache_dir=str(tmp_path / "cache")
    )
    assert set(sft["kind"]) == {"error_correction", "post_reflection"}
    sft_trainer = SFTTrainer(model=model, args=SFTConfig(**common), train_dataset=sft, processing_class=processor)
    sft_result = sft_trainer.train()
    assert sft_result.global_step == 1 and torch.isfinite(torch.tensor(sft_result.training_loss))

    dpo = load_dataset(
        "json", data_files="data/dpo/train-00000-of-00001.jsonl", split="train", cache_dir=str(tmp_path / "cache")
    )
    dpo_trainer = DPOTrainer(
        model=model,
        ref_model=copy.deepcopy(model),
        args=DPOConfig(**common, beta=0.1),
        train_dataset=dpo,
        processing_class=processor,
    )
    dpo_result = dpo_trainer.train()
    assert dpo_result.global_step == 1 and torch.isfinite(torch.tensor(dpo_result.training_loss))
