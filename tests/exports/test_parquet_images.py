"""A Parquet bundle stores each screenshot once (``images.parquet``, keyed by sha256; rows
name theirs), so it is about as large as the TRL bundle of the same samples; and the verl reward reads a ground truth
as pandas gives it (numpy arrays and scalars) as well as lists and tuples."""

from __future__ import annotations

import hashlib
import io
import json
import random
import zipfile

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from PIL import Image, ImageDraw

from annotation.models import Verdict
from exports import services as export_services
from exports import uitars_reward
from tests.fixtures_export import accepted_annotation
from traces import grammar
from traces.importers.base import ImageRef, ImportedStep, ImportedTrace
from traces.services import trace_import_one

pytestmark = pytest.mark.django_db

STEPS = 8
TAU = 7  # s_τ and s_τ+1 carry a full 5-screenshot window, and so do the valid-prefix samples from step 5 on


def screenshot(seed: int) -> bytes:
    """A screen-like PNG (panels, lines of 'text'): compresses as screenshots do, unlike noise or a flat colour."""
    rng = random.Random(seed)
    image = Image.new("RGB", (640, 400), (rng.randrange(200, 256),) * 3)
    draw = ImageDraw.Draw(image)
    for _ in range(40):
        x, y = rng.randrange(600), rng.randrange(380)
        draw.rectangle(
            (x, y, x + rng.randrange(20, 200), y + rng.randrange(8, 60)),
            fill=tuple(rng.randrange(256) for _ in range(3)),
        )
    for row in range(0, 400, 14):
        draw.text((rng.randrange(40), row), " ".join(str(rng.random())[2:9] for _ in range(8)), fill=(20, 20, 20))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def histories(project, annotator, lead):
    """Traces of 8 steps, each on its own screen, answered with an error at step 7 (with an element box)."""
    project.history_window = 5
    project.save()
    for n in range(4):
        replies = [
            f"Thought: Step {k}.\nAction: click(start_box='({100 + 10 * k},{200 + n})')" for k in range(1, STEPS + 1)
        ]
        steps = [
            ImportedStep(screenshot=ImageRef(f"s{k}.png", lambda s=n * 100 + k: screenshot(s)), raw_response=reply)
            for k, reply in enumerate(replies, start=1)
        ]
        trace = trace_import_one(
            project=project,
            imported=ImportedTrace(
                external_id=f"h{n}",
                instruction="Open the display settings",
                source="native",
                steps=steps,
                final_screenshot=ImageRef("final.png", lambda s=n * 100 + 99: screenshot(s)),
            ),
        ).trace
        editor = {
            "type": "click",
            "args": {"start_box": [500, 500]},
            "style": "box",
            "target_box": [450, 460, 550, 540],
        }
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=TAU,
            corrected_thought="Click Display.",
            corrected_action=grammar.render_action(grammar.Action.from_json(editor), box_tokens=project.box_tokens),
            editor_state={"corrected": editor, "reflection": None},
            reflection_thought="Wrong panel; go back.",
            reflection_action="hotkey(key='alt left')",
        )
    return project


def export(project, tmp_path, fmt: str):
    out = tmp_path / f"{fmt}.zip"
    export_services.export_to_path(
        project=project,
        user=None,
        fmt=fmt,
        options={"include_valid_prefix": True, "validation_fraction": 0.0},
        out=out,
    )
    folder = tmp_path / fmt
    with zipfile.ZipFile(out) as archive:
        archive.extractall(folder)
    return out, folder


