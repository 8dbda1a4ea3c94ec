"""Hint labels for keyboard point placement, in Debian's Chromium at 1366×768: on a screen with 36 imported
elements, from the corner opposite the target, the hints key labels every element (nearest the cursor first), the
target's label typed puts the cursor on it and Enter places the point as a click on it would: ≤ 6 presses, checked in
the saved answer. On a screen without imported elements the same key labels the view's nine cells, and a cell then
an arrow an axis places the point within an eighth of the view of the target. Screenshots in test-artifacts/."""

from __future__ import annotations

import json

import pytest
from PIL import Image, ImageDraw

from tests.annotation.test_browser_correction_fits import correct_at_tau, open_workspace
from tests.annotation.test_browser_element_boxes import canonical_point, stored
from tests.annotation.test_browser_workspace import wait_saved
from tests.fixtures_annotation import import_folder, write_native_trace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]

VIEWPORT = (1366, 768)
# A 6 × 6 grid of buttons (relative-1000 boxes), as a dense settings screen; the source's click at the bottom right.
GRID = [[10 + 165 * c, 10 + 165 * r, 150 + 165 * c, 150 + 165 * r] for r in range(6) for c in range(6)]
RECORDED = (985, 985)


def write_dense_trace(folder):
    folder.mkdir(parents=True, exist_ok=True)
    steps = []
    for i in range(1, 4):
        image = Image.new("RGB", (1920, 1080), (40 + 20 * i, 60, 90))
        draw = ImageDraw.Draw(image)
        for n, box in enumerate(GRID):
            x1, y1, x2, y2 = box[0] * 1.92, box[1] * 1.08, box[2] * 1.92, box[3] * 1.08
            draw.rectangle([x1, y1, x2, y2], fill=(225, 228, 238))
            draw.text((x1 + 12, y1 + 12), f"Option {n + 1}", fill=(10, 10, 10))
        image.save(folder / f"s{i}.png")
        steps.append(
            {
                "screenshot": f"s{i}.png",
                "thought": f"Step {i}.",
                "action": f"click(start_box='({RECORDED[0]},{RECORDED[1]})')",
                "elements": [{"box": box, "label": f"Option {n + 1}"} for n, box in enumerate(GRID)],
            }
        )
    Image.new("RGB", (1920, 1080), (20, 120, 60)).save(folder / "final.png")
    document = {
        "format": "trace-studio/v1",
        "external_id": "dense",
        "instruction": "Pick the first option",
        "steps": steps,
        "final_screenshot": "final.png",
    }
    (folder / "trace.json").write_text(json.dumps(document))
    return folder


def labels_overlap(page) -> float:
    """The largest share of one label's area that another label covers, measured on the screen."""
    return page.evaluate(
        """() => {
        const r = [...document.querySelectorAll('.ws-overlay .ws-hint rect')].map((n) => n.getBoundingClientRect());
        let worst = 0;
        for (const a of r) for (const b of r) {
          if (a === b) continue;
          const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (w > 0 && h > 0) worst = Math.max(worst, (w * h) / (a.width * a.height));
        }
        return worst;
      }"""
    )


