"""Builders of test data: native trace folders (docs/formats.md), the one builder of a test's traces (make_trace) and
the world the access, input and insights tests walk (make_world)."""

from __future__ import annotations

import hashlib
import io
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


# --- traces in the database: the one builder ------------------------------------------------------------------


def png(seed: int, size=(56, 42)) -> bytes:
    """A small one-colour PNG whose colour follows ``seed``: distinct screens for distinct seeds."""
    image = Image.new("RGB", size, ((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _constant(data: bytes):
    return lambda: data


def make_trace(
    project,
    *,
    external_id: str | None = None,
    instruction: str = "Open the settings",
    through: str = "store",
    replies: list[str] | None = None,
    steps: int = 3,
    final: bool = True,
    image_seed: int = 1,
    size: tuple[int, int] | None = None,
    source: str = "native",
    folder: Path | None = None,
    **native,
):
    """One trace of ``project``, stored one of three ways (every test's trace is made here):

    - ``"store"``: an ``ImportedTrace`` in memory, stored by ``traces.services.trace_import_one`` (the importers' one
      way in: content identity, parsed actions, screenshots stored once): ``replies`` are the steps' raw replies,
      each step's screenshot ``png(image_seed * 100 + i, size)`` (56×42 unless ``size``), the final one
      ``png(image_seed * 100 + 99)``.
    - ``"import"``: a native trace folder (``tests.fixtures_annotation.write_native_trace``, given ``steps`` and
      the folder's other options in ``native``) read by the real importer in an import job, as an upload is.
    - ``"rows"``: the trace and its ``steps`` rows written directly, without screenshots or parsing (``native``
      gives ``actions``, one per step): no import's rule runs, for tests of what is done with a trace.
    """
    from traces.models import Step, Trace

    if through == "store":
        from traces.importers.base import ImageRef, ImportedStep, ImportedTrace
        from traces.services import trace_import_one

        size = size or (56, 42)

        imported = ImportedTrace(
            external_id=external_id,
            instruction=instruction,
            source=source,
            steps=[
                ImportedStep(
                    screenshot=ImageRef(f"s{i}.png", _constant(png(image_seed * 100 + i, size))), raw_response=reply
                )
                for i, reply in enumerate(replies or [], start=1)
            ],
            final_screenshot=ImageRef("final.png", _constant(png(image_seed * 100 + 99, size))) if final else None,
        )
        return trace_import_one(project=project, imported=imported).trace
    if through == "import":
        from tests.fixtures_annotation import import_folder, write_native_trace

        assert folder is not None, "an imported trace is read from a folder"
        if size is not None:
            native["size"] = size
        written = write_native_trace(
            folder, external_id=external_id, instruction=instruction, steps=steps, final=final, **native
        )
        import_folder(project, written)
        return Trace.objects.get(
            project=project, external_id=json.loads((written / "trace.json").read_text())["external_id"]
        )
    if through == "rows":
        actions = native.pop("actions")
        assert not native, f"a trace made of rows takes no {', '.join(native)}"
        trace = Trace.objects.create(
            project=project, external_id=external_id, instruction=instruction, source=source, step_count=steps
        )
        Step.objects.bulk_create(
            [
                Step(trace=trace, index=i, thought=f"I will click item {i}.", action_text=action)
                for i, action in enumerate(actions, start=1)
            ]
        )
        return trace
    raise ValueError(f"no way to make a trace through {through!r}")


# --- the world the access, input and insights tests walk -------------------------------------------------------


def make_world(
    tmp_path: Path,
    *,
    project,
    annotator,
    lead,
    traces: int = 2,
    steps: int = 2,
    outsider: bool = True,
    rounds: tuple[tuple[str, str, int], ...] = (),
    lease: bool = True,
) -> dict:
    """``project`` with ``traces`` imported traces of ``steps`` steps (``make_traces``, under ``tmp_path / "main"``);
    with ``outsider``, an annotator of another project of one trace of one step ("outsider", "other",
    "other_trace"); ``rounds``, each (name, checkpoint, how many of the traces, taken in order), made by ``lead``;
    with ``lease``, the annotation and lease ``annotator`` gets from the queue ("annotation", "lease")."""
    from annotation.services import lease_next_trace
    from studio.demo import user_create_with_role
    from studio.permissions import Role
    from tests.conftest import TEST_PASSWORD
    from tests.fixtures_annotation import make_traces
    from traces.services import project_create, round_create

    world: dict = {"project": project, "annotator": annotator, "lead": lead}
    if outsider:
        world["outsider"] = user_create_with_role(username="outsider", password=TEST_PASSWORD, role=Role.ANNOTATOR)
        world["other"] = project_create(name="Other project", members=[world["outsider"]])
        world["other_trace"] = make_traces(world["other"], tmp_path / "other", count=1, steps=1)[0]
    world["traces"] = made = make_traces(project, tmp_path / "main", count=traces, steps=steps)
    world["rounds"] = []
    for name, checkpoint, count in rounds:
        made_round = round_create(project=project, name=name, checkpoint=checkpoint, actor=lead)
        for trace in made[:count]:
            trace.round = made_round
            trace.save(update_fields=["round"])
        made = made[count:]
        world["rounds"].append(made_round)
    if lease:
        world["annotation"], world["lease"] = lease_next_trace(user=annotator, project=project)
    return world
