"""One deterministic archive per export: the same inputs give a byte-identical zip.

Fixed timestamps, fixed permissions, entries sorted by name, images stored as they are (never
recompressed), text deflated. Files are streamed into the archive in chunks, so memory does not
grow with the bundle. A data file may come deflated already (``file_deflate``, in an export's shard, on any
worker): the archive takes its bytes as they are, the same bytes zipfile's own compression writes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from exports import tokens
from exports.writers import IMAGE_TABLE, data_file_glob, data_file_parts
from traces import prompting

FIXED_DATE = (1980, 1, 1, 0, 0, 0)
CHUNK = 1024 * 1024
MANIFEST_PIECES = 4096  # manifest_write's pieces a write


@dataclass(frozen=True)
class Deflated:
    """What a member's header says of data deflated before the archive is written (``file_deflate``)."""

    crc32: int
    compressed_size: int


@dataclass(frozen=True)
class Entry:
    """An archive member of ``size`` bytes: ``open`` yields a binary file object; ``compress`` deflates it. With
    ``deflated``, ``open`` yields the member's deflated stream instead (``file_deflate``), written as it is."""

    name: str
    size: int
    open: Callable[[], IO[bytes]]
    compress: bool
    deflated: Deflated | None = None


def _zip_deflater():
    # zipfile's own compressor for ZIP_DEFLATED at its default level: a raw deflate stream (no zlib header).
    # zlib's output does not depend on how the input is cut into chunks, so the bytes are zipfile's.
    return zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)


def file_deflate(source: Path, target: Path) -> tuple[str, Deflated]:
    """Deflate ``source`` into ``target`` as the archive would deflate it; returns the source's sha256 and what the
    member's header needs. One read of the file: an export's shard does this beside its other work, so the
    assembly, which runs alone, copies compressed bytes instead of compressing every data file itself."""
    digest, crc, compressor, written = hashlib.sha256(), 0, _zip_deflater(), 0
    with open(source, "rb") as handle, open(target, "wb") as out:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            crc = zlib.crc32(chunk, crc)
            written += out.write(compressor.compress(chunk))
        written += out.write(compressor.flush())
    return digest.hexdigest(), Deflated(crc32=crc, compressed_size=written)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def local_entry(path: Path, name: str) -> Entry:
    return Entry(name, path.stat().st_size, lambda: open(path, "rb"), compress=True)


def write_archive(target: Path, entries: Iterable[Entry], *, on_entry: Callable[[int], None] | None = None) -> None:
    """Write a zip of ``entries`` (sorted by name here) to ``target``."""
    ordered = sorted(entries, key=lambda e: e.name)
    names = [e.name for e in ordered]
    if len(set(names)) != len(names):
        raise ValueError("duplicate archive entry names")
    with zipfile.ZipFile(target, "w", allowZip64=True) as archive:
        for number, entry in enumerate(ordered, start=1):
            info = zipfile.ZipInfo(entry.name, date_time=FIXED_DATE)
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED if entry.compress else zipfile.ZIP_STORED
            info.file_size = entry.size
            with entry.open() as source, archive.open(info, "w", force_zip64=entry.size > 2**31) as sink:
                if entry.deflated is None:
                    shutil.copyfileobj(source, sink, CHUNK)
                else:
                    _copy_deflated(source, sink, entry)
            if on_entry:
                on_entry(number)


class _AsItIs:
    """A compressor that passes deflated bytes through (``_copy_deflated``)."""

    def compress(self, data):
        return data

    def flush(self) -> bytes:
        return b""


def _copy_deflated(source, sink, entry: Entry) -> None:
    """Write ``entry``'s deflated stream into the member ``sink`` that ``ZipFile.open(info, "w")`` opened as deflated.
    zipfile has no public way to add data compressed elsewhere: its writer's compressor is swapped for one that
    passes the bytes through, and the checksum and size it counted (of the compressed bytes) are set to the
    uncompressed file's before the member is closed; the member's local header, sizes and the central directory
    are then zipfile's own. tests/exports/test_export_bundle.py compares the bytes with zipfile compressing the same files."""
    assert entry.deflated is not None
    sink._compressor = _AsItIs()
    shutil.copyfileobj(source, sink, CHUNK)
    if sink._compress_size != entry.deflated.compressed_size:
        raise ValueError(
            f"{entry.name}: {sink._compress_size} deflated bytes, {entry.deflated.compressed_size} expected"
        )
    sink._crc, sink._file_size = entry.deflated.crc32, entry.size


