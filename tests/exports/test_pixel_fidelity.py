"""Training sees the pixels the labels assume.

For a ``smart-resize-pixels`` project (UI-TARS-1.5: pixels of the smart-resized screenshot) and a ``relative-1000``
project (UI-TARS v1: 0–1000), annotators correct steps on screenshots of sizes that are no multiple of 28
(1920×1080, 1366×768, and 1522×1022, whose 1022 = 36.5 × 28 is where round-half-to-even and a half-up port part
ways); each correction's point is known in pixels of the original screenshot. The bundles go through what trains on
them:

- TRL: the Qwen2-VL image processor of the project's transformers (the PIL one: no torchvision here), set up by the
  TRL README's own code block, runs on every sample's images;
- LLaMA-Factory: its own preprocessing with the bundle's ``sft.yaml`` / ``dpo.yaml`` (argument parser, ``qwen2_vl``
  template, dataset processors, and the data collator's multimodal inputs: the plugin's resize to
  ``image_max_pixels`` / ``image_min_pixels``, then the checkpoint's image processor), in its own virtualenv
  (``tests/llamafactory_labels.py``).

Each trained point, parsed from the target text with the project's grammar, is mapped back to the original
screenshot through the size the trainer produced for that screenshot; it must land within 1 pixel of the annotated
point, and no image may be trained smaller than the project's own ``smart_resize`` of it. The controls can fail:
transformers' default bounds, a half-up port of ``smart_resize`` and LLaMA-Factory's default 768×768 each break the
check.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PIL import Image

from annotation.models import Verdict
from exports import services
from exports.writers import image_path
from tests.exports.test_bundle_readme_code import BLOCK
from tests.exports.test_export_trl import tiny_qwen2vl
from tests.exports.test_llamafactory_preprocessing import counted_with_llamafactorys_tokenizer, preprocess_runs
from tests.fixtures_export import accepted_annotation
from traces import grammar
from traces.importers.base import ImageRef, ImportedStep, ImportedTrace
from traces.models import Step
from traces.services import project_create, trace_import_one

pytestmark = pytest.mark.django_db

SCREENS = [(1920, 1080), (1366, 768), (1522, 1022)]
CONVENTIONS = [grammar.SMART_RESIZE_PIXELS, grammar.RELATIVE_1000]
# A model coordinate is a step of width / w_resized px (smart-resize: about 1) or width / 1000 px (relative-1000:
# 1.92 on 1920): rounding to it moves a point by at most half a step, under 1 px on these screens.
TOLERANCE_PX = 1.0


def annotated_points(width: int, height: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Where the annotator put the correction (on o_τ) and the post-reflection step (on o_τ+1), in pixels of the
    screenshot: odd places, the second near the far corner, where a wrong resize misses most."""
    return (width * 5 // 8 + 3, height * 3 // 7 + 1), (width - 9, height - 7)


def screenshot(width: int, height: int, seed: int) -> bytes:
    image = Image.new("RGB", (width, height), ((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def opener(data: bytes):
    return lambda: data


def click(project, point_px: tuple[int, int], width: int, height: int) -> str:
    """A click at a screenshot pixel, written in the project's convention (as the workspace stores it)."""
    x, y = grammar.from_screen_pixels(
        point_px,
        convention=project.coordinate_convention,
        width=width,
        height=height,
        max_pixels=project.max_pixels,
    )
    return f"click(start_box='({x},{y})')"


@dataclass
class Annotated:
    """The exported bundles of one project and, per screenshot path in them, its size and the annotated point of
    the step whose current screen it is."""

    project: object
    bundles: dict[str, Path]
    targets: dict[str, tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=dict)


@pytest.fixture(params=CONVENTIONS)
def annotated(request, annotator, lead, engineer, tmp_path, settings) -> Annotated:
    counted_with_llamafactorys_tokenizer(tmp_path, settings)
    project = project_create(
        name=f"Pixels {request.param}", members=[annotator, lead, engineer], coordinate_convention=request.param
    )
    result = Annotated(project, {})
    for n, (width, height) in enumerate(SCREENS):
        correction, reflection = annotated_points(width, height)
        wrong = click(project, (width // 4, height // 5), width, height)
        replies = [
            f"Thought: Open the wrong item.\nAction: {wrong}",
            "Thought: Scroll.\nAction: scroll(direction='down')",
        ]
        steps = [
            ImportedStep(
                screenshot=ImageRef(f"s{i}.png", opener(screenshot(width, height, n * 10 + i))),
                raw_response=reply,
            )
            for i, reply in enumerate(replies, start=1)
        ]
        imported = ImportedTrace(
            external_id=f"screen-{n}", instruction="Open the display settings", source="native", steps=steps
        )
        trace = trace_import_one(project=project, imported=imported).trace
        accepted_annotation(
            trace,
            annotator=annotator,
            reviewer=lead,
            verdict=Verdict.ERROR,
            tau=1,
            corrected_thought="Click Display.",
            corrected_action=click(project, correction, width, height),
            reflection_thought="Wrong panel; click Display.",
            reflection_action=click(project, reflection, width, height),
        )
        shots = [step.screenshot for step in Step.objects.filter(trace=trace).order_by("index")]
        assert [(shot.width, shot.height) for shot in shots] == [(width, height)] * 2
        result.targets[image_path(shots[0])] = ((width, height), correction)
        result.targets[image_path(shots[1])] = ((width, height), reflection)
    for fmt in ("trl", "llamafactory"):
        out = tmp_path / f"{fmt}.zip"
        services.export_to_path(
            project=project, user=None, fmt=fmt, options={"validation_fraction": 0.0, "split_seed": 3}, out=out
        )
        with zipfile.ZipFile(out) as archive:
            archive.extractall(tmp_path / fmt)
        result.bundles[fmt] = tmp_path / fmt
    return result


# --- the check ------------------------------------------------------------------------------------


def trained_point(target: str, *, convention: str, trained: tuple[int, int], screen: tuple[int, int]):
    """The point of a target text on the original screenshot, through the size the model was trained on it at."""
    [action] = grammar.parse_response(target).actions
    x, y = action.point()
    (trained_w, trained_h), (width, height) = trained, screen
    if convention == grammar.SMART_RESIZE_PIXELS:
        return x / trained_w * width, y / trained_h * height  # a pixel of the image as the model saw it
    assert convention == grammar.RELATIVE_1000
    return x / 1000 * width, y / 1000 * height


@dataclass
class Fidelity:
    errors: list[float] = field(default_factory=list)  # per target: distance (px, larger axis) to the annotation
    problems: list[str] = field(default_factory=list)
    sizes: set[tuple[tuple[int, int], tuple[int, int]]] = field(default_factory=set)  # (screenshot, trained)


def fidelity(annotated: Annotated, samples: list[tuple[list[str], str]], trained: list[list[tuple[int, int]]]):
    """``samples``: (image paths, target text) each; ``trained``: each sample's images' trained (width, height)."""
    project = annotated.project
    report = Fidelity()
    assert len(samples) == len(trained) and samples
    for (images, target), sizes in zip(samples, trained):
        assert len(sizes) == len(images), "every image was trained"
        for path, size in zip(images, sizes):
            screen, _ = annotated.targets[path]
            floor_w, floor_h = project_size(project, screen)
            report.sizes.add((screen, tuple(size)))
            if size[0] < floor_w or size[1] < floor_h:
                report.problems.append(f"{path} ({screen}) trained at {size}, smaller than {floor_w}×{floor_h}")
        screen, annotated_px = annotated.targets[images[-1]]  # the target acts on the current screen, the last image
        x, y = trained_point(target, convention=project.coordinate_convention, trained=sizes[-1], screen=screen)
        error = max(abs(x - annotated_px[0]), abs(y - annotated_px[1]))
        report.errors.append(error)
        if error > TOLERANCE_PX:
            report.problems.append(f"{target!r} on {screen} lands at ({x:.1f}, {y:.1f}), not {annotated_px}")
    return report


def summary(report: Fidelity) -> str:
    """For ``pytest -s``: the largest error and the (screenshot, trained) sizes."""
    return f"max error {max(report.errors):.3f} px over {len(report.errors)} targets; sizes {sorted(report.sizes)}"


def assert_true_to_the_pixel(report: Fidelity, expected_samples: int):
    assert len(report.errors) == expected_samples
    assert not report.problems, "\n".join(report.problems)
    assert max(report.errors) <= TOLERANCE_PX
    print(summary(report))


# --- TRL: the Qwen2-VL image processor as the bundle's README sets it ------------------------------


def trl_records(bundle: Path) -> list[dict]:
    return [
        json.loads(line)
        for name in ("data/sft/train-00000-of-00001.jsonl", "data/dpo/train-00000-of-00001.jsonl")
        for line in (bundle / name).read_text().splitlines()
    ]


def trl_samples(records: list[dict]) -> list[tuple[list[str], str]]:
    target = {True: "chosen", False: "completion"}
    return [(r["images"], r[target["chosen" in r]][-1]["content"][0]["text"]) for r in records]


def processed_sizes(processor, bundle: Path, records: list[dict]) -> list[list[tuple[int, int]]]:
    """Each record's prompt and images through ``processor`` as TRL's collator calls it (chat template, then the
    processor on text and images); the trained sizes from ``image_grid_thw``, checked against the image tokens."""
    pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    patch, merge = processor.image_processor.patch_size, processor.image_processor.merge_size
    sizes = []
    for record in records:
        text = processor.apply_chat_template(record["prompt"], tokenize=False, add_generation_prompt=True)
        images = [Image.open(bundle / path).convert("RGB") for path in record["images"]]
        batch = processor(text=[text], images=images, return_tensors="np")
        grid = batch["image_grid_thw"].tolist()
        assert int((batch["input_ids"] == pad).sum()) == sum(t * h * w for t, h, w in grid) // merge**2
        sizes.append([(w * patch, h * patch) for _t, h, w in grid])
    return sizes


def project_size(project, screen: tuple[int, int]) -> tuple[int, int]:
    """(width, height) of the project's own smart_resize of a ``screen`` (width, height)."""
    height, width = grammar.smart_resize(screen[1], screen[0], max_pixels=project.max_pixels)
    return width, height


def half_up_size(project, screen: tuple[int, int]) -> tuple[int, int]:
    """(width, height) by a port of smart_resize that rounds half up (the control for the rounding rule); these
    screens lie between the project's bounds, so only the rounding step applies."""
    width, height = screen
    assert grammar.MIN_PIXELS <= width * height <= project.max_pixels
    factor = grammar.IMAGE_FACTOR
    return math.floor(width / factor + 0.5) * factor, math.floor(height / factor + 0.5) * factor


def test_trl_processor_trains_the_annotated_pixels(annotated, tmp_path):
    from transformers import Qwen2VLImageProcessor

    project, bundle = annotated.project, annotated.bundles["trl"]
    pixels = json.loads((bundle / "manifest.json").read_text())["pixels"]
    assert pixels["coordinate_convention"] == project.coordinate_convention
    assert (pixels["min_pixels"], pixels["max_pixels"]) == (grammar.MIN_PIXELS, project.max_pixels)
    assert pixels["resize"]["factor"] == 28 and "half to even" in pixels["resize"]["rounding"]
    assert pixels["history_window"] == project.history_window and pixels["template"] == "qwen2_vl"
    for fmt in ("trl", "llamafactory"):
        readme = (annotated.bundles[fmt] / "README.md").read_text()
        for fact in (
            f"`{project.coordinate_convention}`",
            f"min_pixels={grammar.MIN_PIXELS}",
            f"max_pixels={project.max_pixels}",
            "multiple of 28 with round half to even",
            f"history window {project.history_window}",
            f"`{pixels['model_family']}`",
        ):
            assert fact in readme, f"the {fmt} README says {fact}"

    records = trl_records(bundle)
    assert sorted(r["kind"] for r in records) == sorted(["error_correction", "post_reflection", "dpo"] * len(SCREENS))
    samples = trl_samples(records)

    # The reader's checkpoint: a tiny random Qwen2-VL whose image processor has transformers' default bounds (at most
    # 1,003,520 pixels) until the README's block gives it the bundle's.
    _model, processor = tiny_qwen2vl([json.dumps(r) for r in records])
    checkpoint = tmp_path / "checkpoint"
    Qwen2VLImageProcessor().save_pretrained(checkpoint)
    processor.image_processor = Qwen2VLImageProcessor.from_pretrained(checkpoint)
    unbounded = fidelity(annotated, samples, processed_sizes(processor, bundle, records))

    readme = (bundle / "README.md").read_text()
    [block] = [code for language, code in BLOCK.findall(readme) if "image_processor" in code]
    exec(compile(block, "README.md (trl)", "exec"), {"processor": processor, "checkpoint": str(checkpoint)})  # noqa: S102
    report = fidelity(annotated, samples, processed_sizes(processor, bundle, records))
    assert_true_to_the_pixel(report, len(samples))
    if project.coordinate_convention == grammar.SMART_RESIZE_PIXELS:
        # Trained at exactly the size the labels were computed for.
        assert all(trained == project_size(project, screen) for screen, trained in report.sizes)

    # Controls. Without the README's bounds the screenshots are trained smaller (and absolute points miss).
    print("control, transformers' default bounds:", summary(unbounded))
    assert any("smaller than" in problem for problem in unbounded.problems)
    if project.coordinate_convention == grammar.SMART_RESIZE_PIXELS:
        assert max(unbounded.errors) > 20
        # A trainer resizing with a half-up port of smart_resize misplaces the clicks on the 1522×1022 screen.
        half_up_sizes = [
            [half_up_size(project, annotated.targets[path][0]) for path in images] for images, _ in samples
        ]
        rounded_up = fidelity(annotated, samples, half_up_sizes)
        print("control, half-up smart_resize:", summary(rounded_up))
        assert rounded_up.problems and max(rounded_up.errors) > 10
        assert {screen for screen, trained in rounded_up.sizes if trained != project_size(project, screen)} == {
            (1522, 1022)
        }


# --- LLaMA-Factory: its own preprocessing with the bundle's configs -------------------------------


def llamafactory_samples(bundle: Path, config: str) -> list[tuple[list[str], str]]:
    records = json.loads((bundle / f"data/{config}/train-00000-of-00001.json").read_text())
    if config == "sft":
        return [(record["images"], record["conversations"][-1]["value"]) for record in records]
    return [(record["images"], record["chosen"]["value"]) for record in records]


def llamafactory_sizes(report: dict, samples) -> list[list[tuple[int, int]]]:
    """Each example's trained image sizes; the image tokens LLaMA-Factory expanded must match them."""
    examples = report["train"]
    assert len(examples) == len(samples), "LLaMA-Factory kept every sample"
    for example in examples:
        tokens = sum((w // 28) * (h // 28) for w, h in example["image_sizes"])
        assert example["image_pad_tokens"] == tokens, "the sizes are those the dataset processor tokenized"
    return [[tuple(size) for size in example["image_sizes"]] for example in examples]


@pytest.mark.llamafactory
def test_llamafactory_trains_the_annotated_pixels(annotated, llamafactory_python):
    project, bundle = annotated.project, annotated.bundles["llamafactory"]
    # The control: the same SFT config without the image bounds gets LLaMA-Factory's defaults (768×768 at most).
    sft, dpo, default = preprocess_runs(
        llamafactory_python,
        bundle,
        ("sft.yaml",),
        ("dpo.yaml",),
        ("sft.yaml", "image_max_pixels=", "image_min_pixels="),
    )
    for config, report in (("sft", sft), ("dpo", dpo)):
        assert (report["image_max_pixels"], report["image_min_pixels"]) == (project.max_pixels, grammar.MIN_PIXELS)
        samples = llamafactory_samples(bundle, config)
        result = fidelity(annotated, samples, llamafactory_sizes(report, samples))
        assert_true_to_the_pixel(result, len(samples))

    assert default["image_max_pixels"] == 768 * 768
    samples = llamafactory_samples(bundle, "sft")
    shrunk = fidelity(annotated, samples, llamafactory_sizes(default, samples))
    print("control, LLaMA-Factory's default bounds:", summary(shrunk))
    assert ((1920, 1080), (1036, 588)) in shrunk.sizes
    assert any("smaller than" in problem for problem in shrunk.problems)
    if project.coordinate_convention == grammar.SMART_RESIZE_PIXELS:
        assert max(shrunk.errors) > 100
