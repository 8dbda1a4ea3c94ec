"""The studio's own demo data: Pillow-rendered screens and scripted UI-TARS traces (demo/).

The generator is pure Python + Pillow and imports no Django; the suite's conftest does, so run it as any test:
    .venv/bin/python -m pytest -q tests/serving/test_demo_generate.py
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from demo.generate import DemoTrace, preview_screens, write_demo_traces
from demo.scripts import (
    Act,
    action_points,
    build_scripts,
    format_action,
    from_rel,
)
from traces.vocabulary import ERROR_CATEGORIES

SEED = 7
SIZES = {"desktop": {(1920, 1080)}, "web": {(1280, 800), (1920, 1080)}, "mobile": {(1080, 2400)}}
ACTION_RE = re.compile(
    r"^(click|left_double|right_single|long_press|drag|scroll|hotkey|type|wait|finished|open_app|press_home|press_back)"
    r"\(.*\)$",
    re.S,
)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, list[DemoTrace]]:
    out = tmp_path_factory.mktemp("demo_a")
    return out, write_demo_traces(out, seed=SEED)


@pytest.fixture(scope="module")
def scripts():
    return build_scripts(SEED)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _load(trace: DemoTrace) -> dict:
    return json.loads((trace.folder / "trace.json").read_text(encoding="utf-8"))


def _assert_hits(screen, action: str, act: Act, where: str) -> None:
    points = action_points(action)
    assert len(points) == len(act.targets), f"{where}: {action}"
    for (xr, yr), (widget, _at) in zip(points, act.targets):
        assert 0 <= xr <= 1000 and 0 <= yr <= 1000, f"{where}: {action}"
        px, py = from_rel(xr, yr, screen.size)
        box = screen.box(widget)
        assert box.contains(px, py), f"{where}: {action} -> ({px:.0f},{py:.0f}) not in {widget} {box}"


def test_same_seed_gives_identical_bytes(generated, tmp_path):
    out_a, traces = generated
    out_b = tmp_path / "b"
    # leftovers of an earlier, longer run in the same folder must not survive a rewrite
    stale = out_b / traces[0].external_id / "step_042.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    write_demo_traces(out_b, seed=SEED)
    a, b = _tree(out_a), _tree(out_b)
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
    assert any(name.endswith(".png") for name in a) and any(name.endswith("trace.json") for name in a)


def test_trace_json_is_native_format(generated):
    out, traces = generated
    ids = [t.external_id for t in traces]
    assert len(set(ids)) == len(ids) >= 6
    for t in traces:
        data = _load(t)
        assert data["format"] == "trace-studio/v1"
        assert data["external_id"] == t.folder.name == t.external_id
        assert data["platform"] == t.platform in ("desktop", "mobile", "web")
        assert data["source"] == "demo"
        assert data["outcome"] in ("success", "failure", "unknown")
        assert data["instruction"].strip()
        assert data["metadata"]["seed"] == SEED and data["metadata"]["generator"] == "trace-studio demo"
        assert data["metadata"]["app"]
        assert 4 <= len(data["steps"]) <= 9
        for i, step in enumerate(data["steps"], start=1):
            assert set(step) == {"screenshot", "thought", "action"}
            assert step["screenshot"] == f"step_{i:03d}.png"
            assert (t.folder / step["screenshot"]).is_file()
            assert len(step["thought"]) > 20
            assert ACTION_RE.match(step["action"]), step["action"]
        if data["final_screenshot"] is not None:
            assert (t.folder / data["final_screenshot"]).is_file()
        pngs = {p.name for p in t.folder.glob("*.png")}
        expected = {s["screenshot"] for s in data["steps"]} | ({data["final_screenshot"]} - {None})
        assert pngs == expected
    assert {p.name for p in out.iterdir()} == set(ids)


def test_platform_mix_and_screenshot_sizes(generated):
    _, traces = generated
    platforms = [t.platform for t in traces]
    assert platforms.count("desktop") >= 3 and platforms.count("web") >= 1 and platforms.count("mobile") >= 2
    for t in traces:
        for png in t.folder.glob("*.png"):
            with Image.open(png) as im:
                assert im.size in SIZES[t.platform], (png, im.size)
                assert im.mode == "RGB"
                assert not im.info.get("dpi") and "Software" not in im.info


def test_step_actions_hit_their_widgets(generated, scripts):
    _, traces = generated
    by_id = {t.external_id: _load(t) for t in traces}
    for script in scripts:
        data = by_id[script.external_id]
        for i, step in enumerate(script.steps, start=1):
            screen = step.screen.render()
            action = format_action(step.act, screen)
            assert action == data["steps"][i - 1]["action"]  # what is on disk is what is checked here
            _assert_hits(screen, action, step.act, f"{script.external_id} step {i}")


@pytest.mark.parametrize("seed", [SEED, 123])
def test_annotation_actions_hit_their_widgets(seed):
    for script in build_scripts(seed):
        a = script.annotation
        if a is None:
            continue
        o_tau = script.steps[a.tau - 1].screen.render()
        o_next = script.screen_after(a.tau).render()
        ann = script.annotation_dict()
        _assert_hits(o_tau, ann["corrected_action"], a.corrected_act, f"{script.external_id} correction")
        _assert_hits(o_next, ann["reflection_action"], a.reflection_act, f"{script.external_id} reflection")
        wrong = script.steps[a.tau - 1]
        assert wrong.wrong and sum(s.wrong for s in script.steps) == 1
        assert ann["corrected_action"] != format_action(wrong.act, o_tau)


def test_annotations(generated):
    _, traces = generated
    errors = [t for t in traces if t.annotation and t.annotation["verdict"] == "error"]
    clean = [t for t in traces if t.annotation == {"verdict": "no_error"}]
    assert len(errors) >= 4 and len(clean) >= 1
    assert len(errors) + len(clean) == len(traces)
    last_step_errors = 0
    for t in errors:
        a, data = t.annotation, _load(t)
        n = len(data["steps"])
        assert set(a) == {
            "verdict",
            "tau",
            "error_category",
            "note",
            "corrected_thought",
            "corrected_action",
            "reflection_thought",
            "reflection_action",
        }
        assert 1 <= a["tau"] <= n
        assert a["error_category"] in ERROR_CATEGORIES
        for key in ("note", "corrected_thought", "reflection_thought"):
            assert len(a[key]) > 20
        for key in ("corrected_action", "reflection_action"):
            assert ACTION_RE.match(a[key]), a[key]
        if a["tau"] == n:  # the post-reflection is written on the final screenshot
            last_step_errors += 1
            assert data["final_screenshot"] == "final.png"
    assert last_step_errors >= 1
    assert len({t.annotation["error_category"] for t in errors}) >= 3


def test_every_screen_kind_renders_with_sane_widgets():
    screens = preview_screens(SEED)
    kinds = {s.kind for s in screens.values()}
    assert kinds == {"settings", "files", "web", "phone"}
    for name, s in screens.items():
        w, h = s.size
        assert s.widgets, name
        for wname, box in s.widgets.items():
            assert box.w > 0 and box.h > 0, (name, wname)
            assert 0 <= box.center[0] < w and 0 <= box.center[1] < h, (name, wname, box)


def test_demo_package_does_not_import_django():
    code = (
        "import sys, demo.generate, demo.scripts, demo.screens; "
        "bad = [m for m in sys.modules if m == 'django' or m.startswith('django.')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


class _OneBoxScreen:
    """A 1000×1000 screen whose every widget is hit at a fixed pixel, so the test picks the half-way point."""

    size = (1000, 1000)

    def __init__(self, pixel: tuple[float, float]) -> None:
        self._pixel = pixel

    def box(self, name: str) -> _OneBoxScreen:
        return self

    def point(self, *at: float) -> tuple[float, float]:
        return self._pixel


def test_demo_actions_are_rendered_by_the_grammar_ties_to_even_and_escaped() -> None:
    # A second renderer came back before (its own rounding, a \r written raw): the demo rounds as the grammar does,
    # model_number's ties to even (12.5 -> 12, 13.5 -> 14).
    from traces import grammar

    click = format_action(Act("click", target="any"), _OneBoxScreen((12.5, 13.5)))  # type: ignore[arg-type]
    assert click == grammar.render_action(grammar.Action("click", ((grammar.START_BOX, (12, 14)),)))
    assert "(12,14)" in click

    text = "line one\r\nline 'two'"
    typed = format_action(Act("type", content=text), _OneBoxScreen((0, 0)))  # type: ignore[arg-type]
    assert typed == grammar.render_action(grammar.Action("type", (("content", text),)))
    assert "\\r\\n" in typed and "\r" not in typed
    assert grammar.parse_action(typed).args == (("content", text),)
