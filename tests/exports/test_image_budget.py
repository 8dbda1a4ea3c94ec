"""The project's image budget: a prompt's last k screenshots at the project's bounds, older ones smaller,
each history action's points in the size of the screenshot as it is sent where the convention is the image's
(smart-resize-pixels), in the screen's pixels where it is the screen's (screen-pixels), so a 1920×1080 history fits a
chosen context. Checked in the prompt (all three conventions), in a bundle (the resized files, their token count through
transformers' processor, the limit) and in pre-scoring's image loader."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from PIL import Image

from annotation.models import Verdict
from exports import services, tokens
from tests.fixtures_export import accepted_annotation, make_trace
from traces import grammar, prompting
from traces.forms import ProjectForm
from traces.selectors import trace_steps

pytestmark = pytest.mark.django_db

FULL_HD = (1920, 1080)
OLDER_PIXELS = 256 * 28 * 28  # 1920×1080 goes at 588×336: 252 tokens instead of 2691
# Step 2 clicks the middle of the screen, (960, 540) px, written in each convention.
MIDDLE = {
    grammar.RELATIVE_1000: "(500,500)",
    grammar.SMART_RESIZE_PIXELS: "(966,546)",  # 1932×1092, the smart_resize size at the default bounds
    grammar.SCREEN_PIXELS: "(960,540)",
}
# The same point when its screenshot is sent at 588×336: in smart-resize-pixels a point is in the pixels of the image
# as sent; in screen-pixels it is the screen's pixel whatever the size the image goes at; relative-1000 has no size.
MIDDLE_REDUCED = {
    grammar.RELATIVE_1000: "(500,500)",
    grammar.SMART_RESIZE_PIXELS: "(294,168)",
    grammar.SCREEN_PIXELS: "(960,540)",
}


def budget_project(project, convention: str, full_images: int = 2):
    project.coordinate_convention = convention
    project.history_full_images = full_images
    project.history_max_pixels = OLDER_PIXELS
    project.save()
    return project


def full_hd_trace(project, convention: str):
    replies = [
        "Thought: Open the menu.\nAction: hotkey(key='ctrl m')",
        f"Thought: Click the middle.\nAction: click(start_box='{MIDDLE[convention]}')",
        "Thought: Type.\nAction: type(content='display\\n')",
        "Thought: Wait.\nAction: wait()",
        f"Thought: Click the middle again.\nAction: click(start_box='{MIDDLE[convention]}')",
        "Thought: Scroll.\nAction: scroll(start_box='(10,10)', direction='down')",
        "Thought: Wait again.\nAction: wait()",
    ]
    trace = make_trace(project, replies=replies, external_id=f"hd-{convention}", image_seed=5, size=FULL_HD)
    trace.coordinate_convention = convention
    return trace


@pytest.mark.parametrize("convention", grammar.CONVENTIONS)
def test_older_screenshots_go_smaller_with_their_points_in_their_size(project, convention):
    budget_project(project, convention)
    trace = full_hd_trace(project, convention)
    prompt = prompting.build_state_messages(trace, 6, project=project, steps=list(trace_steps(trace)))
    # History window 5: o_2 … o_5 and o_6; the last two at the project's bounds, the three older ones reduced.
    assert [type(image).__name__ for image in prompt.images] == ["ReducedImage"] * 3 + ["Screenshot"] * 2
    assert {(image.width, image.height) for image in prompt.images[:3]} == {(588, 336)}
    replies = [message.text for message in prompt.messages if message.role == "assistant"]
    # Step 2 acted on a reduced screenshot: its point is in that screenshot's size; step 5's is at full size.
    assert MIDDLE_REDUCED[convention] in replies[1]
    assert MIDDLE[convention] in replies[4]
    counter = tokens.TokenCounter(min_pixels=grammar.MIN_PIXELS, max_pixels=project.max_pixels)
    assert sum(counter.image_tokens(image) for image in prompt.images) == 3 * 252 + 2 * 2691

    # Without the budget the same prompt sends every screenshot at the project's bounds.
    project.history_full_images = 0
    plain = prompting.build_state_messages(trace, 6, project=project, steps=list(trace_steps(trace)))
    assert all(type(image).__name__ == "Screenshot" for image in plain.images)
    assert MIDDLE[convention] in [m.text for m in plain.messages if m.role == "assistant"][1]


def test_a_budget_bundle_holds_the_resized_screenshots_and_fits_8192(project, annotator, lead, tmp_path, settings):
    pytest.importorskip("transformers")
    from prescoring.qwen2vl import image_processor_class
    from prescoring.tiny import build_tokenizer

    build_tokenizer().save_pretrained(tmp_path / "tokenizer")  # counted with a tokenizer, not the byte bound
    settings.EXPORT_TOKENIZER_DIR = str(tmp_path / "tokenizer")
    budget_project(project, grammar.SMART_RESIZE_PIXELS)
    trace = full_hd_trace(project, grammar.SMART_RESIZE_PIXELS)
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=6,
        corrected_thought="Click Display.",
        corrected_action="click(start_box='(300,260)')",
    )
    out = tmp_path / "bundle.zip"
    services.export_to_path(project=project, user=None, fmt="llamafactory", options={"validation_fraction": 0}, out=out)
    archive = zipfile.ZipFile(out)
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["pixels"]["history_budget"] == {"full_images": 2, "older_max_pixels": OLDER_PIXELS}
    longest = manifest["tokens"]["longest"]
    assert longest["image_tokens"] == 3 * 252 + 2 * 2691 and manifest["tokens"]["cutoff_len"] <= 8192
    reduced = sorted(name for name in archive.namelist() if name.endswith("-588x336.png"))
    assert len(reduced) == 3  # o_2, o_3, o_4 of the error-correction sample (DPO shares them)
    record = json.loads(archive.read("data/sft/train-00000-of-00001.json"))[0]
    assert sorted(record["images"][:3]) == reduced and all(manifest["files"][name]["size"] for name in reduced)
    processor = image_processor_class()(min_pixels=grammar.MIN_PIXELS, max_pixels=project.max_pixels)
    for name in record["images"]:
        image = Image.open(io.BytesIO(archive.read(name)))
        grid = processor(images=[image], return_tensors="pt")["image_grid_thw"][0].tolist()
        # The processor, at the project's bounds, leaves a reduced screenshot at its size: 252 tokens.
        assert int(grid[1] * grid[2]) // 4 == (252 if name in reduced else 2691)
    assert "under an image budget" in archive.read("README.md").decode()


def test_every_point_of_a_budgeted_screen_pixels_bundle_is_in_screen_pixels(project, annotator, lead, tmp_path):
    """Screen pixels are the screen's: a history reply whose screenshot goes at 588×336 keeps its 1920×1080 point,
    so no prompt mixes the two sizes (the reduced image's (294,168) would be the top-left quarter of the screen)."""
    budget_project(project, grammar.SCREEN_PIXELS)
    trace = full_hd_trace(project, grammar.SCREEN_PIXELS)
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=6,
        corrected_thought="Click Display.",
        corrected_action="click(start_box='(1500,800)')",
    )
    out = tmp_path / "bundle.zip"
    services.export_to_path(project=project, user=None, fmt="trl", options={"validation_fraction": 0}, out=out)
    archive = zipfile.ZipFile(out)
    record = json.loads(archive.read("data/sft/train-00000-of-00001.jsonl").decode().splitlines()[0])
    assert sum(name.endswith("-588x336.png") for name in record["images"]) == 3  # the budget is on
    replies = [
        part["text"]
        for turn in record["prompt"] + record["completion"]
        if turn["role"] == "assistant"
        for part in turn["content"]
    ]
    actions = [action for reply in replies for action in grammar.parse_response(reply).actions]
    points = [action.point() for action in actions if action.point() is not None]
    # Steps 2 and 5 click the middle (step 2's screenshot goes reduced, step 5's at full size) and the correction
    # clicks (1500,800): every one as recorded, on the 1920×1080 screen.
    assert points == [(960, 540), (960, 540), (1500, 800)]


