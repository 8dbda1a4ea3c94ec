"""Writers: samples → data files of one format, written incrementally into a work folder.

* ``trl``: JSONL, conversational. SFT as prompt/completion (TRL puts the loss on the completion only),
  DPO as prompt/chosen/rejected; ``{"type": "image"}`` placeholders and an ``images`` list of
  bundle-relative paths (placeholders = images, always). The native UI-TARS layout is kept.
* ``llamafactory``: sharegpt JSON arrays; consecutive same-role turns merged so roles strictly
  alternate; ``<image>`` tokens = ``len(images)``; DPO as ``ranking`` records; ``dataset_info.json``.
* ``parquet``: the TRL columns, each screenshot stored once: ``images.parquet`` (``sha256`` and the ``datasets``
  Image ``image``, written at assembly, ``write_image_table``) and rows whose ``images`` name theirs by sha256.
* ``prm``: JSONL in TRL's stepwise-supervision layout (``prompt``, ``completions``, ``labels``) plus the screenshot
  of each step (``images``, bundle-relative paths), one record per trace (``prm_{split}.jsonl``).
* ``verl``: Parquet in verl's RL dataset layout (``data_source``, ``prompt`` messages with ``<image>`` in place,
  ``images`` embedded, ``ability``, ``reward_model``, ``extra_info``), one row per corrected and per
  post-reflection step (``rl_{split}.parquet``), plus the reward function and the grammar it reads replies with.

A writer writes the data files of one shard of an export (a range of its annotations), one file per dataset and
split it has samples for, named ``{sft|dpo|prm|rl}_{train|validation}{suffix}`` in the shard's work folder. The
bundle names them the Hugging Face way when it is assembled (``data_file_name``): ``data/{dataset}/{split}-{k}-of-
{n}{suffix}``, the shards' files in shard order. What belongs to the whole bundle (``dataset_info.json`` and the
training configs, the reward module) is written then, from the final file names (``bundle_files``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring
from pathlib import Path

from exports import uitars_reward
from exports.builders import Sample
from traces import grammar, prompting

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


def _reply(sample: Sample, text: str | None) -> str:
    """A side of a one-state sample (completion, chosen or rejected), which its builder always writes."""
    if text is None:
        raise ValueError(f"a {sample.kind} sample of annotation {sample.annotation_id} lacks a reply")
    return text


def trl_record(sample: Sample) -> dict:
    prompt = sample.prompt
    assert isinstance(prompt, prompting.StatePrompt), "TRL rows hold one state's prompt"
    return {"prompt": prompting.to_chat_messages(prompt), **trl_replies(sample)}


def trl_replies(sample: Sample) -> dict:
    """A TRL row after its prompt: the reply or the pair's two sides, the images and what names the sample."""
    prompt = sample.prompt
    assert isinstance(prompt, prompting.StatePrompt), "TRL rows hold one state's prompt"
    record: dict = {}
    if sample.is_preference:
        record["chosen"] = _assistant(_reply(sample, sample.chosen))
        record["rejected"] = _assistant(_reply(sample, sample.rejected))
    else:
        record["completion"] = _assistant(_reply(sample, sample.completion))
    record["images"] = [image_path(img) for img in prompt.images]
    record["kind"] = sample.kind
    record["trace_id"] = sample.trace_id
    record["annotation_id"] = sample.annotation_id
    record["target_box"] = sample.target_box
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
    prompt = sample.prompt
    assert isinstance(prompt, prompting.StatePrompt), "sharegpt rows hold one state's prompt"
    conversation = sharegpt_conversation(prompt)
    record: dict = {"conversations": conversation}
    if sample.is_preference:
        record["chosen"] = {"from": "gpt", "value": sample.chosen}
        record["rejected"] = {"from": "gpt", "value": sample.rejected}
    else:
        conversation.append({"from": "gpt", "value": sample.completion})
    record["images"] = [image_path(img) for img in prompt.images]
    record["kind"] = sample.kind
    record["trace_id"] = sample.trace_id
    record["annotation_id"] = sample.annotation_id
    record["target_box"] = sample.target_box
    return record


def data_file_stem(sample: Sample) -> str:
    return f"{'dpo' if sample.is_preference else 'sft'}_{sample.split}"


