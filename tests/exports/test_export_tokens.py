"""Every bundle names its longest sample in tokens and the limit it set: the manifest's ``tokens`` in each
format, the sample it names found where it says, counted with a checkpoint's tokenizer, else Qwen2's vocabulary (the
``tokens`` extra), else the byte bound above the tokenizer's count; the limit in the LLaMA-Factory configs and the TRL
code."""

from __future__ import annotations

import json
import math
import zipfile

import pytest
import yaml

from annotation.models import Verdict
from exports import services, tokens
from exports.formats import format_names
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

pytestmark = pytest.mark.django_db


def default_counting() -> str:
    """What counts a bundle's text when no tokenizer is set: Qwen2's vocabulary where its package is installed."""
    vocabulary = tokens.qwen2_vocabulary(tokens.QWEN2_RANKS_PACKAGE)
    return tokens.BOUND if vocabulary is None else f"{tokens.QWEN2_VOCABULARY} ({vocabulary.source})"


@pytest.fixture
def without_qwen2_vocabulary(monkeypatch):
    """A studio without the ``tokens`` extra: the package that ships Qwen2's ranks is not found."""
    monkeypatch.setattr(tokens, "QWEN2_RANKS_PACKAGE", "no_package_ships_these_ranks")


@pytest.fixture
def annotated(project, annotator, lead):
    """Two traces answered "error at τ = 3", the second with a longer history reply, so it holds the longest sample."""
    for n, extra in enumerate(("", " " + "and then look at every item of the list " * 8)):
        replies = [*REPLIES]
        replies[1] = f"Thought: Type the query{extra}.\nAction: type(content='display\\n')"
        trace = make_trace(project, replies=replies, external_id=f"t{n}", image_seed=n + 1, size=(640, 400 + 40 * n))
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=3,
            corrected_thought="Click Display.",
            corrected_action="click(start_box='(300,260)')",
            reflection_thought="Wrong panel; go back.",
            reflection_action="hotkey(key='alt left')",
        )
    return project


def export(project, tmp_path, fmt: str, name: str = "") -> tuple[dict, zipfile.ZipFile]:
    out = tmp_path / f"{fmt}{name}.zip"
    services.export_to_path(project=project, user=None, fmt=fmt, options={"validation_fraction": 0}, out=out)
    archive = zipfile.ZipFile(out)
    return json.loads(archive.read("manifest.json")), archive


def sample_at(archive: zipfile.ZipFile, fmt: str, where: dict) -> dict:
    """The record ``where`` (file, row) names, read back from the bundle."""
    data = archive.read(where["file"])
    if fmt in ("parquet", "verl"):
        import io

        import pyarrow.parquet as pq

        return pq.read_table(io.BytesIO(data)).to_pylist()[where["row"]]
    if fmt == "llamafactory":
        return json.loads(data)[where["row"]]
    return json.loads(data.decode().splitlines()[where["row"]])


@pytest.mark.parametrize("fmt", format_names())
def test_every_bundle_names_its_longest_sample_and_the_limit(annotated, tmp_path, fmt, settings):
    settings.EXPORT_SHARD_ANNOTATIONS = 1  # two shards: the longest is the second shard's, in its own file
    manifest, archive = export(annotated, tmp_path, fmt)
    sequence = manifest["tokens"]
    longest = sequence["longest"]
    assert sequence["counted_with"] == default_counting()
    assert sequence["cutoff_len"] == sequence["max_length"] == tokens.trainer_length(longest["tokens"])
    assert sequence["max_length"] >= longest["tokens"] > longest["image_tokens"] > 0
    assert longest["tokens"] == longest["image_tokens"] + longest["text_tokens"]
    assert "of-00002" in longest["file"] and longest["file"] in manifest["files"]
    record = sample_at(archive, fmt, longest)
    trace_key = record["extra_info"]["trace_id"] if fmt == "verl" else record["trace_id"]
    assert (trace_key, longest["annotation_id"]) == (longest["trace_id"], manifest["sources"][1]["annotation_id"])
    # The longest sample's screenshots are the larger trace's: 640×440 at the project's bounds.
    per_image = tokens.image_tokens(
        640, 440, min_pixels=manifest["pixels"]["min_pixels"], max_pixels=manifest["pixels"]["max_pixels"]
    )
    assert longest["image_tokens"] == per_image * longest["images"]
    readme = archive.read("README.md").decode()
    assert f"The longest sample is **{longest['tokens']} tokens**" in readme
    assert f"at least\n**{sequence['max_length']}**" in readme
    if fmt == "llamafactory":
        for config in ("sft.yaml", "dpo.yaml"):
            text = archive.read(config).decode()
            assert f"cutoff_len: {sequence['cutoff_len']}\n" in text
            # Any YAML loader reads the numbers back as numbers (PyYAML read 1e-05 as a string).
            assert isinstance(yaml.safe_load(text)["learning_rate"], float)
    if fmt == "trl":
        assert readme.count(f"max_length={sequence['max_length']}") == 2  # SFTConfig and DPOConfig