class Rows(list):
    """A JSON array whose items are made as ``manifest_write`` writes them (``row(item)`` for each of ``items``), so
    a million sources are never a million dicts at once. For ``manifest_write`` alone: json's Python encoder, the
    one ``iterencode`` uses, iterates a list; the C one (``json.dumps`` without indent) would write ``[]``."""

    def __init__(self, items: Sequence, row: Callable[[Any], Any]) -> None:
        super().__init__()
        self.items, self.row = items, row

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator:
        return map(self.row, self.items)


def manifest_write(path: Path, manifest: dict) -> None:
    """Write ``manifest`` as the bundle's ``manifest.json``, streamed: its sources are never one string (or, given as
    ``Rows``, a list of dicts)."""
    encoder = json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False)
    with open(path, "w", encoding="utf-8") as out:
        # The encoder yields a piece a key, value or bracket: written a few thousand at a time, not one call each.
        pieces: list[str] = []
        for chunk in encoder.iterencode(manifest):
            pieces.append(chunk)
            if len(pieces) == MANIFEST_PIECES:
                out.write("".join(pieces))
                pieces.clear()
        out.write("".join(pieces) + "\n")


def _splits(data_files: list[str], stem: str, suffix: str) -> dict[str, str]:
    """The splits of one dataset that the bundle really holds (a small export may have no validation file), each as
    the pattern of its shard files (``data/sft/train-*.jsonl``)."""
    held = {data_file_parts(name) for name in data_files if name.endswith(f".{suffix}")}
    return {
        split: data_file_glob(stem, split, f".{suffix}") for split in ("train", "validation") if (stem, split) in held
    }


def dataset_card_header(data_files: list[str]) -> str:
    """The dataset card's YAML header: one config per dataset (``sft``, ``dpo``, ``prm``, ``rl``) naming its split
    files, so ``load_dataset(<bundle folder>, "dpo")`` reads the bundle as it is (the images and other files
    beside the data are not taken for data)."""
    configs: dict[str, dict[str, str]] = {}
    for name in data_files:
        parts = data_file_parts(name)
        if parts:
            suffix = "." + name.rsplit(".", 1)[1]
            configs.setdefault(parts[0], {})[parts[1]] = data_file_glob(parts[0], parts[1], suffix)
    if not configs:
        return ""
    lines = ["---", "configs:"]
    for dataset in sorted(configs):
        lines += [f"- config_name: {dataset}", "  data_files:"]
        for split in ("train", "validation"):
            if split in configs[dataset]:
                lines += [f"  - split: {split}", f'    path: "{configs[dataset][split]}"']
    return "\n".join([*lines, "---", ""]) + "\n"


def _load_lines(data_files: list[str], suffix: str, stems: tuple[str, ...] = ("sft", "dpo")) -> str:
    loader = "json" if suffix == "jsonl" else suffix
    lines = []
    for stem in stems:
        splits = _splits(data_files, stem, suffix)
        if splits:
            lines.append(f'{stem} = load_dataset("{loader}", data_files={splits!r})')
    return "\n".join(lines) or "# (this bundle holds no samples)"


# The name and transformers class of each model family a bundle names (manifest.json → pixels → model_family).
MODEL_FAMILIES = {
    "qwen2_vl": ("Qwen2-VL", "Qwen2VLForConditionalGeneration"),
    "qwen2_5_vl": ("Qwen2.5-VL", "Qwen2_5_VLForConditionalGeneration"),
}


def _processor_block(pixels: dict | None) -> str:
    """The code that gives the reader's processor the bundle's image bounds (tests/exports/test_pixel_fidelity.py runs it and
    checks where the trained points land)."""
    if not pixels:
        return ""
    return f""", first give the processor the image bounds the labels assume (`manifest.json` → `pixels`), so every
screenshot is trained at the size of `smart_resize` (factor {pixels["resize"]["factor"]}) within them:
```python
from transformers import AutoImageProcessor
processor.image_processor = AutoImageProcessor.from_pretrained(
    checkpoint, min_pixels={pixels["min_pixels"]}, max_pixels={pixels["max_pixels"]}
)
```
(Qwen's model cards pass the same bounds when they load the processor:
`AutoProcessor.from_pretrained(checkpoint, min_pixels=…, max_pixels=…)`.) Then build the trainers:"""