def test_a_prm_record_sends_its_older_steps_screenshots_under_the_budget(project, annotator, lead, tmp_path):
    """A process record reads each step on its own screen, every step with its screenshot: the budget applies to it as
    to every format with histories (the last k screenshots at the project's bounds, the older ones reduced, their
    replies' points in the size sent), where it sent six 1920×1080 screenshots whole (6 × 2691 image tokens)."""
    budget_project(project, grammar.SMART_RESIZE_PIXELS)
    trace = full_hd_trace(project, grammar.SMART_RESIZE_PIXELS)
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=6,
        corrected_thought="Click Display.",
        corrected_action="click(start_box='(300,260)')",
    )
    out = tmp_path / "prm.zip"
    services.export_to_path(project=project, user=None, fmt="prm", options={"validation_fraction": 0}, out=out)
    archive = zipfile.ZipFile(out)
    record = json.loads(archive.read("data/prm/train-00000-of-00001.jsonl").decode().splitlines()[0])
    assert [name.endswith("-588x336.png") for name in record["images"]] == [True] * 4 + [False] * 2
    assert all(name in archive.namelist() for name in record["images"])
    # Step 2 acted on a screenshot sent reduced, step 5 on one sent whole: each point in its image's size.
    assert MIDDLE_REDUCED[grammar.SMART_RESIZE_PIXELS] in record["completions"][1]
    assert MIDDLE[grammar.SMART_RESIZE_PIXELS] in record["completions"][4]
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["tokens"]["longest"]["image_tokens"] == 4 * 252 + 2 * 2691


