"""A real training step on bundles of 1920×1080 five-screenshot histories: one LLaMA-Factory SFT step and
one DPO step with the bundle's own configs, on the tiny random-weight Qwen2-VL of prescoring/tiny.py. TRL: its SFT and
DPO collators take the full-HD histories whole with the limit the bundle's README sets, and one TRL SFT and DPO step
runs on 960×540 histories (a full-HD step is over a minute of CPU on two cores; what a cut breaks, the collation shows).

Such a history is 5 × 2691 = 13,455 image tokens: the 8192 the LLaMA-Factory configs used to fix cut it, and the
forward pass failed ("Image features and image tokens do not match"). The exporter counts every sample
(exports/tokens.py) and sets ``cutoff_len`` / ``max_length`` to hold the longest. Each test fails on a cut sequence
(the image tokens that reach the model, the labelled target), on a token/feature mismatch (the step raises) and on a
label on a history turn. Few samples, one step each: CI has two cores.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import zipfile

import pytest

from annotation.models import Verdict
from exports import services, tokens
from tests.conftest import REPO
from tests.fixtures_export import accepted_annotation, make_trace

FULL_HD = (1920, 1080)
TRAINED_SIZE = (960, 540)  # TRL's training step: a quarter of full HD's pixels (the full-HD collation is its own test)
IMAGE_TOKENS_FULL_HD = 2691  # smart_resize(1080, 1920) = 1092 × 1932: 39 × 69 tokens of 28 px
END_OF_TURN = "<|im_end|>\n"
# Seven recorded steps: the error at τ = 6 leaves four imaged history steps and o_6 (history window 5), and the
# post-reflection sample at s_7 the same.
STEPS = [
    "Thought: Open the start menu.\nAction: click(start_box='(10,990)')",
    "Thought: Type the query.\nAction: type(content='display\\n')",
    "Thought: Wait for the results.\nAction: wait()",
    "Thought: Scroll the list.\nAction: scroll(start_box='(500,500)', direction='down')",
    "Thought: Open the settings.\nAction: click(start_box='(420,310)')",
    "Thought: Open the wrong item.\nAction: click(start_box='(500,300)')",
    "Thought: Scroll down.\nAction: scroll(start_box='(500,500)', direction='down')",
]
TAU = 6


def full_hd_bundle(project, annotator, lead, tmp_path, fmt: str, size: tuple[int, int] = FULL_HD):
    """One trace of 1920×1080 screenshots (or ``size``) answered "error at τ = 6" (an error-correction, a
    post-reflection sample and a DPO pair, each with five screenshots), exported in ``fmt`` and unzipped."""
    trace = make_trace(project, replies=STEPS, external_id="hd", image_seed=3, size=size)
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=TAU,
        corrected_thought="Click Display.",
        corrected_action="click(start_box='(300,260)')",
        reflection_thought="Wrong panel; go back.",
        reflection_action="hotkey(key='alt left')",
    )
    out = tmp_path / f"{fmt}.zip"
    services.export_to_path(project=project, user=None, fmt=fmt, options={"validation_fraction": 0}, out=out)
    folder = tmp_path / fmt
    with zipfile.ZipFile(out) as archive:
        archive.extractall(folder)
    return folder


@pytest.fixture
def tiny_checkpoint(tmp_path_factory):
    """prescoring/tiny.py's random-weight Qwen2-VL (its tokenizer counts the exported samples' text)."""
    pytest.importorskip("torch")
    from prescoring.tiny import build_tiny_qwen2vl

    return build_tiny_qwen2vl(tmp_path_factory.mktemp("tiny") / "checkpoint")


def manifest_tokens(bundle) -> dict:
    return json.loads((bundle / "manifest.json").read_text())["tokens"]


def assistant_turns(record: dict) -> list[str]:
    return [turn["value"] for turn in record["conversations"] if turn["from"] == "gpt"]


@pytest.mark.django_db
@pytest.mark.llamafactory
def test_llamafactory_trains_a_sft_and_a_dpo_step_on_full_hd_histories(
    llamafactory_python, project, annotator, lead, tmp_path, settings, tiny_checkpoint
):
    settings.EXPORT_TOKENIZER_DIR = str(tiny_checkpoint)
    bundle = full_hd_bundle(project, annotator, lead, tmp_path, "llamafactory")
    sequence = manifest_tokens(bundle)
    longest = sequence["longest"]
    assert longest["images"] == 5 and longest["image_tokens"] == 5 * IMAGE_TOKENS_FULL_HD
    assert sequence["counted_with"] == "tokenizer checkpoint"
    cutoff = sequence["cutoff_len"]
    assert cutoff >= longest["tokens"] > 8192, "the history overruns the 8192 the configs used to fix"
    for config in ("sft.yaml", "dpo.yaml"):
        assert f"cutoff_len: {cutoff}\n" in (bundle / config).read_text()

    reports = {stage: tmp_path / f"train-{stage}.json" for stage in ("sft", "dpo")}
    command = [str(llamafactory_python), str(REPO / "tests" / "llamafactory_train.py")]
    for stage, report in reports.items():
        command += [f"{stage}.yaml", str(report)]
    environment = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf-cache"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=bundle, capture_output=True, text=True, timeout=900, env=environment)
    # A cut inside a screenshot's tokens fails here: "Image features and image tokens do not match".
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    sft, dpo = (json.loads(reports[stage].read_text()) for stage in ("sft", "dpo"))

    records = json.loads((bundle / "data" / "sft" / "train-00000-of-00001.json").read_text())
    assert sft["cutoff_len"] == cutoff and sft["loss_finite"] and len(sft["train"]) == len(records) == 2
    for record, example in zip(records, sft["train"]):
        assert example["image_pad_tokens"] == 5 * IMAGE_TOKENS_FULL_HD, "every screenshot's tokens reached the model"
        assert example["length"] <= longest["tokens"], "the count is the longest LLaMA-Factory makes"
        # The target whole and alone: nothing cut, no label on a history reply.
        assert [run["text"] for run in example["labels"]] == [assistant_turns(record)[-1] + END_OF_TURN]
        assert example["labels"][0]["end"] == example["length"]

    [pair] = json.loads((bundle / "data" / "dpo" / "train-00000-of-00001.json").read_text())
    [example] = dpo["train"]
    assert dpo["loss_finite"] and example["image_pad_tokens"] == 5 * IMAGE_TOKENS_FULL_HD
    assert max(example["length"], example["rejected_length"]) <= longest["tokens"]
    assert [run["text"] for run in example["chosen_labels"]] == [pair["chosen"]["value"] + END_OF_TURN]
    assert [run["text"] for run in example["rejected_labels"]] == [pair["rejected"]["value"] + END_OF_TURN]


def trl_processor(checkpoint, pixels: dict):
    """The tiny checkpoint's processor with the bundle's image bounds (README: "Pixels"), without the video processor
    (torchvision has no wheel for the CPU torch)."""
    from transformers import AutoTokenizer, Qwen2VLProcessor

    from prescoring.qwen2vl import image_processor_class

    class ProcessorWithoutVideo(Qwen2VLProcessor):
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor, tokenizer, None, chat_template=chat_template)

        @classmethod
        def get_attributes(cls):
            return ["image_processor", "tokenizer"]

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    image_processor = image_processor_class()(min_pixels=pixels["min_pixels"], max_pixels=pixels["max_pixels"])
    return ProcessorWithoutVideo(
        image_processor=image_processor, tokenizer=tokenizer, chat_template=tokenizer.chat_template
    )


def labelled_text(batch, tokenizer, row: int = 0) -> str:
    labels = batch["labels"][row]
    return tokenizer.decode(labels[labels != -100].tolist(), skip_special_tokens=False)


def trl_common_args(tmp_path, max_length: int) -> dict:
    return dict(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        max_length=max_length,
    )


def uncut_collator(trainer):
    """The trainer's own collator without the bundle's limit: what a cut would have changed."""
    uncut = copy.copy(trainer.data_collator)
    uncut.max_length = None
    return uncut


def check_sft_collation(sft_trainer, sft, sequence: dict, image_tokens: int, image_token_id: int, tokenizer) -> None:
    """Each SFT record through the trainer's own collator, with the bundle's limit: every screenshot's tokens are
    there and the labels are the whole target alone (the limit cuts the end of a sequence, so nothing was cut)."""
    for record in sft:
        batch = sft_trainer.data_collator([copy.deepcopy(dict(record))])
        length = int(batch["attention_mask"].sum())
        # The count is exact with the model's tokenizer: the bundle's limit holds the sequence TRL builds.
        assert length <= sequence["longest"]["tokens"] <= sequence["max_length"]
        assert int((batch["input_ids"] == image_token_id).sum()) == 5 * image_tokens
        assert labelled_text(batch, tokenizer) == record["completion"][0]["content"][0]["text"] + END_OF_TURN


def trl_datasets(tmp_path):
    from datasets import load_dataset

    cache = str(tmp_path / "hf-cache")
    sft = load_dataset("json", data_files="data/sft/train-00000-of-00001.jsonl", split="train", cache_dir=cache)
    dpo = load_dataset("json", data_files="data/dpo/train-00000-of-00001.jsonl", split="train", cache_dir=cache)
    assert len(sft) == 2 and len(dpo) == 1
    return sft, dpo


@pytest.mark.django_db
@pytest.mark.training
def test_trl_collates_full_hd_histories_whole_with_the_bundle_limit(
    project, annotator, lead, tmp_path, settings, tiny_checkpoint, monkeypatch
):
    """The bundle's limit on 1920×1080 histories (13,455 image tokens, over the 8192 once fixed) through TRL's own SFT
    and DPO collators: nothing cut, so the forward pass gets every image's tokens (the training step on such
    histories, without this test's full size, is the next test)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from transformers import Qwen2VLForConditionalGeneration
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    settings.EXPORT_TOKENIZER_DIR = str(tiny_checkpoint)
    bundle = full_hd_bundle(project, annotator, lead, tmp_path, "trl")
    manifest = json.loads((bundle / "manifest.json").read_text())
    sequence = manifest["tokens"]
    max_length = sequence["max_length"]
    assert sequence["longest"]["image_tokens"] == 5 * IMAGE_TOKENS_FULL_HD
    assert max_length >= sequence["longest"]["tokens"] > 8192
    assert f"max_length={max_length}" in (bundle / "README.md").read_text()

    processor = trl_processor(tiny_checkpoint, manifest["pixels"])
    model = Qwen2VLForConditionalGeneration.from_pretrained(tiny_checkpoint)
    monkeypatch.chdir(bundle)  # image paths are relative to the bundle root
    sft, dpo = trl_datasets(tmp_path)
    common = trl_common_args(tmp_path, max_length)
    sft_trainer = SFTTrainer(model=model, args=SFTConfig(**common), train_dataset=sft, processing_class=processor)
    image_token_id = model.config.image_token_id
    check_sft_collation(sft_trainer, sft, sequence, IMAGE_TOKENS_FULL_HD, image_token_id, processor.tokenizer)

    dpo_trainer = DPOTrainer(
        model=model, args=DPOConfig(**common, beta=0.1), train_dataset=dpo, processing_class=processor
    )
    [pair] = dpo_trainer.train_dataset
    batch = uncut_collator(dpo_trainer)([copy.deepcopy(dict(pair))])
    # The prompt's five screenshots, then the chosen and the rejected reply: the limit holds the longer of the two.
    assert int((batch["input_ids"] == image_token_id).sum()) == 2 * 5 * IMAGE_TOKENS_FULL_HD
    assert int(batch["attention_mask"].sum(dim=1).max()) <= sequence["longest"]["tokens"] <= max_length
    assert torch.equal(dpo_trainer.data_collator([copy.deepcopy(dict(pair))])["input_ids"], batch["input_ids"])