def trl_section(data_files: list[str], pixels: dict | None = None, sequence: dict | None = None) -> str:
    """The TRL example, written for the files this bundle holds: every line runs as it is (a test executes it)."""
    trainers = []
    max_length = (sequence or {}).get("max_length")
    if _splits(data_files, "sft", "jsonl"):
        trainers.append(
            f'sft_trainer = SFTTrainer(model=model, args=SFTConfig(output_dir="out-sft", max_length={max_length}, bf16=bf16),\n'
            '                         train_dataset=sft["train"], processing_class=processor)'
        )
    if _splits(data_files, "dpo", "jsonl"):
        trainers.append(
            "dpo_trainer = DPOTrainer(model=model, ref_model=sft_model,\n"
            f'                         args=DPOConfig(output_dir="out-dpo", max_length={max_length}, bf16=bf16),\n'
            '                         train_dataset=dpo["train"], processing_class=processor)'
        )
    trainer_block = "\n".join(trainers) or "# (this bundle holds no samples)"
    family, model_class = MODEL_FAMILIES[(pixels or {}).get("model_family", "qwen2_vl")]
    return f"""## Load in TRL
Unzip the bundle, then run from its folder (image paths are relative to it):
```python
from datasets import load_dataset
{_load_lines(data_files, "jsonl")}
```
Then, with `checkpoint` your {family} checkpoint (a folder or a hub name), `model` loaded from it
(`{model_class}.from_pretrained(checkpoint)`), `processor` = `AutoProcessor.from_pretrained(checkpoint)` and
`sft_model` the reference model for DPO (usually the SFT result){_processor_block(pixels) or ":"}
```python
import torch
from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer
bf16 = torch.cuda.is_available()  # bf16 on a GPU, as UI-TARS trains; float32 on a CPU
{trainer_block}
```
`max_length` holds this bundle's longest sample (see "Sequence length" below; TRL's default, 1024, cuts inside the
screenshots' tokens). SFT records are prompt/completion, so the loss falls on the target step only (completion-only loss). Each record's
`images` are paths relative to the bundle root; their number equals the `{{"type": "image"}}` placeholders. Extra
columns `kind`, `trace_id`, `annotation_id` say where a sample comes from.
"""


# What TRL does with a stepwise-supervision dataset, as far as this bundle is concerned (README and docs/formats.md).
TRL_PRM_NOTE = """TRL's stepwise-supervision dataset type is **text only**. Its one consumer, `PRMTrainer`
(`trl.experimental.prm`), tokenizes `prompt` and each entry of `completions` as plain strings with a tokenizer,
appends `step_separator` (default `"\\n"`) to every step, puts `labels[k]` on the last token of step k (every other
token -100) for an `AutoModelForTokenClassification`, and removes every other column, `images` included: this bundle
loads there as it is, and the model then judges each step without seeing its screen. TRL removed `PRMTrainer`
in September 2026 (pull request #7133, with the stepwise type's documentation); axolotl pins TRL 1.13.0 for it, and
TRL 1.16.0 has no `trl.experimental.prm`. A **vision** PRM needs what TRL never had: each step's screenshot placed
before its reply in one multimodal sequence (the interleaved messages below, through your model's chat template and
processor with the pixel bounds below), and a head that reads a score at the last token of each assistant turn
(labels there, -100 elsewhere)."""


def parquet_section(data_files: list[str]) -> str:
    """How to load a ``parquet`` bundle: the data files, and each row's screenshots from ``images.parquet``, where
    every screenshot is stored once (a row's ``images`` names them by sha256)."""
    loads = _load_lines(data_files, "parquet")
    if IMAGE_TABLE not in data_files:
        return f"""## Load with datasets (and TRL)
```python
from datasets import load_dataset
{loads}
```
"""
    stems = [stem for stem in ("sft", "dpo") if _splits(data_files, stem, "parquet")]
    transforms = "\n".join(f"{stem} = {stem}.with_transform(with_images)" for stem in stems)
    return f"""## Load with datasets (and TRL)
Each screenshot is stored once, in `{IMAGE_TABLE}` (`sha256`, `image`); a row's `images` lists the sha256 of its
screenshots, in the order of the prompt's image slots. The transform below gives each row its images as the TRL
format has them (a list of `Image`, decoded when a row is read; nothing is copied):
```python
from datasets import load_dataset
{loads}
screenshots = load_dataset("parquet", data_files="{IMAGE_TABLE}", split="train")
row_of = {{sha: row for row, sha in enumerate(screenshots["sha256"])}}


def with_images(batch):
    batch["images"] = [[screenshots[row_of[sha]]["image"] for sha in shas] for shas in batch["images"]]
    return batch


{transforms}
```
Columns as in the TRL format.
"""


