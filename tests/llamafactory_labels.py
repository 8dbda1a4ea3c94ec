"""Run LLaMA-Factory's own data preprocessing on an unzipped bundle and report where its labels fall.

Runs inside the separate LLaMA-Factory virtualenv (``tests/llamafactory_env.py``), never in the project's: it
imports ``llamafactory`` and nothing of the studio. Run it from the bundle's folder, as the bundle's README says
to run ``llamafactory-cli train sft.yaml``::

    cd bundle && VENV/bin/python tests/llamafactory_labels.py sft.yaml out.json [--set mask_history=false]
        [--and dpo.yaml dpo.json [KEY=YAML ...]]   # more configs in the same process

The config is the bundle's own YAML, parsed by LLaMA-Factory's argument parser (``get_train_args``), with only
what a real checkpoint would provide replaced: ``model_name_or_path`` points at a small tokenizer written here
(the Qwen special tokens, :func:`prescoring.tiny.build_tokenizer`; no weights are needed to preprocess) and
a Qwen2-VL image processor with a released checkpoint's bounds, ``output_dir`` at a temporary folder, and ``bf16`` off (no GPU). Then, as ``llamafactory-cli train`` does before
it builds the model: ``load_tokenizer``, ``get_template_and_fix_tokenizer``, ``get_dataset`` with the stage's
dataset processor (``sft`` → supervised, ``dpo`` → pairwise). The output lists, per preprocessed example and per
label column, the runs of consecutive labelled tokens (``labels != IGNORE_INDEX``) decoded to text, so the test
can say which turns carry loss, and the size (width, height) each of its images is trained at, as LLaMA-Factory's
data collator resizes it (:func:`trained_image_sizes`): under ``train`` (the config's ``dataset``) and ``eval`` (its
``eval_dataset``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # for prescoring.tiny (plain tokenizers/transformers code, no Django)

# llamafactory's workflows call get_dataset with stage "rm" for pairwise data (DPO, reward modelling).
DATASET_STAGE = {"sft": "sft", "dpo": "rm"}
LABEL_COLUMNS = {"sft": ["labels"], "dpo": ["chosen_labels", "rejected_labels"]}


# The image bounds of a released Qwen2-VL checkpoint's preprocessor_config.json (Qwen2-VL-7B-Instruct: 56*56 and
# 16384*28*28), which LLaMA-Factory leaves as they are: its own image_max_pixels / image_min_pixels resize each image
# before this processor sees it.
CHECKPOINT_MIN_PIXELS = 56 * 56
CHECKPOINT_MAX_PIXELS = 16384 * 28 * 28


def tiny_checkpoint(folder: Path) -> Path:
    """A checkpoint folder without weights that ``load_tokenizer`` reads as it reads a real one: the tokenizer and
    a Qwen2-VL image processor with a released checkpoint's bounds."""
    from transformers import Qwen2VLImageProcessor

    from prescoring.tiny import build_tokenizer

    build_tokenizer().save_pretrained(folder)
    Qwen2VLImageProcessor(min_pixels=CHECKPOINT_MIN_PIXELS, max_pixels=CHECKPOINT_MAX_PIXELS).save_pretrained(folder)
    return folder


def qwen2vl_processor(tokenizer, model_args):
    """Qwen2-VL's processor without its video processor, patched by LLaMA-Factory's own ``patch_processor``.

    ``load_tokenizer`` cannot build it here: Qwen2-VL's video processor needs torchvision, which has no wheel for
    the pinned CPU torch, so ``AutoProcessor`` fails and LLaMA-Factory carries on without one.
    Images go through the checkpoint's image processor and the same ``<|image_pad|>`` expansion as with the full one.
    """
    from llamafactory.model.patcher import patch_processor
    from transformers import Qwen2VLImageProcessor, Qwen2VLProcessor

    class ProcessorWithoutVideo(Qwen2VLProcessor):
        attributes = ["image_processor", "tokenizer"]
        tokenizer_class = "PreTrainedTokenizerFast"  # the small tokenizer above, not Qwen2's own class

        def __init__(self, image_processor=None, tokenizer=None, **kwargs):
            super().__init__(image_processor, tokenizer, None, **kwargs)

        @classmethod
        def get_attributes(cls):
            return ["image_processor", "tokenizer"]

    image_processor = Qwen2VLImageProcessor.from_pretrained(model_args.model_name_or_path)
    processor = ProcessorWithoutVideo(image_processor=image_processor, tokenizer=tokenizer)
    patch_processor(processor, tokenizer, model_args)
    return processor


def label_runs(labels: list[int], tokenizer, ignore_index: int) -> list[dict]:
    """Runs of consecutive labelled positions: where each starts and ends, and its text."""
    runs: list[dict] = []
    start = None
    for position, label in enumerate([*labels, ignore_index]):
        if label != ignore_index and start is None:
            start = position
        elif label == ignore_index and start is not None:
            ids = labels[start:position]
            runs.append({"start": start, "end": position, "text": tokenizer.decode(ids, skip_special_tokens=False)})
            start = None
    return runs