def test_the_byte_bound_holds_the_tokenizers_count(annotated, tmp_path, settings, without_qwen2_vocabulary):
    """Without a tokenizer the text is counted in UTF-8 bytes: above the real count, never below; with the model's
    tokenizer (STUDIO_EXPORT_TOKENIZER_DIR) the count is the tokenizer's."""
    pytest.importorskip("transformers")
    from prescoring.tiny import build_tokenizer

    bound, _ = export(annotated, tmp_path, "trl", "-bound")
    folder = tmp_path / "tokenizer"
    tokenizer = build_tokenizer()
    tokenizer.save_pretrained(folder)
    settings.EXPORT_TOKENIZER_DIR = str(folder)
    exact, archive = export(annotated, tmp_path, "trl", "-exact")
    assert exact["tokens"]["counted_with"] == "tokenizer tokenizer"
    assert "byte_bound" in bound["tokens"] and "byte_bound" not in exact["tokens"]  # exact: nothing to estimate
    assert "This limit overstates" not in archive.read("README.md").decode()
    assert exact["tokens"]["longest"]["image_tokens"] == bound["tokens"]["longest"]["image_tokens"]
    assert exact["tokens"]["longest"]["text_tokens"] < bound["tokens"]["longest"]["text_tokens"]

    # The count is the chat template's rendering tokenized: what the processor makes of prompt and completion.
    record = sample_at(archive, "trl", exact["tokens"]["longest"])
    messages = [*record["prompt"], *record["completion"]]
    ids = tokenizer.apply_chat_template(messages, tokenize=True)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    images = ids.count(pad)
    assert exact["tokens"]["longest"]["tokens"] == len(ids) - images + exact["tokens"]["longest"]["image_tokens"]


def test_a_limit_counted_in_bytes_says_how_much_it_overstates_and_how_to_count_exactly(
    annotated, tmp_path, without_qwen2_vocabulary
):
    """Counted in bytes the limit holds the longest sample with room to spare (22,336 where 15,360 holds a 1920×1080
    OSWorld history with Qwen2's tokenizer): the manifest and the README say about how much, and how to count it
    exactly."""
    manifest, archive = export(annotated, tmp_path, "llamafactory")
    sequence = manifest["tokens"]
    longest, bound = sequence["longest"], sequence["byte_bound"]
    low, high = tokens.QWEN2_BYTES_PER_TOKEN
    assert bound["bytes_per_token"] == [low, high] and low < high
    assert bound["text_tokens_about"] == math.ceil(longest["text_tokens"] / low) < longest["text_tokens"]
    assert bound["tokens_about"] == longest["image_tokens"] + bound["text_tokens_about"]
    assert bound["cutoff_len_about"] == tokens.trainer_length(bound["tokens_about"]) <= sequence["cutoff_len"]
    assert bound["overstates_by_about"] == sequence["cutoff_len"] - bound["cutoff_len_about"]
    readme = " ".join(archive.read("README.md").decode().split())
    assert "**This limit overstates** the longest sample" in readme
    assert f"this one is about {bound['overstates_by_about']} tokens" in readme
    assert f"a limit of about {bound['cutoff_len_about']} holds it" in readme
    assert "To count exactly, install the studio's `tokens` extra" in readme
    assert "set `STUDIO_EXPORT_TOKENIZER_DIR` to a folder holding the checkpoint's tokenizer" in readme


def test_a_bundle_is_counted_exactly_with_qwen2s_vocabulary_by_default(annotated, tmp_path):
    """With the ``tokens`` extra and no tokenizer set, the text is Qwen2's count: the chat template's rendering of
    the longest record (prompt and completion as the trainer's processor renders them) through Qwen2's vocabulary,
    no byte bound, and the README says which."""
    pytest.importorskip("transformers")
    from prescoring.tiny import build_tokenizer

    vocabulary = tokens.qwen2_vocabulary(tokens.QWEN2_RANKS_PACKAGE)
    if vocabulary is None:
        pytest.skip(f"{tokens.QWEN2_RANKS_PACKAGE} (the tokens extra) is not installed")
    manifest, archive = export(annotated, tmp_path, "trl")
    sequence = manifest["tokens"]
    assert sequence["counted_with"] == f"qwen2-vocabulary ({vocabulary.source})" == default_counting()
    assert "byte_bound" not in sequence
    readme = " ".join(archive.read("README.md").decode().split())
    assert f"text is counted with Qwen2's vocabulary ({vocabulary.source}:" in readme
    assert "This limit overstates" not in readme

    longest = sequence["longest"]
    record = sample_at(archive, "trl", longest)
    rendered = build_tokenizer().apply_chat_template([*record["prompt"], *record["completion"]], tokenize=False)
    pads = rendered.count("<|image_pad|>")
    assert pads == longest["images"] > 0
    assert longest["text_tokens"] == vocabulary.count(rendered) - pads
    assert longest["tokens"] == longest["text_tokens"] + longest["image_tokens"]
    # Far below the bytes of the same text: the bound's overstatement, gone.
    assert 3 * longest["text_tokens"] < len(rendered.encode("utf-8"))


def test_a_tokenizer_that_does_not_load_falls_back_to_the_next_way_of_counting(
    annotated, tmp_path, settings, monkeypatch
):
    settings.EXPORT_TOKENIZER_DIR = str(tmp_path / "no-such-checkpoint")
    manifest, _ = export(annotated, tmp_path, "llamafactory")
    assert manifest["tokens"]["counted_with"] == default_counting()
    monkeypatch.setattr(tokens, "QWEN2_RANKS_PACKAGE", "no_package_ships_these_ranks")
    manifest, _ = export(annotated, tmp_path, "llamafactory", "-bare")
    assert manifest["tokens"]["counted_with"] == tokens.BOUND