def prm_section(data_files: list[str]) -> str:
    return f"""## Load the process labels
Unzip the bundle, then run from its folder (image paths are relative to it):
```python
from datasets import load_dataset
{_load_lines(data_files, "jsonl", ("prm",))}
```
One record per accepted trace, TRL's stepwise-supervision layout: `prompt` (the user turn of the UI-TARS prompt, the
project's template filled with the instruction), `completions` (step k's reply as recorded, canonical, in the
project's convention: the same text the history turns of every prompt carry), `labels` (`true`: correct, `false`: the
first error τ). A trace answered "error at τ" gives steps 1..τ, the last one `false`; a trace answered "no error" gives
every step, all `true`. `images[k]` is o_k, the screenshot step k acted on (every step's, whatever the history window);
`system` is the system prompt; `kind`, `trace_id`, `annotation_id`, `annotation_version` say where a record comes
from.

{TRL_PRM_NOTE}

{_prm_example(data_files)}
"""


def _prm_example(data_files: list[str]) -> str:
    if not _splits(data_files, "prm", "jsonl"):
        return ""
    return """The interleaved messages of one record, for a vision PRM (any Qwen2-VL chat template takes them):
```python
from PIL import Image

record = next(iter(prm.values()))[0]
messages = [
    {"role": "system", "content": [{"type": "text", "text": record["system"]}]},
    {"role": "user", "content": [{"type": "text", "text": record["prompt"]}]},
]
for path, reply in zip(record["images"], record["completions"]):
    messages.append({"role": "user", "content": [{"type": "image", "image": Image.open(path)}]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": reply}]})
# a vision PRM scores the last token of assistant turn k against record["labels"][k]
```
"""


def verl_section(data_files: list[str], reward: dict | None) -> str:
    reward = reward or {}
    splits = _splits(data_files, "rl", "parquet")
    files = "\n".join(
        f"  {'train' if split == 'train' else 'val'}_files: {json.dumps(_files_of(data_files, 'rl', split))}"
        for split in splits
    )
    return f"""## Train with verl
One row per corrected step τ and per post-reflection step τ+1 (`data_source` `trace_studio/error_correction` or
`trace_studio/post_reflection`, so verl reports each apart), verl's RL dataset layout: `prompt` is the chat of the
one prompt builder (the same messages the SFT bundles train on) with each image written `<image>` in place, in the
order of `images`; `images` are embedded structs (`bytes`, `path`, `min_pixels`, `max_pixels`: verl hands an image
dict's keys to qwen_vl_utils' `fetch_image`, so screenshots are resized within the project's bounds); `ability` is
`gui_agent`; `reward_model` is `{{"style": "rule", "ground_truth": …}}` with the annotated action (`action`, canonical,
in the project's convention; `thought`), the screen it acts on (`width`, `height`, `max_pixels`,
`coordinate_convention`), `radius_px` and `box` (the target element's box `[x1, y1, x2, y2]` in the project's
convention when the annotator drew one, else null); `extra_info` holds `split`, `index`, `kind`, `trace_id`, `step` (τ or τ+1),
`annotation_id`, `annotation_version`, `answer` (the annotated reply, `Thought: … Action: …`) and `recorded_reply` (the
recorded wrong step, for τ rows).
```python
from datasets import load_dataset
{_load_lines(data_files, "parquet", ("rl",))}
```
The reward is `{reward.get("module", "uitars_reward.py")}` (`compute_score`, verl's custom reward signature), plain
Python that reads replies with `{reward.get("grammar", "uitars_actions.py")}`, a byte-for-byte copy of the project's
one action grammar, loaded from beside it. A reply scores 0 when it does not parse; otherwise each annotated action
is paired with the reply's action in order: another action type scores 0, the same type
`(1 + matched arguments) / (1 + arguments)`, where the target point matches inside the target element's `box` when
the row has one, and any other point (or the target point of a row without a box) within `radius_px` =
{reward.get("radius_px")} screenshot pixels of the annotated one (both mapped onto the screenshot by the grammar from
the project's convention; {reward.get("rows_with_box", 0)} of this bundle's rows have a box), a
text (`content`) matches character for character (a trailing `\\n` submits), keys match in order (case aside) and a
direction exactly; the sum is divided by the larger action count. The annotated reply scores 1. Rows whose recorded
wrong step scores 1 too (the reward cannot tell it from the correction, e.g. a corrected point within the radius of
the recorded one) are listed in `manifest.json` → `reward.recorded_step_scores_1`: {len(reward.get("recorded_step_scores_1", []))} in this bundle.
{_reward_example(splits)}verl overrides (`python -m verl.trainer.main_ppo` with `key=value` for each leaf, run from the bundle's folder). The
longest prompt holds {reward.get("max_image_tokens", 0)} image tokens at these pixel bounds, plus its text: set
`max_prompt_length` above both, or verl filters the rows out.
```yaml
data:
{files or "  # (this bundle holds no rows)"}
  prompt_key: prompt
  image_key: images
  max_prompt_length: {_prompt_budget(reward.get("max_image_tokens", 0))}
  filter_overlong_prompts: true
custom_reward_function:
  path: {reward.get("module", "uitars_reward.py")}
  name: compute_score
```
`reward_kwargs` may pass `radius_px` to score with another radius.
"""


