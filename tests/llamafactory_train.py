"""Run one LLaMA-Factory training step (SFT or DPO) on an unzipped bundle with its own config, on a tiny random-weight
Qwen2-VL, and report what LLaMA-Factory made of each sample.

Runs inside the LLaMA-Factory virtualenv (``tests/llamafactory_env.py``), from the bundle's folder, as the bundle's
README says to run ``llamafactory-cli train sft.yaml``::

    cd bundle && VENV/bin/python tests/llamafactory_train.py sft.yaml sft.json [dpo.yaml dpo.json ...]

The config is the bundle's own YAML (its ``cutoff_len`` above all), through LLaMA-Factory's argument parser and its
workflow (``run_sft`` / ``run_dpo``: dataset processors, collator, model loading, trainer) for ``max_steps: 1``. What a
real run has and this one replaces: ``model_name_or_path`` points at a random-weight checkpoint with
:mod:`prescoring.tiny`'s tokenizer and dimensions, written here (the config in transformers 4.57's form of mrope);
``output_dir`` a temporary folder; ``bf16`` off (no GPU). The processor is ``tests/llamafactory_labels.py``'s (no
video processor: it needs torchvision), handed to the workflow in place of ``load_tokenizer``'s, which has none.

The report: the training loss and steps, and per preprocessed example (as ``tests/llamafactory_labels.py`` reports
it) its length, its ``<|image_pad|>`` tokens and its labelled runs. A cut sequence shows there (fewer image tokens, a
cut target), and a cut inside a screenshot's tokens fails the step itself: "Image features and image tokens do not
match".
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # prescoring.tiny (no Django), the sibling script
sys.path.insert(0, str(REPO / "tests"))

from llamafactory_labels import (  # noqa: E402 - after the path
    CHECKPOINT_MAX_PIXELS,
    CHECKPOINT_MIN_PIXELS,
    LABEL_COLUMNS,
    qwen2vl_processor,
    read_config,
    summary,
)


def tiny_checkpoint(folder: Path) -> Path:
    """prescoring.tiny's random-weight Qwen2-VL saved by this virtualenv's transformers (4.57), which reads mrope's
    sections from ``rope_scaling`` (5.x from ``rope_parameters``, as prescoring.tiny writes them)."""
    import torch
    from transformers import Qwen2VLForConditionalGeneration, Qwen2VLImageProcessor

    from prescoring.tiny import SIZES, build_config, build_tokenizer

    tokenizer = build_tokenizer()
    config = build_config(tokenizer)
    sections = SIZES["tiny"]["text"]["mrope_section"]
    # 4.57's own reading of a released config's {"type": "mrope", ...}: the default rope with mrope's sections.
    config.text_config.rope_scaling = {"type": "default", "rope_type": "default", "mrope_section": sections}
    config.rope_scaling = config.text_config.rope_scaling
    torch.manual_seed(0)
    Qwen2VLForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    Qwen2VLImageProcessor(min_pixels=CHECKPOINT_MIN_PIXELS, max_pixels=CHECKPOINT_MAX_PIXELS).save_pretrained(folder)
    return folder


def train(config_path: str) -> dict:
    from llamafactory.extras.constants import IGNORE_INDEX
    from llamafactory.hparams import get_train_args
    from llamafactory.model import load_tokenizer
    from llamafactory.train.dpo import workflow as dpo_workflow
    from llamafactory.train.sft import workflow as sft_workflow

    config = read_config(config_path, [])
    stage = config["stage"]
    workflow = {"sft": sft_workflow, "dpo": dpo_workflow}[stage]
    with tempfile.TemporaryDirectory(prefix="llamafactory-train-") as scratch_name:
        scratch = Path(scratch_name)
        args = {
            **config,
            "model_name_or_path": str(tiny_checkpoint(scratch / "checkpoint")),
            "output_dir": str(scratch / "out"),
            "bf16": False,
            "report_to": "none",
            "overwrite_cache": True,
            "max_steps": 1,
            "per_device_train_batch_size": 1,
            "gradient_accumulation_steps": 1,
            "save_strategy": "no",
            "logging_steps": 1,
            "use_cpu": True,
            "preprocessing_num_workers": None,
        }
        args.pop("eval_dataset", None)  # one step of training: no evaluation
        model_args, data_args, training_args, finetuning_args, generating_args = get_train_args(args)

        def tokenizer_with_processor(model_args):
            module = load_tokenizer(model_args)
            module["processor"] = qwen2vl_processor(module["tokenizer"], model_args)
            return module

        seen: dict = {}
        get_dataset = workflow.get_dataset

        def get_dataset_seen(template, *args, **kwargs):
            module = get_dataset(template, *args, **kwargs)
            seen.update(module=module, template=template, kwargs=kwargs)
            return module

        workflow.load_tokenizer = tokenizer_with_processor
        workflow.get_dataset = get_dataset_seen
        losses: list[float] = []

        from transformers import TrainerCallback

        class Losses(TrainerCallback):
            def on_log(self, _args, state, control, logs=None, **kwargs):
                if logs and "loss" in logs:
                    losses.append(float(logs["loss"]))

        runner = workflow.run_sft if stage == "sft" else workflow.run_dpo
        if stage == "sft":
            runner(model_args, data_args, training_args, finetuning_args, generating_args, callbacks=[Losses()])
        else:
            runner(model_args, data_args, training_args, finetuning_args, callbacks=[Losses()])
        tokenizer, processor = seen["kwargs"]["tokenizer"], seen["kwargs"]["processor"]
        image_pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
        dataset = seen["module"]["train_dataset"]
        return {
            "stage": stage,
            "cutoff_len": data_args.cutoff_len,
            "losses": losses,
            "loss_finite": bool(losses) and all(math.isfinite(loss) for loss in losses),
            "train": [
                summary(example, stage, tokenizer, image_pad, IGNORE_INDEX, seen["template"], processor)
                for example in dataset
            ],
            "label_columns": LABEL_COLUMNS[stage],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "runs", nargs="+", metavar="CONFIG OUT", help="pairs: a config of the bundle and where to write its report"
    )
    args = parser.parse_args()
    if len(args.runs) % 2:
        parser.error("give each config its report file")
    # One process for all: LLaMA-Factory imports slowly.
    for config, out in zip(args.runs[::2], args.runs[1::2]):
        Path(out).write_text(json.dumps(train(config), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