def data_file_name(stem: str, number: int, of: int, suffix: str) -> str:
    """The bundle path of file ``number`` (from 0) of ``of`` of a dataset and split (``stem``), named the way
    Hugging Face datasets names shards: ``data/sft/train-00000-of-00003.jsonl``."""
    dataset, split = stem.rsplit("_", 1)
    return f"data/{dataset}/{split}-{number:05d}-of-{of:05d}{suffix}"


def data_file_glob(dataset: str, split: str, suffix: str) -> str:
    """The pattern that matches every file of a dataset and split (README, dataset card configs)."""
    return f"data/{dataset}/{split}-*{suffix}"


def data_file_parts(name: str) -> tuple[str, str] | None:
    """(dataset, split) of a bundle data file name from ``data_file_name``; None for other files."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != "data" or "-" not in parts[2]:
        return None
    return parts[1], parts[2].split("-", 1)[0]


class Writer:
    """Base: one open file per (sft|dpo, split), opened on first use; ``close`` returns the names written."""

    suffix = ""
    uses_image_folder = True  # the bundle's screenshots go in images/, once each
    uses_image_table = False  # the bundle's screenshots go in IMAGE_TABLE, once each
    sample_set = "sft_dpo"  # which samples the format takes (exports.builders.SAMPLE_SETS)

    def __init__(self, workdir: Path, *, image_bytes: ImageBytes | None = None, pixels: dict | None = None):
        self.workdir = workdir
        self.image_bytes = image_bytes
        self.pixels = pixels or {}  # the bundle's pixel contract (exports.services.pixel_contract)
        self._files: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        # The bundle's sequence limit (exports.tokens: holds its longest sample), set before ``bundle_files``.
        self.sequence_length: int | None = None

    def path(self, stem: str) -> Path:
        return self.workdir / f"{stem}{self.suffix}"

    def stem(self, sample: Sample) -> str:
        return data_file_stem(sample)

    def add(self, sample: Sample) -> None:
        stem = self.stem(sample)
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
        """Finish the shard's files; returns their stems (``sft_train``, …), sorted."""
        for stem in sorted(self._files):
            self.finish(stem, self._files[stem])
        return sorted(self._files)

    def bundle_files(self, data_files: list[str]) -> list[str]:
        """Write into the work folder the files that belong to the whole bundle, given its data files' final names;
        returns their names."""
        return []

    def part_figures(self) -> dict:
        """What the format counts in a shard beyond its files and samples (JSON; stored with the shard's result),
        for ``add_part_figures`` at the assembly."""
        return {}

    def add_part_figures(self, figures: dict) -> None:
        """Take in one shard's ``part_figures`` (the assembly's writer, shard by shard)."""

    def manifest_sections(self) -> dict:
        """The format's own sections of ``manifest.json`` (the README reads them too), from the figures taken in."""
        return {}


def _assistant_json(text: str) -> str:
    """``_dumps(_assistant(text))``."""
    return '[{"role":"assistant","content":[{"type":"text","text":' + encode_basestring(text) + "}]}]"


def _part_json(part: prompting.Part) -> str:
    if part.kind == prompting.TEXT:
        return '{"type":"text","text":' + encode_basestring(part.text) + "}"
    return '{"type":"image"}'


def _messages_json(prompt: prompting.StatePrompt) -> str:
    """``_dumps(prompting.to_chat_messages(prompt))``, written from the messages' parts: no dicts made to be encoded."""
    messages = (
        '{"role":' + encode_basestring(message.role) + ',"content":[' + ",".join(map(_part_json, message.parts)) + "]}"
        for message in prompt.messages
    )
    return "[" + ",".join(messages) + "]"


class TrlWriter(Writer):
    suffix = ".jsonl"

    def __init__(self, workdir: Path, *, image_bytes: ImageBytes | None = None, pixels: dict | None = None):
        super().__init__(workdir, image_bytes=image_bytes, pixels=pixels)
        # The last prompt written, its JSON and its images' JSON: the samples of one state (a correction and its
        # pairs) share them.
        self._prompt: object = None
        self._prompt_json = ""
        self._images_json = ""

    def write(self, handle, sample, *, first):
        handle.write(self.line(sample))

    def line(self, sample: Sample) -> str:
        """``_dumps(trl_record(sample))`` and a line break, written from its parts (``trl_record``'s keys in its
        order, each value as ``json.dumps`` writes it): the prompt's JSON once for the samples sharing it, written
        from its parts as the replies are, each a string, not a record, to encode (most of a TRL export's encoding
        otherwise)."""
        prompt = sample.prompt
        assert isinstance(prompt, prompting.StatePrompt), "TRL rows hold one state's prompt"
        if prompt is not self._prompt:
            self._prompt = prompt
            self._prompt_json = _messages_json(prompt)
            self._images_json = "[" + ",".join(encode_basestring(image_path(img)) for img in prompt.images) + "]"
        if sample.is_preference:
            replies = (
                f'"chosen":{_assistant_json(_reply(sample, sample.chosen))},'
                f'"rejected":{_assistant_json(_reply(sample, sample.rejected))}'
            )
        else:
            replies = f'"completion":{_assistant_json(_reply(sample, sample.completion))}'
        box = "null" if sample.target_box is None else _dumps(sample.target_box)
        return (
            f'{{"prompt":{self._prompt_json},{replies},"images":{self._images_json},'
            f'"kind":{encode_basestring(sample.kind)},"trace_id":{int(sample.trace_id)},'
            f'"annotation_id":{int(sample.annotation_id)},"target_box":{box}}}\n'
        )


