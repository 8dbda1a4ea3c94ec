"""Writers: samples → data files of one format, written incrementally into a work folder.

* ``trl``: JSONL, conversational. SFT as prompt/completion (TRL puts the loss on the completion only),
  DPO as prompt/chosen/rejected; ``{"type": "image"}`` placeholders and an ``images`` list of
  bundle-relative paths (placeholders = images, always). The native UI-TARS layout is kept.
* ``llamafactory``: sharegpt JSON arrays; consecutive same-role turns merged so roles strictly
  alternate; ``<image>`` tokens = ``len(images)``; DPO as ``ranking`` records; ``dataset_info.json``.
* ``parquet``: the TRL columns with the images embedded (``datasets`` Image feature).

File names: ``{sft|dpo}_{train|validation}.{jsonl|json|parquet}``; only non-empty files are written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from exports.builders import Sample
from traces import prompting

ImagePath = Callable[[object], str]  # screenshot -> bundle-relative path
ImageBytes = Callable[[object], bytes]

IMAGE_TOKEN = "<image>"
SHAREGPT_ROLES = {"system": "system", "user": "human", "assistant": "gpt"}


def image_path(screenshot) -> str:
    """Where a screenshot lives in a bundle: once, by content hash."""
    return f"images/{screenshot.sha256}.{screenshot.format.lower()}"


def _dumps(record) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _assistant(text: str) -> list[dict]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def trl_record(sample: Sample) -> dict:
    record: dict = {"prompt": prompting.to_chat_messages(sample.prompt)}
    if sample.is_preference:
        record["chosen"] = _assistant(sample.chosen)
        record["rejected"] = _assistant(sample.rejected)
    else:
        record["completion"] = _assistant(sample.completion)
    record["images"] = [image_path(img) for img in sample.prompt.images]
    record["kind"] = sample.kind
    record["trace_id"] = sample.trace_id
    record["annotation_id"] = sample.annotation_id
    return record


def sharegpt_conversation(prompt: prompting.StatePrompt) -> list[dict]:
    """Strictly alternating sharegpt turns: same-role neighbours merged; images become ``<image>`` in place."""
    turns: list[dict] = []
    for message in prompt.messages:
        value = "".join(part.text if part.kind == prompting.TEXT else IMAGE_TOKEN for part in message.parts)
        role = SHAREGPT_ROLES[message.role]
        if turns and turns[-1]["from"] == role and role != "system":
            # Text then image of one user turn join directly; consecutive history replies get a line break.
            separator = "" if role == "human" else "\n"
            turns[-1]["value"] += separator + value
        else:
            turns.append({"from": role, "value": value})
    return turns


def llamafactory_record(sample: Sample) -> dict:
    conversation = sharegpt_conversation(sample.prompt)
    record: dict = {"conversations": conversation}
    if sample.is_preference:
        record["chosen"] = {"from": "gpt", "value": sample.chosen}
        record["rejected"] = {"from": "gpt", "value": sample.rejected}
    else:
        conversation.append({"from": "gpt", "value": sample.completion})
    record["images"] = [image_path(img) for img in sample.prompt.images]
    record["kind"] = sample.kind
    record["trace_id"] = sample.trace_id
    record["annotation_id"] = sample.annotation_id
    return record


def data_file_stem(sample: Sample) -> str:
    return f"{'dpo' if sample.is_preference else 'sft'}_{sample.split}"


class Writer:
    """Base: one open file per (sft|dpo, split), opened on first use; ``close`` returns the names written."""

    suffix = ""
    uses_image_folder = True

    def __init__(self, workdir: Path, *, image_bytes: ImageBytes | None = None, pixels: dict | None = None):
        self.workdir = workdir
        self.image_bytes = image_bytes
        self.pixels = pixels or {}  # the bundle's pixel contract (exports.services.pixel_contract)
        self._files: dict[str, object] = {}
        self.counts: dict[str, int] = {}

    def path(self, stem: str) -> Path:
        return self.workdir / f"{stem}{self.suffix}"

    def add(self, sample: Sample) -> None:
        stem = data_file_stem(sample)
        if stem not in self._files:
            self._files[stem] = self.open(stem)
        self.counts[stem] = self.counts.get(stem, 0) + 1
        self.write(self._files[stem], sample, first=self.counts[stem] == 1)

    def open(self, stem: str):
        return open(self.path(stem), "w", encoding="utf-8", newline="\n")

    def write(self, handle, sample: Sample, *, first: bool) -> None:
        raise NotImplementedError

    def finish(self, stem: str, handle) -> None:
        handle.close()

    def close(self) -> list[str]:
        for stem in sorted(self._files):
            self.finish(stem, self._files[stem])
        names = [self.path(stem).name for stem in sorted(self._files)]
        return names + self.extra_files()

    def extra_files(self) -> list[str]:
        return []


class TrlWriter(Writer):
    suffix = ".jsonl"

    def write(self, handle, sample, *, first):
        handle.write(_dumps(trl_record(sample)) + "\n")


class LlamaFactoryWriter(Writer):
    """sharegpt records plus ``dataset_info.json`` and ready training configs (``sft.yaml``, ``dpo.yaml``)."""

    suffix = ".json"

    def write(self, handle, sample, *, first):
        handle.write(("[\n" if first else ",\n") + _dumps(llamafactory_record(sample)))

    def finish(self, stem, handle):
        handle.write("\n]\n")
        handle.close()

    def extra_files(self) -> list[str]:
        info = {}
        for stem in sorted(self._files):
            entry = {"file_name": self.path(stem).name, "formatting": "sharegpt"}
            columns = {"messages": "conversations", "images": "images"}
            if stem.startswith("dpo"):
                entry["ranking"] = True
                columns = {"messages": "conversations", "chosen": "chosen", "rejected": "rejected", "images": "images"}
            entry["columns"] = columns
            info[f"uitars_{stem}"] = entry
        (self.workdir / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        return ["dataset_info.json", *self._training_configs(info)]

    def _training_configs(self, info: dict) -> list[str]:
        """sft.yaml / dpo.yaml for the datasets this bundle holds. History replies are assistant turns in the
        conversation: only ``mask_history`` keeps the loss on the target step (LLaMA-Factory accepts it for SFT
        only). Image bounds equal the project's, so LLaMA-Factory's own resize does not shrink the screenshots."""
        pixels = self.pixels
        written = []
        for stage in ("sft", "dpo"):
            datasets = [name for name in info if name.startswith(f"uitars_{stage}_")]
            train = [name for name in datasets if name.endswith("_train")]
            if not train:
                continue
            config = {
                "stage": stage,
                "do_train": True,
                "finetuning_type": "full",
                "model_name_or_path": "path/to/your/qwen2-vl-checkpoint",
                "template": pixels.get("template", "qwen2_vl"),
                "dataset_dir": ".",
                "dataset": ",".join(train),
                "cutoff_len": 8192,
                "image_max_pixels": pixels.get("max_pixels"),
                "image_min_pixels": pixels.get("min_pixels"),
                "output_dir": f"out-{stage}",
                "per_device_train_batch_size": 1,
                "gradient_accumulation_steps": 8,
                "learning_rate": 1.0e-5 if stage == "sft" else 5.0e-7,
                "num_train_epochs": 1.0,
                "bf16": True,
            }
            if stage == "sft":
                config["mask_history"] = True
            else:
                config.update(pref_beta=0.1, pref_loss="sigmoid")
            evaluation = [name for name in datasets if name.endswith("_validation")]
            if evaluation:
                config["eval_dataset"] = ",".join(evaluation)
            lines = [f"{key}: {json.dumps(value)}" for key, value in config.items() if value is not None]
            (self.workdir / f"{stage}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(f"{stage}.yaml")
        return written


class ParquetWriter(Writer):
    """Row groups of ``ROWS`` samples; images embedded as ``{"bytes", "path"}`` (datasets' Image feature)."""

    suffix = ".parquet"
    uses_image_folder = False
    ROWS = 64

    def __init__(self, workdir, *, image_bytes, pixels=None):
        super().__init__(workdir, image_bytes=image_bytes, pixels=pixels)
        self._rows: dict[str, list[dict]] = {}

    @staticmethod
    def schema(preference: bool):
        import pyarrow as pa

        content = pa.list_(pa.struct([("type", pa.string()), ("text", pa.string())]))
        turns = pa.list_(pa.struct([("role", pa.string()), ("content", content)]))
        fields = [("prompt", turns)]
        fields += [("chosen", turns), ("rejected", turns)] if preference else [("completion", turns)]
        fields += [
            ("images", pa.list_(pa.struct([("bytes", pa.binary()), ("path", pa.string())]))),
            ("kind", pa.string()),
            ("trace_id", pa.int64()),
            ("annotation_id", pa.int64()),
        ]
        turn_feature = {
            "feature": {
                "role": {"dtype": "string", "_type": "Value"},
                "content": {
                    "feature": {
                        "type": {"dtype": "string", "_type": "Value"},
                        "text": {"dtype": "string", "_type": "Value"},
                    },
                    "_type": "List",
                },
            },
            "_type": "List",
        }
        features = {
            name: turn_feature for name, _ in fields if name not in ("images", "kind", "trace_id", "annotation_id")
        }
        features["images"] = {"feature": {"_type": "Image"}, "_type": "List"}
        features["kind"] = {"dtype": "string", "_type": "Value"}
        features["trace_id"] = {"dtype": "int64", "_type": "Value"}
        features["annotation_id"] = {"dtype": "int64", "_type": "Value"}
        metadata = {"huggingface": json.dumps({"info": {"features": features}})}
        return pa.schema(fields, metadata=metadata)

    def open(self, stem):
        import pyarrow.parquet as pq

        self._rows[stem] = []
        return pq.ParquetWriter(self.path(stem), self.schema(stem.startswith("dpo")), compression="zstd")

    def write(self, handle, sample, *, first):
        row = trl_record(sample)
        row["images"] = [{"bytes": self.image_bytes(img), "path": image_path(img)} for img in sample.prompt.images]
        stem = data_file_stem(sample)
        self._rows[stem].append(row)
        if len(self._rows[stem]) >= self.ROWS:
            self._flush(stem, handle)

    def _flush(self, stem, handle):
        import pyarrow as pa

        rows = self._rows[stem]
        if rows:
            handle.write_table(pa.Table.from_pylist(rows, schema=handle.schema))
            rows.clear()

    def finish(self, stem, handle):
        self._flush(stem, handle)
        handle.close()


WRITERS: dict[str, type[Writer]] = {"trl": TrlWriter, "llamafactory": LlamaFactoryWriter, "parquet": ParquetWriter}
