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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

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


def readme_text(*, project_name: str, fmt: str, data_files: list[str], counts: dict, options: dict) -> str:
    """The dataset card: what is inside and how to load it in TRL and LLaMA-Factory."""
    kinds = "\n".join(f"| {kind} | {n} |" for kind, n in sorted(counts.get("by_kind", {}).items())) or "| (none) | 0 |"
    files = "\n".join(f"- `{name}`" for name in data_files) or "- (no samples)"
    sections = {
        "trl": """## Load in TRL
```python
from datasets import load_dataset
from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer
# Unzip the bundle, then run from its folder (image paths are relative to it).
sft = load_dataset("json", data_files={"train": "sft_train.jsonl", "validation": "sft_validation.jsonl"})
dpo = load_dataset("json", data_files={"train": "dpo_train.jsonl", "validation": "dpo_validation.jsonl"})
# SFT records are prompt/completion, so the loss falls on the target step only (completion_only_loss).
SFTTrainer(model=model, args=SFTConfig(max_length=None), train_dataset=sft["train"], processing_class=processor)
DPOTrainer(model=model, ref_model=sft_model, args=DPOConfig(max_length=None), train_dataset=dpo["train"],
           processing_class=processor)
```
Each record's `images` are paths relative to the bundle root; their number equals the `{"type": "image"}`
placeholders. Extra columns `kind`, `trace_id`, `annotation_id` say where a sample comes from.
""",
        "llamafactory": """## Load in LLaMA-Factory
Unzip the bundle and point `dataset_dir` at it; `dataset_info.json` names each file
(`uitars_sft_train`, `uitars_dpo_train`, ...). Example:
```yaml
stage: dpo            # or sft with dataset: uitars_sft_train
dataset_dir: /path/to/bundle
dataset: uitars_dpo_train
template: qwen2_vl
pref_beta: 0.1
pref_loss: sigmoid
```
Records are sharegpt with strictly alternating turns (consecutive history replies merged), `<image>` tokens
equal to `len(images)`; DPO records are `ranking` (conversation ends with the user turn, `chosen`/`rejected`).
History replies are in the conversation: use `mask_history: true` for SFT so only the target step is trained.
""",
        "parquet": """## Load with datasets (and TRL)
```python
from datasets import load_dataset
sft = load_dataset("parquet", data_files={"train": "sft_train.parquet"})
dpo = load_dataset("parquet", data_files={"train": "dpo_train.parquet"})
```
Images are embedded (`images` is a list of `Image`); columns as in the TRL format.
""",
    }
    return f"""# Reflection-tuning dataset: {project_name}

SFT and DPO samples built from accepted annotations of UI-TARS GUI-agent traces (UI-TARS "reflection
tuning"): for a first error at step τ, **error_correction** (input s_τ, target the corrected thought and
action), **post_reflection** (input: history through the original wrong step and o_(τ+1); target the recovery
step) and **dpo** pairs (chosen = correction, rejected = the recorded step). Optional: **valid_prefix** and
**error_free** plain SFT samples.

Format: `{fmt}`. Split by trace (seed {options.get("split_seed")}, validation fraction
{options.get("validation_fraction")}). `manifest.json` lists the options, counts, source annotations
(id, version) and the sha256 of every file.

| kind | samples |
|---|---|
{kinds}

Data files:
{files}

{sections[fmt]}"""