class LlamaFactoryWriter(Writer):
    """sharegpt records plus ``dataset_info.json`` and ready training configs (``sft.yaml``, ``dpo.yaml``)."""

    suffix = ".json"

    def write(self, handle, sample, *, first):
        handle.write(("[\n" if first else ",\n") + _dumps(llamafactory_record(sample)))

    def finish(self, stem, handle):
        handle.write("\n]\n")
        handle.close()

    def bundle_files(self, data_files: list[str]) -> list[str]:
        # One dataset entry per data file (LLaMA-Factory's file_name names one file, or a folder it lists in no set
        # order); the configs list every shard of a split, and LLaMA-Factory concatenates them in that order.
        info = {}
        for name in data_files:
            dataset, split = data_file_parts(name) or ("", "")
            entry: dict = {"file_name": name, "formatting": "sharegpt"}
            columns = {"messages": "conversations", "images": "images"}
            if dataset == "dpo":
                entry["ranking"] = True
                columns = {"messages": "conversations", "chosen": "chosen", "rejected": "rejected", "images": "images"}
            entry["columns"] = columns
            info[dataset_info_name(name)] = entry
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
            train = [name for name in datasets if name.startswith(f"uitars_{stage}_train-")]
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
                # Holds the bundle's longest sample (manifest.json → tokens): LLaMA-Factory cuts longer ones silently.
                "cutoff_len": self.sequence_length,
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
            evaluation = [name for name in datasets if name.startswith(f"uitars_{stage}_validation-")]
            if evaluation:
                config["eval_dataset"] = ",".join(evaluation)
            lines = [f"{key}: {yaml_scalar(value)}" for key, value in config.items() if value is not None]
            (self.workdir / f"{stage}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
            written.append(f"{stage}.yaml")
        return written


def yaml_scalar(value) -> str:
    """``value`` as YAML every loader reads back as it was: JSON, except that a float in exponent form gets a point
    (``1.0e-05``): YAML 1.1 loaders (PyYAML's ``safe_load``) read ``1e-05`` as a string, and a learning rate that is a
    string fails the optimizer."""
    text = json.dumps(value)
    if isinstance(value, float) and "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def dataset_info_name(data_file: str) -> str:
    """The LLaMA-Factory dataset name of one data file: ``data/sft/train-00000-of-00002.json`` is
    ``uitars_sft_train-00000-of-00002``."""
    dataset, split = data_file_parts(data_file) or ("", "")
    number = data_file.rsplit("/", 1)[-1].split("-", 1)[1].split(".", 1)[0]
    return f"uitars_{dataset}_{split}-{number}"


IMAGE_TABLE = "images.parquet"
IMAGE_TABLE_ROWS = 32  # screenshots per row group: what the writer holds in memory at once


def image_table_schema():
    """``images.parquet``: one row per screenshot of the bundle, ``sha256`` and the image (datasets' Image feature,
    ``{"bytes", "path"}``), sorted by sha256."""
    import pyarrow as pa

    features = {"sha256": {"dtype": "string", "_type": "Value"}, "image": {"_type": "Image"}}
    return pa.schema(
        [("sha256", pa.string()), ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())]))],
        metadata={"huggingface": json.dumps({"info": {"features": features}})},
    )


