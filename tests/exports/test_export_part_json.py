"""A shard's part of an export (``ExportPart``) is kept as JSON in its shard's row and read back by the assembly:
the same part after the trip, a part an older release stored (no deflated stream, no count of its traces, no
reduced screenshots, no token figures) read with those unknown, and the parts taken together by ``parts_reduce``."""

from __future__ import annotations

import json

from exports.builders import Skip
from exports.services import ExportPart, parts_reduce
from exports.services.parts import PartFile, PartImage, PartReducedImage


def a_part(**changes) -> ExportPart:
    part = ExportPart(
        suffix=".jsonl",
        files={"sft": PartFile(samples=3, sha256="a" * 64, size=120, crc32=7, compressed_size=60, stored="parts/1")},
        by_kind={"error_correction": 2, "dpo": 1},
        by_split={"train": 3},
        sample_traces=2,
        on_policy=[("qwen", "w1", 1)],
        images={"b" * 64: PartImage("screens/b.png", 10, "images/b.png")},
        reduced_images={"c": PartReducedImage("parts/c.png", 5, "images/c.png", "d" * 64)},
        skipped=[Skip(4, 9, "dpo", "the correction equals the recorded step")],
        sources=[(1, 2), (3, 1)],
        by_round=[(None, 1), (5, 1)],
        counted_with="utf8-bytes",
        longest={"tokens": 40, "stem": "sft", "row": 1, "annotation_id": 1},
        rounded_points=1,
        figures={"rows_with_box": 2},
    )
    for name, value in changes.items():
        setattr(part, name, value)
    return part


def test_a_part_comes_back_from_its_json_unchanged():
    part = a_part()
    stored = json.loads(json.dumps(part.to_json()))  # as the shard's row keeps it
    assert ExportPart.from_json(stored) == part
    assert stored["files"]["sft"]["stored"] == "parts/1" and stored["images"]["b" * 64] == list(part.images["b" * 64])


def test_a_part_an_older_release_stored_reads_with_what_it_lacks_unknown():
    older = a_part().to_json()
    for key in ("sample_traces", "reduced_images", "tokens", "rounded_points", "figures"):
        del older[key]
    for key in ("crc32", "compressed_size"):
        del older["files"]["sft"][key]
    part = ExportPart.from_json(older)
    assert part.sample_traces is None and part.reduced_images == {} and part.longest is None
    assert part.files["sft"].crc32 is None and part.rounded_points == 0 and part.figures == {}


def test_the_parts_are_taken_together_in_shard_order():
    figures: list[dict] = []
    first = a_part()
    second = a_part(
        files={"sft": PartFile(samples=1, sha256="e" * 64, size=30)},
        by_kind={"dpo": 1},
        sample_traces=1,
        sources=[(7, 1)],
        by_round=[(5, 2)],
        longest={"tokens": 90, "stem": "sft", "row": 0, "annotation_id": 7},
        counted_with="tokenizer t",
        figures={"rows_with_box": 1},
    )
    total = parts_reduce([first, second], figures.append)
    assert total.shards == 2 and total.by_kind == {"error_correction": 2, "dpo": 2}
    assert total.sources == [(1, 2), (3, 1), (7, 1)] and total.by_round == {None: 1, 5: 3}
    assert [file.samples for file in total.by_stem["sft"]] == [3, 1]
    assert total.longest == {"tokens": 90, "stem": "sft", "row": 0, "annotation_id": 7, "file_number": 1}
    assert total.counted_with == {"utf8-bytes", "tokenizer t"} and total.sample_traces == 3
    assert total.on_policy == {("qwen", "w1"): 2} and list(total.reduced_images) == ["images/c.png"]
    assert figures == [{"rows_with_box": 2}, {"rows_with_box": 1}]
    # A part from before shards counted their traces leaves the bundle's count unknown.
    assert parts_reduce([first, a_part(sample_traces=None)], figures.append).sample_traces is None
