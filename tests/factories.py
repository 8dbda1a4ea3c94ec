"""Small builders of test data in our native trace format (docs/formats.md)."""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path

from PIL import Image, ImageDraw


def screen_png(path: Path, *, size=(1920, 1080), label: str = "", seed: int = 0) -> Path:
    """A plain but distinct screen: the label and seed change the bytes, so each file hashes differently."""
    image = Image.new("RGB", size, (236, 239, 244))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, size[0], 48], fill=(30 + seed % 50, 40, 60))
    draw.rectangle([40, 100, 40 + (seed * 37) % (size[0] // 2) + 200, 160], fill=(59, 91, 219))
    draw.text((60, 120), label or f"screen {seed}", fill=(255, 255, 255))
    # A small screen shows little of the above (a 48×32 one only the header's 50 shades): its bottom row carries a
    # digest of the label and seed, so two screens made with different ones never have the same bytes.
    digest = hashlib.sha256(f"{label}\0{seed}".encode()).digest()
    for x in range(min(size[0], len(digest) // 3)):
        image.putpixel((x, size[1] - 1), tuple(digest[3 * x : 3 * x + 3]))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG")
    return path


def native_trace_folder(
    folder: Path,
    *,
    external_id: str,
    instruction: str = "Open the settings",
    steps: int = 3,
    thought: str = "I will click the button.",
    size=(1920, 1080),
    final: bool = True,
    actions: list[str] | None = None,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for i in range(1, steps + 1):
        name = f"step_{i:03d}.png"
        screen_png(
            folder / name,
            size=size,
            label=f"{external_id} step {i}",
            seed=zlib.crc32(f"{external_id}:{i}".encode()) % 10_000,
        )
        action = (
            actions[i - 1] if actions else f"click(start_box='<|box_start|>({100 + i * 10},{200 + i * 5})<|box_end|>')"
        )
        records.append({"screenshot": name, "thought": thought, "action": action})
    if final:
        screen_png(
            folder / "final.png",
            size=size,
            label=f"{external_id} final",
            seed=zlib.crc32(f"{external_id}:final".encode()) % 10_000,
        )
    document = {
        "format": "trace-studio/v1",
        "external_id": external_id,
        "instruction": instruction,
        "source": "test",
        "outcome": "unknown",
        "metadata": {},
        "final_screenshot": "final.png" if final else None,
        "steps": records,
    }
    (folder / "trace.json").write_text(json.dumps(document, indent=2))
    return folder


def split_seed_with_both_splits(project, validation: float) -> int:
    """The split is by trace id, which depends on the database's sequences: pick a seed that puts at least one of
    the four traces in each split, so the test never depends on the ids this run happened to get."""
    from exports.builders import ExportOptions, split_of
    from traces.models import Trace

    ids = list(Trace.objects.filter(project=project).values_list("pk", flat=True))
    for seed in range(1000):
        options = ExportOptions.parse({"validation_fraction": validation, "split_seed": seed})
        if len({split_of(pk, options) for pk in ids}) == 2:
            return seed
    raise AssertionError("no seed splits these traces both ways")