def _files_of(data_files: list[str], dataset: str, split: str) -> list[str]:
    """Every shard file of one dataset and split, in order (verl takes a list of files)."""
    return [name for name in data_files if data_file_parts(name) == (dataset, split)]


def _reward_example(splits: dict[str, str]) -> str:
    if not splits:
        return ""
    return """```python
import importlib.util

spec = importlib.util.spec_from_file_location("uitars_reward", "uitars_reward.py")
reward = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reward)
for rows in rl.values():
    for row in rows:
        truth = row["reward_model"]["ground_truth"]
        assert reward.compute_score(row["data_source"], row["extra_info"]["answer"], truth) == 1.0
```
"""


def _prompt_budget(image_tokens: int) -> int:
    # Image tokens plus room for the system prompt, the action space, the instruction and the history replies.
    return max(4096, (image_tokens + 4096 + 1023) // 1024 * 1024)


BOUNDS_GO_DEFAULT = "LLaMA-Factory (`image_min_pixels`, `image_max_pixels`)"


# What a point means in each coordinate convention, for the README (traces/grammar.py converts).
POINT_MEANING = {
    "relative-1000": "0–1000 on each axis of the screenshot: `x_screen = x / 1000 × width`",
    "smart-resize-pixels": "pixels of the screenshot after `smart_resize`: `x_screen = x / w_resized × width`",
    "screen-pixels": "pixels of the screenshot as stored",
}


def _budget_words(pixels: dict) -> str:
    budget = pixels.get("history_budget") or {}
    if not budget.get("full_images"):
        return ""
    return (
        f", under an image budget: the last {budget['full_images']} screenshots of a prompt at these bounds, older ones "
        f"stored already resized to their `smart_resize` size at `max_pixels={budget['older_max_pixels']}` (named "
        "`images/<sha256>-<width>x<height>.png`; the processor leaves them as they are), "
        + _budget_points_words(pixels["coordinate_convention"])
    )


def _budget_points_words(convention: str) -> str:
    """Where a history action's points lie when its screenshot is sent reduced (traces.prompting.rescale_action)."""
    if convention in prompting.RESCALED_CONVENTIONS:
        return f"each history action's points in the size of its screenshot as sent ({convention})"
    return f"every point in {convention} as on the screen, whatever size its screenshot is sent at"


def _pixels_section(pixels: dict | None, where: str = BOUNDS_GO_DEFAULT) -> str:
    """``where``: besides the Qwen2-VL processor, where a trainer of the format takes the pixel bounds."""
    if not pixels:
        return ""
    resize = pixels["resize"]
    factor = resize["factor"]
    family = MODEL_FAMILIES.get(pixels["model_family"], (pixels["model_family"], ""))[0]
    return f"""## Pixels: what the trainer must match
Model family {family} (`{pixels["model_family"]}`). Points are in `{pixels["coordinate_convention"]}`:
{POINT_MEANING.get(pixels["coordinate_convention"], pixels["coordinate_convention"])}.
Screenshots must reach the model resized by `{resize["rule"]}` within `min_pixels={pixels["min_pixels"]}` and
`max_pixels={pixels["max_pixels"]}`: each side rounded to a multiple of {factor} with {resize["rounding"]} (a 1022 px
side is 36.5 × {factor}: 1008 px, not 1036), then scaled down into `max_pixels` or up into `min_pixels` keeping the
aspect. Pass the same bounds to the Qwen2-VL processor (TRL) or {where}. A smaller resize (LLaMA-Factory's default is 768×768) trains on blurred
screens, and in `smart-resize-pixels` puts every point in the wrong place. Prompt: chat template
`{pixels["template"]}`, history window {pixels["history_window"]} (screenshots sent as images){_budget_words(pixels)}; the system prompt
and prompt template are in `manifest.json` → `prompt`. `manifest.json` → `pixels` holds all of the above.
Each record's `target_box` is the box `[x1, y1, x2, y2]` of the element its target's point clicks, in the same
space as the points (null where the annotator drew none); the trained text stays the UI-TARS action.
"""


def _split_note(options: dict, counts: dict) -> str:
    """What the README adds to the split's line: the trace sent to validation so it is not empty, or why it is."""
    if counts.get("validation_empty"):
        return f"; **the validation split is empty**: {counts['validation_empty']}"
    if options.get("validation_trace") is not None:
        return (
            "; no trace giving samples of this format had a seeded score under the fraction, so trace "
            f"{options['validation_trace']} (the lowest score among them) is the validation split"
        )
    return ""


def _sequence_section(sequence: dict | None, limit_goes: str) -> str:
    """What the longest sample costs the trainer: its tokens, the limit set (in ``limit_goes``, where the format's
    trainer takes it), and the memory that limit takes."""
    if not sequence:
        return ""
    longest = sequence.get("longest")
    if longest is None:
        return "## Sequence length\nThis bundle holds no samples.\n"
    counted = _counted_words(sequence["counted_with"])
    return f"""## Sequence length
The longest sample is **{longest["tokens"]} tokens**: row {longest["row"]} of `{longest["file"]}` ({longest["kind"]},
annotation {longest["annotation_id"]}), {longest["images"]} screenshots of {longest["image_tokens"]} image tokens and
{longest["text_tokens"]} text tokens. Image tokens are exact: {sequence["image_tokens"]}; text is counted with
{counted}. A trainer cuts longer sequences without a word, and a cut inside a screenshot's tokens fails the forward
pass ("Image features and image tokens do not match"): set {limit_goes} to at least
**{sequence["max_length"]}** (`manifest.json` → `tokens`: `cutoff_len`, `max_length`).
{_byte_bound_words(sequence)}
What a sequence costs in memory grows with its tokens (docs/formats.md, "Sequence length"): a 1920×1080 screenshot is
2691 image tokens at the default bounds, so a five-screenshot history is 13,455. With gradient checkpointing,
Qwen2-VL-7B keeps about 200 KB per token of decoder activations (bf16, 28 layers × 3584) and Qwen2-VL-2B 86 KB; the
float32 logits over the 151,936-token vocabulary are 0.6 MB per token unless the trainer computes them for the
target only; the vision tower's activations come on top (4 patches per image token). What brings a long history
into a smaller context is the project's image budget (its last k screenshots at full size, older ones smaller: at
k = 2 and 200,704 pixels a five-screenshot 1920×1080 history is 6138 image tokens), a shorter history window or a
smaller `max_pixels`.
"""


def _counted_words(counted_with: str) -> str:
    """How the text of the longest sample was counted, in the README's words."""
    if counted_with == tokens.BOUND:
        return (
            "the UTF-8 bytes of its text, an upper bound (no tokenizer was set, `STUDIO_EXPORT_TOKENIZER_DIR`, and "
            "Qwen2's vocabulary, the studio's `tokens` extra, is not installed)"
        )
    if counted_with.startswith(tokens.QWEN2_VOCABULARY):
        source = counted_with.removeprefix(tokens.QWEN2_VOCABULARY).strip(" ()")
        return (
            f"Qwen2's vocabulary ({source}: Qwen2-VL's byte-level BPE ranks, pre-tokenizer, NFC normalizer and "
            "special tokens), exactly as the Qwen2-VL tokenizer of UI-TARS counts it (a checkpoint with a tokenizer of "
            "its own is counted with it through `STUDIO_EXPORT_TOKENIZER_DIR`)"
        )
    return f"the {counted_with}"


def _byte_bound_words(sequence: dict) -> str:
    """How much a limit counted in bytes overstates the longest sample, and how to count it exactly ("" when a
    tokenizer counted it)."""
    bound = sequence.get("byte_bound")
    if not bound:
        return ""
    longest = sequence["longest"]
    share = round(100 * bound["overstates_by_about"] / sequence["max_length"])
    low, high = bound["bytes_per_token"]
    return f"""
**This limit overstates** the longest sample: no tokenizer was at hand, so each byte of its text counted as a token, where
Qwen2's tokenizer makes one token of about {low} to {high} bytes of UI-TARS text (English; measured on
public OSWorld, ScreenAgent and Mobile-Agent traces). Its {longest["text_tokens"]} bytes of text are about
{bound["text_tokens_about"]} tokens, so the sample is about {bound["tokens_about"]} tokens and a limit of about
{bound["cutoff_len_about"]} holds it: this one is about {bound["overstates_by_about"]} tokens ({share} %) above the
need (text in other scripts has fewer bytes a token; the limit always holds it). To count exactly, install the
studio's `tokens` extra (`pip install '.[tokens]'`: Qwen2's vocabulary) on the workers, or set
`STUDIO_EXPORT_TOKENIZER_DIR` to a folder holding the checkpoint's tokenizer (`tokenizer.json`, or `vocab.json` and
`merges.txt`, with `tokenizer_config.json`: the checkpoint's own folder), and export again; `manifest.json` →
`tokens.counted_with` then names what counted. `manifest.json` → `tokens.byte_bound` holds these estimates.
"""


def _lineage_section(lineage: dict | None) -> str:
    if not lineage:
        return ""
    base = lineage.get("since_export")
    lines = ["## Lineage: rounds and checkpoints"]
    if base:
        lines.append(
            f"An **incremental** bundle: only annotations new or changed since export {base['id']} (sha256 "
            f"`{base['bundle_sha256']}`); {lineage.get('already_exported', 0)} annotations it already held at the same "
            "version are left out."
        )
    quality = lineage.get("left_out_by_quality")
    if quality:
        lines.append(
            f"Filtered by annotator quality: {quality['left_out']} accepted answers left out, of annotators whose "
            f"{quality['reason']}."
        )
    rounds = lineage.get("rounds") or []
    if rounds:
        lines.append("The annotated traces come from these rounds (the checkpoint that ran each):\n")
        lines.append("| round | checkpoint | weights sha256 | ran at | annotations |\n|---|---|---|---|---|")
        for r in rounds:
            if r["name"] is None:
                lines.append(f"| (no round) | – | – | – | {r['annotations']} |")
            else:
                digest = f"`{r['weights_hash'][:12]}…`" if r["weights_hash"] else "–"
                name, checkpoint = (str(r[key]).replace("|", "\\|") for key in ("name", "checkpoint"))
                lines.append(f"| {name} | {checkpoint} | {digest} | {r['ran_at']} | {r['annotations']} |")
    lines.append(
        "\n`manifest.json` → `lineage` holds the same; `sources` the (annotation id, version) of every sample."
    )
    return "\n".join(lines) + "\n"


INTRO_SFT = """SFT and DPO samples built from accepted annotations of UI-TARS GUI-agent traces (UI-TARS "reflection
tuning"): for a first error at step τ, **error_correction** (input s_τ, target the corrected thought and
action), **post_reflection** (input: history through the original wrong step and o_(τ+1); target the recovery
step) and **dpo** pairs (chosen = correction, rejected = the recorded step). Optional: **valid_prefix** and
**error_free** plain SFT samples."""

INTRO_PRM = """Process supervision built from accepted annotations of UI-TARS GUI-agent traces: per trace, the recorded
steps up to and including the first error τ with a label each (correct before τ, wrong at τ), or every step of a
trace answered "no error", all correct (**prm** records)."""

INTRO_VERL = """RL prompts built from accepted annotations of UI-TARS GUI-agent traces, with a rule reward: for a first
error at step τ, the state s_τ (**error_correction**) and, where the annotator gave one, s_(τ+1) after the original
wrong step (**post_reflection**), each with the annotated action as the reward's ground truth."""

_SFT_RULES = """Recorded steps whose action did not parse (e.g. a web agent's `Click [16]`) are never a target and never the
rejected side of a pair. {unparsed_note} A recorded step with a point outside the screen in its trace's own
coordinates (flagged at import) is never a target, and a sample whose history holds one is left out, unless the
annotator's correction replaced that very step (it is τ: the correction is the target, and the recorded step stays
only as the rejected side and in the history of the post-reflection sample, as what happened)."""

PRM_RULES = """A step labelled correct follows the rules of an SFT target: when one did not parse (e.g. a web agent's
`Click [16]`) or has a point outside the screen in its trace's own coordinates (flagged at import), the trace is left
out (`unparsed_target`, unless exported with `unparsed_history=verbatim`, which keeps the step as recorded;
`off_screen_target`). The wrong step τ is kept when its point lies outside the screen (it is what happened), and the
trace is left out when τ did not parse (`unparsed_rejected`)."""

_SKIP_COUNTS = """ Skips are counted by reason in `manifest.json` (`counts.skipped_by_reason`: `unparsed_target`,
`unparsed_rejected`, `unparsed_history`, `off_screen_target`, `off_screen_history`, `gap_after_tau` (the source dropped
steps right after τ, so no true o_(τ+1) exists), `other`) and listed one by one under `skipped`."""


def sft_rules(options: dict) -> str:
    """The skip rules of SFT and DPO samples, with what the export's ``unparsed_history`` option did."""
    unparsed_note = (
        "Samples whose history holds such a step are kept with that step **as it was recorded** (export option "
        "`unparsed_history=verbatim`)."
        if options.get("unparsed_history") == "verbatim"
        else "Samples whose history holds such a step are left out (export option `unparsed_history=skip`, the default)."
    )
    return _SFT_RULES.format(unparsed_note=unparsed_note)


@dataclass(frozen=True)
class BundleFacts:
    """What a format's README section reads of its bundle: the data and extra files, the pixel contract, the
    sequence lengths and the format's own manifest sections (``Writer.manifest_sections``)."""

    data_files: list[str]
    pixels: dict | None = None
    sequence: dict | None = None
    sections: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ReadmeText:
    """A format's parts of the bundle's README (exports.formats declares one per format): ``training`` the section
    that says how to load and train on the bundle; ``limit_goes`` where its trainer takes the sequence limit;
    ``bounds_go`` where, besides the Qwen2-VL processor, it takes the pixel bounds; ``rules`` the skip rules, given
    the export's options."""

    training: Callable[[BundleFacts], str]
    limit_goes: str
    title: str = "Reflection-tuning dataset"
    intro: str = INTRO_SFT
    rules: Callable[[dict], str] = sft_rules
    bounds_go: str = BOUNDS_GO_DEFAULT


def llamafactory_section(facts: BundleFacts) -> str:
    return """## Train with LLaMA-Factory
Unzip the bundle; `dataset_info.json` names each data file (`uitars_sft_train-00000-of-00001` for
`data/sft/train-00000-of-00001.json`, …; a large export has several shards per split) and the bundle carries ready
configs listing every shard of a split: set `model_name_or_path`, then run `llamafactory-cli train sft.yaml` (and `dpo.yaml`) from the
bundle's folder. They set `template: qwen2_vl`, the image bounds below (`image_max_pixels` / `image_min_pixels`,
so LLaMA-Factory's own resize keeps the screenshots as large as the labels assume) and, for SFT, `mask_history: true`:
history replies are assistant turns in the conversation, and without it LLaMA-Factory trains on every one of them,
including the original wrong step of post-reflection samples.
Records are sharegpt with strictly alternating turns (consecutive history replies merged), `<image>` tokens equal to
`len(images)`; DPO records are `ranking` (the conversation ends with the user turn, then `chosen`/`rejected`).
"""


def readme_text(
    *,
    project_name: str,
    fmt: str,
    text: ReadmeText,
    data_files: list[str],
    counts: dict,
    options: dict,
    pixels: dict | None = None,
    lineage: dict | None = None,
    sections: dict | None = None,
    sequence: dict | None = None,
) -> str:
    """The dataset card of a bundle of format ``fmt``: what is inside and how to load and train on it (``text``, the
    format's parts); ``sections`` are the format's own manifest sections (the verl reward)."""
    kinds = "\n".join(f"| {kind} | {n} |" for kind, n in sorted(counts.get("by_kind", {}).items())) or "| (none) | 0 |"
    files = "\n".join(f"- `{name}`" for name in data_files) or "- (no samples)"
    facts = BundleFacts(data_files=data_files, pixels=pixels, sequence=sequence, sections=sections or {})
    rules = text.rules(options) + _SKIP_COUNTS
    return f"""{dataset_card_header(data_files)}# {text.title}: {project_name}

{text.intro}

Format: `{fmt}`. Split by trace (seed {options.get("split_seed")}, validation fraction
{options.get("validation_fraction")}){_split_note(options, counts)}. `manifest.json` lists the options, counts, source
annotations (id, version) and the sha256 of every file.

{rules}

| kind | samples |
|---|---|
{kinds}

Data files:
{files}

{text.training(facts)}
{_pixels_section(pixels, text.bounds_go)}
{_sequence_section(sequence, text.limit_goes)}
{_lineage_section(lineage)}"""