def write_image_table(path: Path, images: dict[str, list], read: Callable[[str], bytes]) -> int:
    """Write the bundle's image table: ``images`` maps sha256 to ``[storage name, size, bundle path]`` (what the shards
    collected), ``read(storage name)`` gives a file's bytes. The image bytes are stored as they are (PNG and JPEG are
    compressed already), ``IMAGE_TABLE_ROWS`` a row group, so memory holds one row group. Returns the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = image_table_schema()
    rows: list[dict] = []
    with pq.ParquetWriter(path, schema, compression="none") as out:
        for sha in sorted(images):
            storage_name, _, bundle_path = images[sha]
            rows.append({"sha256": sha, "image": {"bytes": read(storage_name), "path": bundle_path}})
            if len(rows) >= IMAGE_TABLE_ROWS:
                out.write_table(pa.Table.from_pylist(rows, schema=schema))
                rows.clear()
        if rows or not images:
            out.write_table(pa.Table.from_pylist(rows, schema=schema))
    return len(images)


class ParquetWriter(Writer):
    """Row groups of ``ROWS`` samples; a row's ``images`` are the sha256 of its screenshots, which the bundle stores
    once each in ``IMAGE_TABLE`` (a 5-screenshot history would otherwise repeat each screenshot up to 5 times)."""

    suffix = ".parquet"
    uses_image_folder = False
    uses_image_table = True
    ROWS = 64
    # Rows made into one Arrow table at a time (a multiple of ROWS: the row groups stay ROWS rows each): pyarrow's
    # conversion costs about as much for 64 rows as for a thousand, and these rows hold text only.
    BATCH_ROWS = 1024

    def __init__(self, workdir, *, image_bytes, pixels=None):
        super().__init__(workdir, image_bytes=image_bytes, pixels=pixels)
        self._rows: dict[str, list[dict]] = {}
        # The last prompt and its messages: the rows of one state (a correction and its pairs) share them.
        self._prompt: object = None
        self._prompt_messages: list[dict] = []

    @staticmethod
    def schema(preference: bool):
        import pyarrow as pa

        content = pa.list_(pa.struct([("type", pa.string()), ("text", pa.string())]))
        turns = pa.list_(pa.struct([("role", pa.string()), ("content", content)]))
        fields = [("prompt", turns)]
        fields += [("chosen", turns), ("rejected", turns)] if preference else [("completion", turns)]
        fields += [
            ("images", pa.list_(pa.string())),
            ("kind", pa.string()),
            ("trace_id", pa.int64()),
            ("annotation_id", pa.int64()),
            ("target_box", pa.list_(pa.float64())),
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
            name: turn_feature
            for name, _ in fields
            if name not in ("images", "kind", "trace_id", "annotation_id", "target_box")
        }
        features["images"] = {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"}
        features["kind"] = {"dtype": "string", "_type": "Value"}
        features["trace_id"] = {"dtype": "int64", "_type": "Value"}
        features["annotation_id"] = {"dtype": "int64", "_type": "Value"}
        features["target_box"] = {"feature": {"dtype": "float64", "_type": "Value"}, "_type": "List"}
        metadata = {"huggingface": json.dumps({"info": {"features": features}})}
        return pa.schema(fields, metadata=metadata)

    def file_schema(self, stem: str):
        return self.schema(stem.startswith("dpo"))

    def open(self, stem):
        import pyarrow.parquet as pq

        self._rows[stem] = []
        return pq.ParquetWriter(self.path(stem), self.file_schema(stem), compression="zstd")

    def row(self, sample: Sample) -> dict:
        """``trl_record``'s columns, the images named by sha256."""
        prompt = sample.prompt
        assert isinstance(prompt, prompting.StatePrompt), "Parquet rows hold one state's prompt"
        if prompt is not self._prompt:
            self._prompt = prompt
            self._prompt_messages = prompting.to_chat_messages(prompt)
        row = {"prompt": self._prompt_messages, **trl_replies(sample)}
        row["images"] = [img.sha256 for img in sample.prompt.images]
        return row

    def write(self, handle, sample, *, first):
        stem = self.stem(sample)
        self._rows[stem].append(self.row(sample))
        if len(self._rows[stem]) >= self.BATCH_ROWS:
            self._flush(stem, handle)

    def _flush(self, stem, handle):
        import pyarrow as pa

        rows = self._rows[stem]
        if rows:
            handle.write_table(pa.Table.from_pylist(rows, schema=handle.schema), row_group_size=self.ROWS)
            rows.clear()

    def finish(self, stem, handle):
        self._flush(stem, handle)
        handle.close()