def test_a_parquet_bundle_stores_each_screenshot_once_and_is_as_large_as_the_trl_bundle(histories, tmp_path):
    trl_zip, trl = export(histories, tmp_path, "trl")
    parquet_zip, parquet = export(histories, tmp_path, "parquet")
    trl_rows = [
        json.loads(line)
        for name in ("data/sft/train-00000-of-00001.jsonl", "data/dpo/train-00000-of-00001.jsonl")
        for line in (trl / name).read_text().splitlines()
    ]
    parquet_rows = [
        row
        for name in ("data/sft/train-00000-of-00001.parquet", "data/dpo/train-00000-of-00001.parquet")
        for row in pq.read_table(parquet / name).to_pylist()
    ]
    assert max(len(row["images"]) for row in parquet_rows) == 5
    # The same samples, each row naming the TRL record's screenshots, in its order.
    assert [row["images"] for row in parquet_rows] == [
        [path.rsplit("/", 1)[1].split(".")[0] for path in record["images"]] for record in trl_rows
    ]
    table = pq.read_table(parquet / "images.parquet").to_pylist()
    shas = [row["sha256"] for row in table]
    assert shas == sorted(set(shas)) and set(shas) == {sha for row in parquet_rows for sha in row["images"]}
    assert all(hashlib.sha256(row["image"]["bytes"]).hexdigest() == row["sha256"] for row in table)
    manifest = json.loads((parquet / "manifest.json").read_text())
    assert manifest["counts"]["images"] == len(shas) and "images.parquet" in manifest["files"]
    # Once each: about the TRL bundle's size (its images/ folder holds each screenshot once too).
    ratio = parquet_zip.stat().st_size / trl_zip.stat().st_size
    print(f"parquet {parquet_zip.stat().st_size} B, trl {trl_zip.stat().st_size} B, ratio {ratio:.3f}")
    assert ratio <= 1.1, ratio


def test_under_the_image_budget_every_screenshot_a_row_names_is_in_the_image_table(histories, tmp_path):
    """The image budget sends older history screenshots smaller, each its own image keyed by the screenshot and
    its size: the table holds those too, at that size, and the bundle holds no images/ folder beside it."""
    histories.history_full_images = 2
    histories.history_max_pixels = 200_704
    histories.save()
    _, parquet = export(histories, tmp_path, "parquet")
    rows = [
        row
        for name in ("data/sft/train-00000-of-00001.parquet", "data/dpo/train-00000-of-00001.parquet")
        for row in pq.read_table(parquet / name).to_pylist()
    ]
    table = {row["sha256"]: row["image"]["bytes"] for row in pq.read_table(parquet / "images.parquet").to_pylist()}
    named = {key for row in rows for key in row["images"]}
    reduced = {key for key in named if "-" in key}
    assert reduced and named == set(table)
    for key in reduced:
        width, height = (int(v) for v in key.rsplit("-", 1)[1].split("x"))
        assert Image.open(io.BytesIO(table[key])).size == (width, height)
    assert not (parquet / "images").exists()


def test_the_verl_reward_reads_numpy_lists_and_tuples(histories, tmp_path):
    _, folder = export(histories, tmp_path, "verl")
    frame = pd.read_parquet(folder / "data/rl/train-00000-of-00001.parquet")
    with_box = 0
    for _, row in frame.iterrows():
        truth = row["reward_model"]["ground_truth"]
        answer = row["extra_info"]["answer"]
        assert uitars_reward.compute_score(row["data_source"], answer, truth) == 1.0
        if truth["box"] is None:
            continue
        with_box += 1
        assert isinstance(truth["box"], np.ndarray)  # pandas: a list column is a numpy array
        box = truth["box"].tolist()
        for shape in (box, tuple(box), np.array(box), np.array(box, dtype=np.int64)):
            assert grammar.box_of(shape) == (450, 460, 550, 540)
            # Sizes as numpy scalars too (a frame built from the column, or numpy-typed code).
            as_given = {
                **truth,
                "box": shape,
                "width": np.int64(truth["width"]),
                "max_pixels": np.int64(truth["max_pixels"]),
            }
            assert uitars_reward.compute_score(row["data_source"], answer, as_given) == 1.0
            # A point outside the box scores only the type.
            assert (
                uitars_reward.compute_score(row["data_source"], "Action: click(start_box='(10,10)')", as_given) == 0.5
            )
    assert with_box == 4
