"""Every code block of every bundle README runs as it is: on bundles with and without a
validation split, for each format. Python blocks are executed from the unzipped bundle's folder (TRL's trainers are
built with a tiny random Qwen2-VL standing for the reader's checkpoint); YAML blocks must parse and name datasets
that `dataset_info.json` defines."""

from __future__ import annotations

import copy
import json
import re
import zipfile

import PIL.Image
import pytest
import yaml

from annotation.models import Verdict
from exports import services
from exports.formats import format_names
from tests.exports.test_export_trl import tiny_qwen2vl
from tests.factories import split_seed_with_both_splits
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

pytestmark = pytest.mark.django_db

BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


@pytest.fixture
def annotated(project, annotator, lead):
    for n in range(4):
        trace = make_trace(project, replies=REPLIES, external_id=f"r{n}", image_seed=n + 1)
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
    return project


def bundle(project, tmp_path, fmt: str, validation: float):
    out = tmp_path / f"{fmt}-{validation}.zip"
    seed = split_seed_with_both_splits(project, validation) if validation else 3
    services.export_to_path(
        project=project, user=None, fmt=fmt, options={"validation_fraction": validation, "split_seed": seed}, out=out
    )
    folder = tmp_path / f"{fmt}-{validation}"
    with zipfile.ZipFile(out) as archive:
        archive.extractall(folder)
    return folder


@pytest.mark.parametrize("fmt", format_names())
@pytest.mark.parametrize("validation", [0.0, 0.5])
def test_every_readme_block_runs(annotated, tmp_path, monkeypatch, fmt, validation):
    folder = bundle(annotated, tmp_path, fmt, validation)
    files = set(json.loads((folder / "manifest.json").read_text())["files"])
    assert any("validation" in name for name in files) == (validation > 0)
    blocks = BLOCK.findall((folder / "README.md").read_text())
    assert blocks or fmt == "llamafactory", "the README shows how to load the bundle"
    monkeypatch.chdir(folder)  # as the README says: run from the bundle's folder
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    namespace: dict = {}
    for language, code in blocks:
        if language == "python":
            if "processor" in code and "processor" not in namespace:
                # The reader's checkpoint: a tiny random Qwen2-VL, its image processor saved where `checkpoint` says.
                corpus = [
                    json.dumps(json.loads(line))
                    for name in files
                    if name.endswith(".jsonl")
                    for line in (folder / name).read_text().splitlines()
                ]
                model, processor = tiny_qwen2vl(corpus)
                processor.image_processor.save_pretrained(tmp_path / "checkpoint")
                namespace.update(
                    model=model,
                    processor=processor,
                    sft_model=copy.deepcopy(model),
                    checkpoint=str(tmp_path / "checkpoint"),
                )
            exec(compile(code, f"README.md ({fmt})", "exec"), namespace)  # noqa: S102 - the README's own code
        elif language == "yaml" and fmt == "verl":
            # verl's overrides: every file they name is in the bundle, and the reward is the shipped one
            config = yaml.safe_load(code)
            named = [
                *config["data"]["train_files"],
                *config["data"].get("val_files", []),
                config["custom_reward_function"]["path"],
            ]
            assert all(name in files for name in named)
            assert ("val_files" in config["data"]) == (validation > 0) and config["data"]["image_key"] == "images"
            assert config["custom_reward_function"]["name"] == "compute_score"
        elif language == "yaml":
            config = yaml.safe_load(code)
            info = json.loads((folder / "dataset_info.json").read_text())
            assert config["dataset"] in info and config["template"] == "qwen2_vl"
        else:
            pytest.fail(f"a {language} block nobody checks")
    if fmt in ("trl", "parquet"):
        assert len(namespace["sft"]["train"]) > 0 and ("validation" in namespace["sft"]) == (validation > 0)
    if fmt == "parquet":
        # The README's transform gives each row its screenshots from images.parquet, as the TRL format holds them.
        trl = [
            json.loads(line)
            for line in (bundle(annotated, tmp_path, "trl", validation) / "data/sft/train-00000-of-00001.jsonl")
            .read_text()
            .splitlines()
        ]
        for dataset in ("sft", "dpo"):
            row = namespace[dataset]["train"][0]
            assert row["images"] and all(isinstance(image, PIL.Image.Image) for image in row["images"])
        for row, record in zip(namespace["sft"]["train"], trl):
            assert [image.tobytes() for image in row["images"]] == [
                PIL.Image.open(tmp_path / f"trl-{validation}" / path).tobytes() for path in record["images"]
            ]
    if fmt == "prm":
        assert ("validation" in namespace["prm"]) == (validation > 0)
        images = sum(1 for m in namespace["messages"] for c in m["content"] if c["type"] == "image")
        assert images == len(namespace["record"]["labels"]) > 0
    if fmt == "verl":
        assert ("validation" in namespace["rl"]) == (validation > 0) and namespace["truth"]["action"]
    if fmt == "trl":
        assert namespace["sft_trainer"].train_dataset is not None and namespace["dpo_trainer"].ref_model is not None
        # The README gave the processor the bundle's image bounds, and the trainers use that processor.
        pixels = json.loads((folder / "manifest.json").read_text())["pixels"]
        size = namespace["sft_trainer"].processing_class.image_processor.size
        assert (size["shortest_edge"], size["longest_edge"]) == (pixels["min_pixels"], pixels["max_pixels"])


def test_llamafactory_configs_train_only_the_target_with_the_projects_pixels(annotated, tmp_path):
    folder = bundle(annotated, tmp_path, "llamafactory", 0.5)
    manifest = json.loads((folder / "manifest.json").read_text())
    info = json.loads((folder / "dataset_info.json").read_text())
    sft, dpo = (yaml.safe_load((folder / f"{stage}.yaml").read_text()) for stage in ("sft", "dpo"))
    assert {"sft.yaml", "dpo.yaml"} <= set(manifest["files"])
    for config, stage in ((sft, "sft"), (dpo, "dpo")):
        assert config["stage"] == stage and config["template"] == "qwen2_vl"
        assert all(name in info for name in config["dataset"].split(",") + config["eval_dataset"].split(","))
        assert config["image_max_pixels"] == manifest["pixels"]["max_pixels"] == annotated.max_pixels
        assert config["image_min_pixels"] == manifest["pixels"]["min_pixels"]
    assert sft["mask_history"] is True and "mask_history" not in dpo  # LLaMA-Factory refuses it outside SFT
    readme = (folder / "README.md").read_text()
    assert "mask_history: true" in readme and f"max_pixels={annotated.max_pixels}" in readme