def trained_image_sizes(example: dict, inputs: list[int], template, processor) -> list[list[int]]:
    """[width, height] of each image of ``example`` as the model is trained on it: the batch LLaMA-Factory's data
    collator builds for it (``mm_plugin.get_mm_inputs``: the plugin's own resize to ``image_max_pixels`` /
    ``image_min_pixels``, then the checkpoint's image processor), read from ``image_grid_thw`` × the patch size."""
    images = example.get("images") or []
    if not images:
        return []
    batch = template.mm_plugin.get_mm_inputs(images, [], [], [len(images)], [0], [0], [inputs], processor)
    patch = processor.image_processor.patch_size
    return [[width * patch, height * patch] for _frames, height, width in batch["image_grid_thw"].tolist()]


def summary(example: dict, stage: str, tokenizer, image_pad: int, ignore_index: int, template, processor) -> dict:
    """One preprocessed example: its length, its image tokens and the size each image is trained at, and the
    labelled runs of each label column."""
    inputs = example["input_ids" if stage == "sft" else "chosen_input_ids"]
    result = {
        "length": len(inputs),
        "image_pad_tokens": inputs.count(image_pad),
        "image_sizes": trained_image_sizes(example, inputs, template, processor),
    }
    if stage == "dpo":
        result["rejected_length"] = len(example["rejected_input_ids"])
    for column in LABEL_COLUMNS[stage]:
        result[column] = label_runs(example[column], tokenizer, ignore_index)
    return result


def read_config(path: str, overrides: list[str]) -> dict:
    """The bundle's YAML config with ``KEY=YAML`` overrides; ``KEY=`` (nothing after it) drops the key."""
    config = yaml.safe_load(Path(path).read_text())
    for item in overrides:
        key, _, value = item.partition("=")
        if value:
            config[key] = yaml.safe_load(value)
        else:
            config.pop(key, None)
    return config


def train_args(config: dict, scratch: Path):
    """``config`` through LLaMA-Factory's argument parser, with only what a real checkpoint and run would provide
    replaced (see the module docstring)."""
    from llamafactory.hparams import get_train_args

    config = {
        **config,
        "model_name_or_path": str(tiny_checkpoint(scratch / "checkpoint")),
        "output_dir": str(scratch / "out"),
        "bf16": False,
        "report_to": "none",
        "overwrite_cache": True,
    }
    model_args, data_args, training_args, _finetuning_args, _generating_args = get_train_args(config)
    return model_args, data_args, training_args


def preprocess(config_path: str, overrides: list[str]) -> dict:
    """The report of one config (see the module docstring)."""
    from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
    from llamafactory.extras.constants import IGNORE_INDEX
    from llamafactory.model import load_tokenizer

    config = read_config(config_path, overrides)
    stage = config["stage"]
    with tempfile.TemporaryDirectory(prefix="llamafactory-labels-") as scratch_name:
        scratch = Path(scratch_name)
        model_args, data_args, training_args = train_args(config, scratch)
        tokenizer = load_tokenizer(model_args)["tokenizer"]
        processor = qwen2vl_processor(tokenizer, model_args)
        template = get_template_and_fix_tokenizer(tokenizer, data_args)
        module = get_dataset(
            template,
            model_args,
            data_args,
            training_args,
            stage=DATASET_STAGE[stage],
            tokenizer=tokenizer,
            processor=processor,
        )
        image_pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
        splits = {"train": module.get("train_dataset"), "eval": module.get("eval_dataset")}
        return {
            "stage": stage,
            "mask_history": data_args.mask_history,
            "template": data_args.template,
            "image_max_pixels": model_args.image_max_pixels,
            "image_min_pixels": model_args.image_min_pixels,
            **{
                split: [
                    summary(example, stage, tokenizer, image_pad, IGNORE_INDEX, template, processor)
                    for example in dataset
                ]
                for split, dataset in splits.items()
                if dataset is not None
            },
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="the bundle's sft.yaml or dpo.yaml")
    parser.add_argument("out", help="where to write the JSON report")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=YAML", help="override one config key (KEY= drops it)"
    )
    parser.add_argument(
        "--and",
        dest="more",
        action="append",
        nargs="+",
        default=[],
        metavar="CONFIG OUT [KEY=YAML ...]",
        help="one more config in the same process (LLaMA-Factory is imported once), with its report and overrides",
    )
    args = parser.parse_args()
    runs = [(args.config, args.out, args.set)] + [(more[0], more[1], more[2:]) for more in args.more]
    for config, out, overrides in runs:
        report = preprocess(config, overrides)
        Path(out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