def prm_record(sample: Sample) -> dict:
    """TRL's stepwise-supervision record (standard, text format: ``prompt`` a string, one completion per step) with
    the screen of each step: ``images[k]`` is o_k, the screenshot ``completions[k]`` acted on."""
    trajectory = sample.prompt
    assert isinstance(trajectory, prompting.Trajectory) and sample.labels is not None
    return {
        "prompt": trajectory.instruction,
        "completions": list(trajectory.replies),
        "labels": list(sample.labels),
        "images": [image_path(img) for img in trajectory.images],
        "system": trajectory.system,
        "kind": sample.kind,
        "trace_id": sample.trace_id,
        "annotation_id": sample.annotation_id,
        "annotation_version": sample.annotation_version,
    }


# What a `prm` record's labels mean (manifest and README).
PRM_LABELS = {
    "per": "trace: steps 1..τ of an accepted `error` answer, every step of an accepted `no_error` answer",
    "true": "the step is correct (before τ, or any step of a `no_error` trace)",
    "false": "the step is the first error τ (its recorded action)",
    "images": "images[k] is o_k, the screenshot completions[k] acted on",
}


class PrmWriter(Writer):
    """``prm_{split}.jsonl``: one stepwise-supervision record per trace, screenshots in ``images/``."""

    suffix = ".jsonl"
    sample_set = "process"

    def manifest_sections(self) -> dict:
        return {"labels": PRM_LABELS}

    def stem(self, sample):
        return f"prm_{sample.split}"

    def write(self, handle, sample, *, first):
        handle.write(_dumps(prm_record(sample)) + "\n")


# verl's loader splits a message's content at this token and takes the row's images in order.
VERL_IMAGE_TOKEN = "<image>"
VERL_ABILITY = "gui_agent"
REWARD_MODULE = "uitars_reward.py"
GRAMMAR_MODULE = "uitars_actions.py"  # what uitars_reward.py loads from beside itself


def verl_ground_truth(sample: Sample, pixels: dict) -> dict:
    """What the reward needs to score a reply for this step: the annotated action (project convention, canonical),
    the screen it acts on (its size and the project's max_pixels, to map points onto it) and the point radius."""
    assert sample.target is not None
    screen = sample.prompt.images[-1]  # o_i, the current observation
    return {
        "action": sample.target.action,
        "thought": sample.target.thought,
        "coordinate_convention": pixels["coordinate_convention"],
        "width": screen.width,
        "height": screen.height,
        "max_pixels": pixels["max_pixels"],
        "radius_px": uitars_reward.DEFAULT_RADIUS_PX,
        # The target element's box ([x1, y1, x2, y2], project convention) when the annotator drew one: the reward then
        # wants the first action's point inside it instead of within the radius.
        "box": sample.target_box,
    }


