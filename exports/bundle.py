"""One deterministic archive per export: the same inputs give a byte-identical zip.

Fixed timestamps, fixed permissions, entries sorted by name, images stored as they are (never
recompressed), text deflated. Files are streamed into the archive in chunks, so memory does not
grow with the bundle.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

FIXED_DATE = (1980, 1, 1, 0, 0, 0)
CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """An archive member: ``open`` yields a binary file object; ``compress`` deflates it."""

    name: str
    size: int
    open: Callable[[], object]
    compress: bool


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
                shutil.copyfileobj(source, sink, CHUNK)
            if on_entry:
                on_entry(number)


def manifest_json(manifest: dict) -> bytes:
    return (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _splits(data_files: list[str], stem: str, suffix: str) -> dict[str, str]:
    """The splits of one dataset that the bundle really holds (a small export may have no validation file)."""
    return {
        split: f"{stem}_{split}.{suffix}"
        for split in ("train", "validation")
        if f"{stem}_{split}.{suffix}" in data_files
    }


def _load_lines(data_files: list[str], suffix: str) -> str:
    loader = "json" if suffix == "jsonl" else suffix
    lines = []
    for stem in ("sft", "dpo"):
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
    """The code that gives the reader's processor the bundle's image bounds (tests/test_pixel_fidelity.py runs it and
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


def _trl_section(data_files: list[str], pixels: dict | None = None) -> str:
    """The TRL example, written for the files this bundle holds: every line runs as it is (a test executes it)."""
    trainers = []
    if _splits(data_files, "sft", "jsonl"):
        trainers.append(
            'sft_trainer = SFTTrainer(model=model, args=SFTConfig(output_dir="out-sft", max_length=None, bf16=bf16),\n'
            '                         train_dataset=sft["train"], processing_class=processor)'
        )
    if _splits(data_files, "dpo", "jsonl"):
        trainers.append(
            "dpo_trainer = DPOTrainer(model=model, ref_model=sft_model,\n"
            '                         args=DPOConfig(output_dir="out-dpo", max_length=None, bf16=bf16),\n'
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
SFT records are prompt/completion, so the loss falls on the target step only (completion-only loss). Each record's
`images` are paths relative to the bundle root; their number equals the `{{"type": "image"}}` placeholders. Extra
columns `kind`, `trace_id`, `annotation_id` say where a sample comes from.
"""


# What a point means in each coordinate convention, for the README (traces/actions.py converts).
POINT_MEANING = {
    "relative-1000": "0–1000 on each axis of the screenshot: `x_screen = x / 1000 × width`",
    "smart-resize-pixels": "pixels of the screenshot after `smart_resize`: `x_screen = x / w_resized × width`",
    "screen-pixels": "pixels of the screenshot as stored",
}


def _pixels_section(pixels: dict | None) -> str:
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
aspect. Pass the same bounds to the Qwen2-VL processor (TRL) or LLaMA-Factory (`image_min_pixels`,
`image_max_pixels`, already in the configs). A smaller resize (LLaMA-Factory's default is 768×768) trains on blurred
screens, and in `smart-resize-pixels` puts every point in the wrong place. Prompt: chat template
`{pixels["template"]}`, history window {pixels["history_window"]} (screenshots sent as images); the system prompt
and prompt template are in `manifest.json` → `prompt`. `manifest.json` → `pixels` holds all of the above.
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


def readme_text(
    *,
    project_name: str,
    fmt: str,
    data_files: list[str],
    counts: dict,
    options: dict,
    pixels: dict | None = None,
    lineage: dict | None = None,
) -> str:
    """The dataset card: what is inside and how to load it in TRL and LLaMA-Factory."""
    kinds = "\n".join(f"| {kind} | {n} |" for kind, n in sorted(counts.get("by_kind", {}).items())) or "| (none) | 0 |"
    files = "\n".join(f"- `{name}`" for name in data_files) or "- (no samples)"
    sections = {
        "trl": _trl_section(data_files, pixels),
        "llamafactory": """## Train with LLaMA-Factory
Unzip the bundle; `dataset_info.json` names each file (`uitars_sft_train`, `uitars_dpo_train`, …) and the bundle
carries ready configs: set `model_name_or_path`, then run `llamafactory-cli train sft.yaml` (and `dpo.yaml`) from the
bundle's folder. They set `template: qwen2_vl`, the image bounds below (`image_max_pixels` / `image_min_pixels`,
so LLaMA-Factory's own resize keeps the screenshots as large as the labels assume) and, for SFT, `mask_history: true`:
history replies are assistant turns in the conversation, and without it LLaMA-Factory trains on every one of them,
including the original wrong step of post-reflection samples.
Records are sharegpt with strictly alternating turns (consecutive history replies merged), `<image>` tokens equal to
`len(images)`; DPO records are `ranking` (the conversation ends with the user turn, then `chosen`/`rejected`).
""",
        "parquet": f"""## Load with datasets (and TRL)
```python
from datasets import load_dataset
{_load_lines(data_files, "parquet")}
```
Images are embedded (`images` is a list of `Image`); columns as in the TRL format.
""",
    }
    unparsed_note = (
        "Samples whose history holds such a step are kept with that step **as it was recorded** (export option "
        "`unparsed_history=verbatim`)."
        if options.get("unparsed_history") == "verbatim"
        else "Samples whose history holds such a step are left out (export option `unparsed_history=skip`, the default)."
    )
    return f"""# Reflection-tuning dataset: {project_name}

SFT and DPO samples built from accepted annotations of UI-TARS GUI-agent traces (UI-TARS "reflection
tuning"): for a first error at step τ, **error_correction** (input s_τ, target the corrected thought and
action), **post_reflection** (input: history through the original wrong step and o_(τ+1); target the recovery
step) and **dpo** pairs (chosen = correction, rejected = the recorded step). Optional: **valid_prefix** and
**error_free** plain SFT samples.

Format: `{fmt}`. Split by trace (seed {options.get("split_seed")}, validation fraction
{options.get("validation_fraction")}). `manifest.json` lists the options, counts, source annotations
(id, version) and the sha256 of every file.

Recorded steps whose action did not parse (e.g. a web agent's `Click [16]`) are never a target and never the
rejected side of a pair. {unparsed_note} A recorded step with a point outside the screen in its trace's own
coordinates (flagged at import) is never a target, and a sample whose history holds one is left out, unless the
annotator's correction replaced that very step (it is τ: the correction is the target, and the recorded step stays
only as the rejected side and in the history of the post-reflection sample, as what happened). Skips are counted by
reason in `manifest.json` (`counts.skipped_by_reason`: `unparsed_target`, `unparsed_rejected`, `unparsed_history`,
`off_screen_target`, `off_screen_history`, `gap_after_tau` (the source dropped steps right after τ, so no true
o_(τ+1) exists), `other`) and listed one by one under `skipped`.

| kind | samples |
|---|---|
{kinds}

Data files:
{files}

{sections[fmt]}
{_pixels_section(pixels)}
{_lineage_section(lineage)}"""
