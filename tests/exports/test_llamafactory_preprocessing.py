"""LLaMA-Factory's own data preprocessing, run on a real LLaMA-Factory bundle, puts loss on the target step only.

The bundle's sharegpt conversations hold the history replies as assistant turns (in post-reflection samples that
includes the original wrong step τ). LLaMA-Factory labels every assistant turn unless ``mask_history: true``, which
the bundle's ``sft.yaml`` sets. Here the bundle's own configs go through llamafactory's argument parser, template
(``qwen2_vl``), multimodal plugin and dataset processors, in a virtualenv of their own (``tests/llamafactory_env.py``
says why it cannot be the project's), via ``tests/llamafactory_labels.py``; the labels that come out must cover the
last assistant turn and nothing else. The control, the same config with ``mask_history: false``, labels every
history reply, so the check can fail.

A machine without a package index cannot build the virtualenv: the test then fails, unless
``STUDIO_SKIP_LLAMAFACTORY=1`` says to skip it. Select it alone with ``-m llamafactory``.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile

import pytest

from annotation.models import Verdict
from exports import services
from tests.conftest import REPO
from tests.factories import split_seed_with_both_splits
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

pytestmark = [pytest.mark.django_db, pytest.mark.llamafactory]

END_OF_TURN = "<|im_end|>\n"  # what LLaMA-Factory's qwen2_vl template appends to every assistant turn
WRONG_STEP = "Thought: Open the wrong item."  # REPLIES[2], the recorded step τ=3 of every trace below


def counted_with_llamafactorys_tokenizer(tmp_path, settings) -> None:
    """Export with the tokenizer LLaMA-Factory tokenizes with here (``tests/llamafactory_labels.py``:
    ``prescoring.tiny``'s small BPE, which makes about two tokens of what Qwen2's vocabulary makes one): the bundle's
    ``cutoff_len`` then holds LLaMA-Factory's own count, as it holds Qwen2-VL's with the studio's default counting."""
    from prescoring.tiny import build_tokenizer

    build_tokenizer().save_pretrained(tmp_path / "llamafactory-tokenizer")
    settings.EXPORT_TOKENIZER_DIR = str(tmp_path / "llamafactory-tokenizer")


@pytest.fixture
def bundle(project, annotator, lead, tmp_path, settings):
    """Four annotated traces, error at τ=3: error-correction and post-reflection samples with two and three
    history replies, and DPO pairs; split into train and validation, so the configs name an ``eval_dataset``; in
    four shards, so a split's samples lie in several files that the configs list (LLaMA-Factory concatenates them)."""
    settings.EXPORT_SHARD_ANNOTATIONS = 1
    counted_with_llamafactorys_tokenizer(tmp_path, settings)
    for n in range(4):
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
    services.export_to_path(
        project=project,
        user=None,
        fmt="llamafactory",
        options={"validation_fraction": 0.5, "split_seed": split_seed_with_both_splits(project, 0.5)},
        out=out,
    )
    folder = tmp_path / "bundle"
    with zipfile.ZipFile(out) as archive:
        archive.extractall(folder)
    return folder


def preprocess_runs(python, bundle, *runs: tuple[str, ...]) -> list[dict]:
    """LLaMA-Factory's preprocessing of the bundle, run from the bundle's folder, once per run: a config of the
    bundle and ``KEY=YAML`` overrides (``KEY=`` drops the key). One process for all (LLaMA-Factory imports slowly)."""
    command = [str(python), str(REPO / "tests" / "llamafactory_labels.py")]
    reports = []
    for number, (config, *overrides) in enumerate(runs):
        report = bundle.parent / f"labels-{bundle.name}-{number}.json"
        reports.append(report)
        if number == 0:
            command += [config, str(report), *(arg for override in overrides for arg in ("--set", override))]
        else:
            command += ["--and", config, str(report), *overrides]
    environment = {**os.environ, "HF_DATASETS_CACHE": str(bundle.parent / "hf-cache"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=bundle, capture_output=True, text=True, timeout=600, env=environment)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    return [json.loads(report.read_text()) for report in reports]


def preprocess(python, bundle, config: str, *overrides: str) -> dict:
    """LLaMA-Factory's preprocessing of the bundle with one of its configs, run from the bundle's folder."""
    [report] = preprocess_runs(python, bundle, (config, *overrides))
    return report


def assistant_turns(record: dict) -> list[str]:
    return [turn["value"] for turn in record["conversations"] if turn["from"] == "gpt"]


def records_and_examples(bundle, stage: str, report: dict) -> list[tuple[dict, dict]]:
    """Each bundle record with what LLaMA-Factory made of it, train and validation; it must have dropped none."""
    pairs = []
    for split, preprocessed in (("train", "train"), ("validation", "eval")):
        files = sorted((bundle / "data" / stage).glob(f"{split}-*-of-*.json"))
        records = [record for file in files for record in json.loads(file.read_text())]
        assert len(report[preprocessed]) == len(records), f"LLaMA-Factory kept every {stage} {split} sample"
        pairs += zip(records, report[preprocessed])
    return pairs


def test_sft_labels_cover_only_the_final_assistant_turn(llamafactory_python, bundle):
    assert len(list((bundle / "data" / "sft").glob("*-of-*.json"))) > 2  # sharded: more than one file per split
    masked, unmasked = preprocess_runs(llamafactory_python, bundle, ("sft.yaml",), ("sft.yaml", "mask_history=false"))
    pairs = records_and_examples(bundle, "sft", masked)
    assert {record["kind"] for record, _ in pairs} == {"error_correction", "post_reflection"}
    assert all(len(assistant_turns(record)) >= 3 for record, _ in pairs), "samples with history replies"
    for record, example in pairs:
        assert example["image_pad_tokens"] > 0, "the screenshots reached Qwen2-VL's processor"
        assert [run["text"] for run in example["labels"]] == [assistant_turns(record)[-1] + END_OF_TURN]
        assert example["labels"][0]["end"] == example["length"]
    assert masked["mask_history"] is True and masked["template"] == "qwen2_vl"

    # The control: the same bundle without mask_history trains on every history reply, the wrong step τ included.
    assert unmasked["mask_history"] is False
    for record, example in records_and_examples(bundle, "sft", unmasked):
        labelled = [run["text"] for run in example["labels"]]
        assert labelled == [turn + END_OF_TURN for turn in assistant_turns(record)]
        if record["kind"] == "post_reflection":
            assert labelled[-2].startswith(WRONG_STEP)


def test_dpo_labels_cover_only_the_chosen_and_rejected_step(llamafactory_python, bundle):
    report = preprocess(llamafactory_python, bundle, "dpo.yaml")
    assert report["stage"] == "dpo" and report["template"] == "qwen2_vl"
    pairs = records_and_examples(bundle, "dpo", report)
    assert all(len(assistant_turns(record)) >= 2 for record, _ in pairs), "pairs with history replies"
    for record, example in pairs:
        assert example["image_pad_tokens"] > 0
        [chosen] = example["chosen_labels"]
        [rejected] = example["rejected_labels"]
        assert chosen["text"] == record["chosen"]["value"] + END_OF_TURN and chosen["end"] == example["length"]
        assert rejected["text"] == record["rejected"]["value"] + END_OF_TURN
        assert rejected["end"] == example["rejected_length"]
        assert rejected["text"].startswith(WRONG_STEP) and chosen["start"] == rejected["start"]