def test_any_imported_element_is_six_presses_away_from_the_far_corner(
    browser, live_server, project, annotator, tmp_path, artifacts_dir
):
    import_folder(project, write_dense_trace(tmp_path / "t"))
    context, page, errors = open_workspace(browser, live_server, annotator, VIEWPORT)
    correct_at_tau(page, 2)
    page.locator("#ws-step-label").click()  # nothing focused: the page's keys are live
    presses = ["p", "g"]  # the cursor starts on the recorded click, at the bottom right corner
    for key in presses:
        page.keyboard.press(key)
    hints = page.locator(".ws-overlay .ws-hint")
    assert hints.count() == len(GRID)
    labels = hints.evaluate_all("ns => ns.map((n) => [n.dataset.label, +n.dataset.element])")
    by_element = {element: label for label, element in labels}
    # The nearest element to the cursor gets a one-letter label; the farthest, top left, at most two letters.
    assert len(by_element[len(GRID) - 1]) == 1
    target = by_element[0]
    assert 1 <= len(target) <= 2
    # Readable: each label at least 12 px high on the screen, and none hides another by more than a quarter.
    heights = page.locator(".ws-overlay .ws-hint rect").evaluate_all(
        "ns => ns.map((n) => n.getBoundingClientRect().height)"
    )
    assert min(heights) >= 12, heights
    assert labels_overlap(page) < 0.25
    assert "Type an element's label" in page.inner_text("#ws-place-hint")
    page.screenshot(path=str(artifacts_dir / "keyboard-hints-1366.png"))

    for letter in target.upper():  # the label as the annotator reads it
        page.keyboard.press(letter)
        presses.append(letter)
    assert page.locator(".ws-overlay .ws-hint").count() == 0  # a label typed: the labels go
    assert page.locator(".ws-overlay .ws-element-hover").count() == 1  # the element reached is outlined
    page.keyboard.press("Enter")
    presses.append("Enter")
    assert len(presses) <= 6, presses
    # As a click on the element: its box is the target's, the point at the box's centre.
    page.wait_for_function(
        "() => document.querySelector(\"[data-canonical='corrected']\").innerText.includes('(80,80)')"
    )
    page.keyboard.press("Control+s")
    wait_saved(page)
    saved = stored(annotator)
    assert saved["target_box"] == GRID[0] and saved["args"]["start_box"] == [80, 80]
    print(f"\nhints: the farthest of {len(GRID)} elements in {len(presses)} presses: {' '.join(presses)}")

    # Esc closes the labels and leaves the cursor out; Backspace takes a typed letter back.
    page.keyboard.press("p")
    page.keyboard.press("g")
    two = next(label for label in by_element.values() if len(label) == 2)
    page.keyboard.press(two[0])
    assert 1 < page.locator(".ws-overlay .ws-hint").count() < len(GRID)  # those its first letter begins
    page.screenshot(path=str(artifacts_dir / "keyboard-hints-typed-1366.png"))
    page.keyboard.press("Backspace")
    assert page.locator(".ws-overlay .ws-hint").count() == len(GRID)
    page.keyboard.press("Escape")
    assert page.locator(".ws-overlay .ws-hint").count() == 0
    assert page.locator(".ws-overlay .ws-cursor").count() == 1
    page.keyboard.press("Escape")
    context.close()
    assert errors == []


def test_without_imported_elements_a_cell_then_halving_reaches_a_point(
    browser, live_server, project, annotator, tmp_path, artifacts_dir
):
    import_folder(project, write_native_trace(tmp_path / "t", steps=3, external_id="plain"))
    context, page, errors = open_workspace(browser, live_server, annotator, VIEWPORT)
    correct_at_tau(page, 2)
    page.locator("#ws-step-label").click()
    target = (900, 120)  # the top right, far from the recorded click (200,260)
    presses = ["g"]  # from the page: starts the cursor and shows the labels
    page.keyboard.press("g")
    cells = page.locator(".ws-overlay .ws-hint")
    assert cells.evaluate_all("ns => ns.map((n) => n.dataset.label)") == [str(n) for n in range(1, 10)]
    assert "Type a cell's number" in page.inner_text("#ws-place-hint")
    page.screenshot(path=str(artifacts_dir / "keyboard-hints-cells-1366.png"))
    for key in ["3", "ArrowRight", "ArrowUp", "Enter"]:  # the top right cell, then one halving an axis
        page.keyboard.press(key)
        presses.append(key)
    assert len(presses) <= 6
    page.wait_for_function(
        "() => /\\(\\d+,\\d+\\)/.test(document.querySelector(\"[data-canonical='corrected']\").innerText)"
    )
    x, y = canonical_point(page)
    assert abs(x - target[0]) <= 125 and abs(y - target[1]) <= 125, (x, y)
    page.keyboard.press("Control+s")
    wait_saved(page)
    assert stored(annotator)["args"]["start_box"] == [x, y]
    context.close()
    assert errors == []
