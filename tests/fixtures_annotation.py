"""Helpers for the annotation tests: native traces written with Pillow and imported by the real importer."""

from __future__ import annotations

import io
import json
import uuid
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw


@lru_cache(maxsize=64)
def _screen_png(size: tuple[int, int], step: int | None) -> bytes:
    """The PNG of step ``step``'s screen (``None``: the final screen). Encoding a full-HD PNG costs more than
    everything else a test does with it, and the screens only depend on these two values: made once per process."""
    width, height = size
    if step is None:
        image = Image.new("RGB", size, (20, 120, 60))
    else:
        image = Image.new("RGB", size, (30 + 20 * step, 60, 90))
        draw = ImageDraw.Draw(image)
        draw.rectangle([width // 10, height // 10, width // 3, height // 5], fill=(230, 230, 240))
        draw.text((width // 10 + 10, height // 10 + 10), f"step {step}", fill=(10, 10, 10))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def write_native_trace(
    folder: Path,
    *,
    steps: int = 4,
    size=(1920, 1080),
    instruction: str = "Open the settings",
    external_id: str | None = None,
    final: bool = True,
    thoughts=None,
    human_edited: dict | None = None,
    platform: str | None = None,
    language: str | None = None,
    variant: int = 0,
    shared_screen: bool = False,
) -> Path:
    """A native trace folder; ``variant`` moves every recorded click ``variant`` pixels right, so that traces of one
    task on the same screens are still different traces (a trace is known by its content). ``shared_screen``: every
    step on one screenshot file (a trace of thousands of steps imports in seconds), its clicks still apart."""
    folder.mkdir(parents=True, exist_ok=True)
    doc_steps = []
    if shared_screen:
        (folder / "screen.png").write_bytes(_screen_png(tuple(size), 1))
    for i in range(1, steps + 1):
        if not shared_screen:
            (folder / f"step_{i}.png").write_bytes(_screen_png(tuple(size), i))
        x, y = (100 + 50 * i + variant, 200 + 30 * i) if not shared_screen else (10 + i % 300, 10 + i // 300)
        step = {
            "screenshot": "screen.png" if shared_screen else f"step_{i}.png",
            "thought": (thoughts or {}).get(i, f"I will click item {i}."),
            "action": f"click(start_box='<|box_start|>({x},{y})<|box_end|>')",
        }
        if human_edited and i in human_edited:
            step["human_edited_response"] = human_edited[i]
        doc_steps.append(step)
    if final:
        (folder / "final.png").write_bytes(_screen_png(tuple(size), None))
    document = {
        "format": "trace-studio/v1",
        "external_id": external_id or f"t-{uuid.uuid4().hex[:10]}",
        "instruction": instruction,
        "outcome": "failure",
        "steps": doc_steps,
    }
    if final:
        document["final_screenshot"] = "final.png"
    if platform:
        document["platform"] = platform
    if language is not None:
        document["language"] = language
    (folder / "trace.json").write_text(json.dumps(document))
    return folder


def import_folder(project, folder: Path, fmt: str = "native"):
    from traces import services

    job = services.import_job_create(
        project=project,
        user=None,
        upload_name=str(folder),
        original_name=folder.name,
        fmt=fmt,
        server_path=True,
        enqueue=False,
    )
    job = services.import_job_run(job_id=job.pk)
    assert job.status == "succeeded", (job.message, job.errors)
    return job


# The dart-gui OSWorld example (../shared/realtraces): 15 steps of UI-TARS messages in screen pixels.
DART_GUI_EXAMPLE = "dart-gui/examples/osworld_trajectory"


def import_dart_gui_example(project, realtraces: Path):
    """The dart-gui example imported the product's way into ``project``; returns its one trace."""
    from traces.models import Trace

    import_folder(project, realtraces / DART_GUI_EXAMPLE, fmt="uitars-messages")
    trace = Trace.objects.get(project=project)
    assert trace.step_count == 15
    return trace


def make_traces(project, tmp_path: Path, count: int = 3, **kwargs):
    """``count`` traces of ``project``, each a native folder under ``tmp_path`` read by the real importer in an import
    job (tests/factories.py, ``through="import"``)."""
    from tests.factories import make_trace

    traces = []
    for n in range(count):
        # Each trace its own task on the same screens: a trace is known by its content (docs/formats.md), so the
        # same task, screens and actions twice would be one trace.
        # With one instruction given for all, each trace's clicks differ instead.
        task = {"instruction": f"Open the settings (task {n + 1})"} if count > 1 and "instruction" not in kwargs else {}
        if count > 1 and "instruction" in kwargs and "variant" not in kwargs:
            task["variant"] = n
        options = {"steps": 4, **kwargs, **task}
        traces.append(
            make_trace(
                project,
                through="import",
                folder=tmp_path / f"trace{n}",
                external_id=f"ext-{n}-{uuid.uuid4().hex[:6]}",
                **options,
            )
        )
    return traces