class VerlWriter(ParquetWriter):
    """``rl_{split}.parquet`` in verl's RL dataset layout; the reward module and the grammar beside the data.

    Images are plain structs, not the ``datasets`` Image feature, so each can carry the project's pixel bounds:
    verl passes an image dict's keys on to qwen_vl_utils' ``fetch_image``, which resizes by ``min_pixels`` /
    ``max_pixels`` when the image names them (a decoded PIL image would get that library's defaults)."""

    sample_set = "rl"
    uses_image_table = False  # verl's loader reads a row's images from the row itself
    image_bytes: ImageBytes  # each row carries its images' bytes
    BATCH_ROWS = ParquetWriter.ROWS  # its rows hold their screenshots: one row group in memory at a time

    def __init__(self, workdir: Path, *, image_bytes: ImageBytes, pixels: dict | None = None):
        super().__init__(workdir, image_bytes=image_bytes, pixels=pixels)
        self._index: dict[str, int] = {}
        self.max_image_tokens = 0  # the largest sum of image tokens in one prompt (README: max_prompt_length)
        # τ rows whose recorded wrong step the reward scores 1 (e.g. a correction within the radius of the recorded
        # point): the reward cannot tell them from the correction, and the manifest lists them.
        self.indistinct: list[dict] = []
        self.rows_with_box = 0

    def stem(self, sample):
        return f"rl_{sample.split}"

    def file_schema(self, stem):
        import pyarrow as pa

        truth = pa.struct(
            [
                ("action", pa.string()),
                ("thought", pa.string()),
                ("coordinate_convention", pa.string()),
                ("width", pa.int64()),
                ("height", pa.int64()),
                ("max_pixels", pa.int64()),
                ("radius_px", pa.int64()),
                ("box", pa.list_(pa.float64())),
            ]
        )
        image = pa.struct(
            [("bytes", pa.binary()), ("path", pa.string()), ("min_pixels", pa.int64()), ("max_pixels", pa.int64())]
        )
        extra = pa.struct(
            [
                ("split", pa.string()),
                ("index", pa.int64()),
                ("kind", pa.string()),
                ("trace_id", pa.int64()),
                ("step", pa.int64()),
                ("annotation_id", pa.int64()),
                ("annotation_version", pa.int64()),
                ("answer", pa.string()),
                ("recorded_reply", pa.string()),
            ]
        )
        return pa.schema(
            [
                ("data_source", pa.string()),
                ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
                ("images", pa.list_(image)),
                ("ability", pa.string()),
                ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", truth)])),
                ("extra_info", extra),
            ]
        )

    def image_tokens(self, screenshot) -> int:
        height, width = grammar.smart_resize(
            screenshot.height,
            screenshot.width,
            min_pixels=self.pixels["min_pixels"],
            max_pixels=self.pixels["max_pixels"],
        )
        return height * width // (grammar.IMAGE_FACTOR * grammar.IMAGE_FACTOR)

    def row(self, sample):
        prompt = sample.prompt
        assert isinstance(prompt, prompting.StatePrompt)
        stem = self.stem(sample)
        # The row's place in its data file: each shard's file is written apart, so it is counted per file.
        index = self._index[stem] = self._index.get(stem, -1) + 1
        self.max_image_tokens = max(self.max_image_tokens, sum(self.image_tokens(img) for img in prompt.images))
        bounds = {"min_pixels": self.pixels["min_pixels"], "max_pixels": self.pixels["max_pixels"]}
        truth = verl_ground_truth(sample, self.pixels)
        self.rows_with_box += truth["box"] is not None
        if sample.recorded is not None and uitars_reward.score_reply(sample.recorded, truth) >= 1.0:
            self.indistinct.append({"trace_id": sample.trace_id, "step": sample.step})
        return {
            "data_source": f"trace_studio/{sample.kind}",
            "prompt": prompting.to_placeholder_messages(prompt, image_token=VERL_IMAGE_TOKEN),
            "images": [{"bytes": self.image_bytes(img), "path": image_path(img), **bounds} for img in prompt.images],
            "ability": VERL_ABILITY,
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {
                "split": sample.split,
                "index": index,
                "kind": sample.kind,
                "trace_id": sample.trace_id,
                "step": sample.step,
                "annotation_id": sample.annotation_id,
                "annotation_version": sample.annotation_version,
                "answer": sample.completion,
                "recorded_reply": sample.recorded,
            },
        }

    def bundle_files(self, data_files: list[str]) -> list[str]:
        # The reward and the one grammar travel as files: the copy of traces/grammar.py is byte-identical (a test
        # compares them), so the bundle's reward reads replies exactly as the project does.
        for name, module in ((REWARD_MODULE, uitars_reward), (GRAMMAR_MODULE, grammar)):
            assert module.__file__ is not None
            (self.workdir / name).write_bytes(Path(module.__file__).read_bytes())
        return [REWARD_MODULE, GRAMMAR_MODULE]

    def part_figures(self) -> dict:
        return {
            "max_image_tokens": self.max_image_tokens,
            "rows_with_box": self.rows_with_box,
            "indistinct": self.indistinct,
        }

    def add_part_figures(self, figures: dict) -> None:
        self.max_image_tokens = max(self.max_image_tokens, figures.get("max_image_tokens", 0))
        self.rows_with_box += figures.get("rows_with_box", 0)
        self.indistinct += figures.get("indistinct", [])

    def manifest_sections(self) -> dict:
        """The reward the bundle ships (manifest and README): its files, entry point, scoring and point radius."""
        return {
            "reward": {
                "module": REWARD_MODULE,
                "function": "compute_score",
                "grammar": GRAMMAR_MODULE,
                "grammar_source": "traces/grammar.py, copied byte for byte",
                "radius_px": uitars_reward.DEFAULT_RADIUS_PX,
                "scoring": "0 if the reply does not parse; per action in order: 0 for another type, else "
                "(1 + matched arguments) / (1 + scored arguments); summed and divided by the larger action count; the "
                "target point inside ground_truth.box when there is one, other points within radius_px",
                "rows_with_box": self.rows_with_box,
                "max_image_tokens": self.max_image_tokens,
                "recorded_step_scores_1": self.indistinct,
            }
        }