def test_prescoring_loads_a_reduced_screenshot_at_the_size_it_is_sent(project):
    from prescoring.services import image_inputs

    budget_project(project, grammar.RELATIVE_1000)
    trace = full_hd_trace(project, grammar.RELATIVE_1000)
    prompt = prompting.build_state_messages(trace, 6, project=project, steps=list(trace_steps(trace)))
    inputs = image_inputs(prompt)
    assert [image.load().size for image in inputs] == [(588, 336)] * 3 + [FULL_HD] * 2
    assert len({image.key for image in inputs}) == 5


def test_the_settings_form_refuses_a_budget_under_smart_resizes_minimum(project):
    data = {
        "name": project.name,
        "platform": project.platform,
        "coordinate_convention": project.coordinate_convention,
        "history_window": 5,
        "history_full_images": 2,
        "history_max_pixels": 1000,
        "error_categories": "\n".join(project.error_categories),
    }
    form = ProjectForm(data=data, instance=project)
    assert not form.is_valid() and "history_max_pixels" in form.errors
    form = ProjectForm(data={**data, "history_max_pixels": OLDER_PIXELS}, instance=project)
    assert form.is_valid(), form.errors
    assert form.settings()["history_full_images"] == 2


@pytest.mark.django_db
def test_the_project_api_sets_the_budget_by_the_forms_rules(project, lead, api_client):
    """The settings API takes the image budget as the page does (it refused the two fields as unknown)."""
    url = f"/api/projects/{project.pk}/"
    answer = api_client(lead).patch(url, {"history_full_images": 2, "history_max_pixels": 200_704}, format="json")
    assert answer.status_code == 200, answer.content
    project.refresh_from_db()
    assert (project.history_full_images, project.history_max_pixels) == (2, 200_704)
    refused = api_client(lead).patch(url, {"history_max_pixels": 10}, format="json")
    assert refused.status_code == 400 and "history_max_pixels" in json.dumps(refused.json())