@pytest.mark.django_db
@pytest.mark.training
def test_trl_trains_a_sft_and_a_dpo_step_on_five_screenshot_histories(
    project, annotator, lead, tmp_path, settings, tiny_checkpoint, monkeypatch
):
    """One SFT and one DPO step with the bundle's limit on 960×540 histories: the step runs (no token/feature
    mismatch) and its loss is finite. A quarter of full HD's pixels keeps it to seconds on two cores; the full-HD
    histories go through the same collators in the test above."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from transformers import Qwen2VLForConditionalGeneration
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    settings.EXPORT_TOKENIZER_DIR = str(tiny_checkpoint)
    bundle = full_hd_bundle(project, annotator, lead, tmp_path, "trl", size=TRAINED_SIZE)
    manifest = json.loads((bundle / "manifest.json").read_text())
    sequence = manifest["tokens"]
    pixels = manifest["pixels"]
    image_tokens = tokens.image_tokens(*TRAINED_SIZE, min_pixels=pixels["min_pixels"], max_pixels=pixels["max_pixels"])
    assert sequence["longest"]["image_tokens"] == 5 * image_tokens
    max_length = sequence["max_length"]
    assert max_length >= sequence["longest"]["tokens"]
    assert f"max_length={max_length}" in (bundle / "README.md").read_text()

    processor = trl_processor(tiny_checkpoint, pixels)
    model = Qwen2VLForConditionalGeneration.from_pretrained(tiny_checkpoint)
    monkeypatch.chdir(bundle)  # image paths are relative to the bundle root
    sft, dpo = trl_datasets(tmp_path)
    common = trl_common_args(tmp_path, max_length)
    sft_trainer = SFTTrainer(model=model, args=SFTConfig(**common), train_dataset=sft, processing_class=processor)
    check_sft_collation(sft_trainer, sft, sequence, image_tokens, model.config.image_token_id, processor.tokenizer)
    result = sft_trainer.train()
    assert result.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))

    dpo_trainer = DPOTrainer(
        model=model,
        ref_model=copy.deepcopy(model),
        args=DPOConfig(**common, beta=0.1),
        train_dataset=dpo,
        processing_class=processor,
    )
    result = dpo_trainer.train()
    assert result.global_step == 1 and torch.isfinite(torch.tensor(result.training_loss))


def test_image_tokens_are_qwen2vl_processors():
    """exports.tokens counts an image's tokens as transformers' Qwen2-VL image processor makes them (image_grid_thw,
    merged 2×2), at the project's default bounds and at a small max_pixels, for desktop and phone screens."""
    pytest.importorskip("torch")
    from PIL import Image

    from prescoring.qwen2vl import image_processor_class
    from traces import grammar

    for max_pixels in (grammar.MAX_PIXELS, 1003520, 256 * 28 * 28):
        processor = image_processor_class()(min_pixels=grammar.MIN_PIXELS, max_pixels=max_pixels)
        for size in (FULL_HD, (1468, 956), (1024, 768), (1080, 2400), (56, 42)):
            grid = processor(images=[Image.new("RGB", size)], return_tensors="pt")["image_grid_thw"]
            expected = int(grid.prod()) // (tokens.MERGE_SIZE * tokens.MERGE_SIZE)
            counted = tokens.image_tokens(*size, min_pixels=grammar.MIN_PIXELS, max_pixels=max_pixels)
            assert counted == expected, (size, max_pixels)
    assert tokens.image_tokens(*FULL_HD, min_pixels=grammar.MIN_PIXELS, max_pixels=grammar.MAX_PIXELS) == 2691
    assert tokens.image_tokens(1468, 956, min_pixels=grammar.MIN_PIXELS, max_pixels=grammar.MAX_PIXELS) * 5 == 8840
