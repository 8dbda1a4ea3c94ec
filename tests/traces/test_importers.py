"""The source-format importers on real traces (dart-gui, ScreenAgent) and on a built OSWorld folder."""

from __future__ import annotations

import io
import json
from pathlib import Path

from django.core.management import call_command
from PIL import Image, ImageDraw

from traces.importers import ImportWarning, WarningCode, detect_format, iter_traces
from traces.models import ImportJob, Step, Trace
from traces.services import import_job_create, import_job_run

DART = Path("dart-gui/examples/osworld_trajectory")
SCREENAGENT = Path("screenagent/data/ScreenAgent/train")


def run_import(project, path: Path, fmt: str = "") -> ImportJob:
    job = import_job_create(
        project=project,
        user=None,
        upload_name=str(path),
        original_name=path.name,
        fmt=fmt,
        server_path=True,
        enqueue=False,
    )
    return import_job_run(job_id=job.pk)


def png(path: Path, label: str, size=(320, 200)) -> Path:
    image = Image.new("RGB", size, (240, 240, 240))
    ImageDraw.Draw(image).text((10, 10), label, fill=(0, 0, 0))
    image.save(path, format="PNG")
    return path


# --- UI-TARS chat messages (dart-gui) --------------------------------------------------------


def test_dart_gui_command_imports_15_parsed_steps(project, realtraces):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_traces", str(realtraces / DART), "--project", project.name, stdout=out, stderr=err)
    # 16 files, 12 distinct images (the screen did not change during some waits): stored once each.
    assert (
        "succeeded: 1 trace, 15 steps, 12 screenshots stored, 0 traces already present, 0 failed, 0 unparsed actions, 0 off-screen steps"
        in out.getvalue()
    )
    trace = Trace.objects.get(project=project)
    assert trace.source == "uitars-messages"
    assert trace.instruction == "Please rotate my figure to mirror it horizontally."
    assert "## User Instruction" in trace.metadata["prompt"]
    assert trace.metadata["coordinate_convention_hint"] == "screen-pixels"
    steps = list(trace.steps.order_by("index"))
    assert [s.index for s in steps] == list(range(1, 16))
    assert all(s.parsed_actions and not s.parse_error for s in steps)
    assert steps[0].parsed_actions[0] == {"type": "click", "args": {"start_box": [34, 546]}, "style": "box"}
    kinds = [s.parsed_actions[0]["type"] for s in steps]
    assert (kinds.count("click"), kinds.count("left_double"), kinds.count("wait")) == (7, 1, 7)
    assert all(s.screenshot.width == 1920 and s.screenshot.height == 1080 for s in steps)
    # image_0016 is the screen after the last action.
    assert trace.final_screenshot.sha256 == _sha(realtraces / DART / "image_0016.png")
    assert steps[14].screenshot.sha256 == _sha(realtraces / DART / "image_0015.png")
    assert trace.step_count == 15

    again = io.StringIO()
    call_command("import_traces", str(realtraces / DART), "--project", project.name, stdout=again, stderr=io.StringIO())
    assert "1 trace already present" in again.getvalue() and Trace.objects.count() == 1  # idempotent


def test_dart_gui_is_detected(realtraces):
    assert detect_format(realtraces / DART) == "uitars-messages"
    assert detect_format(realtraces / DART.parent) == "uitars-messages"


# --- ScreenAgent -----------------------------------------------------------------------------


def test_screenagent_sessions_import_with_47_action_steps(project, realtraces):
    job = run_import(project, realtraces / SCREENAGENT)
    assert job.status == "succeeded", job.message
    assert job.traces_imported == 7 and job.steps_imported == 47 and job.traces_failed == 0
    traces = Trace.objects.filter(project=project, source="screenagent")
    assert traces.count() == 7
    steps = Step.objects.filter(trace__project=project)
    assert steps.count() == 47
    # Every step has the human-corrected action in our grammar, ready for the annotation page.
    assert all(s.context.get("human_action_text") for s in steps)
    assert steps.exclude(human_edited_response="").count() > 30
    # Original replies whose JSON the model garbled are kept raw and flagged, never dropped.
    flagged = steps.exclude(parse_error="")
    assert 0 < flagged.count() < 20
    assert all(s.raw_response for s in flagged)
    assert job.unparsed_actions == flagged.count()

    session = traces.get(external_id="screenagent-b18c655c8160419fa2e4eabbd8348b0b")
    assert session.instruction == "Insert a circle"
    assert session.metadata["plans"] and session.metadata["evaluations"]
    assert session.metadata["coordinate_convention_hint"] == "screen-pixels"
    drags = [s for s in session.steps.all() if "drag(" in s.context["human_action_text"]]
    # ScreenAgent's move-then-drag becomes one drag from the move's point.
    assert drags[0].context["human_action_text"] == "drag(start_box='(320,316)', end_box='(492,428)')"
    # The sub-task evaluation before a step is its context.
    assert any(s.context.get("evaluations") for s in session.steps.all())

    db_session = traces.get(external_id="screenagent-db47783f2f9e4d5a90a93e0d448f2787")
    first = db_session.steps.get(index=1)
    assert first.context["plans"][0]["kind"] == "plan"  # the plan reply precedes the first action
    assert first.context["human_action_text"] == "click(start_box='(1006,72)')"
    assert first.screenshot.format == "JPEG" and first.screenshot.width == 1024


def test_screenagent_keys_and_text_map_to_our_grammar():
    from traces.importers.screenagent import convert_actions, render

    actions, cursor = convert_actions(
        [
            {
                "action_type": "MouseAction",
                "mouse_action_type": "click",
                "mouse_button": "right",
                "mouse_position": {"width": 5, "height": 6},
            },
            {"action_type": "KeyboardAction", "keyboard_action_type": "press", "keyboard_key": "Control_L+Return"},
            {"action_type": "KeyboardAction", "keyboard_action_type": "text", "keyboard_text": "it's"},
            {"action_type": "MouseAction", "mouse_action_type": "scroll_up", "scroll_repeat": 3},
            {"action_type": "WaitAction", "wait_time": 1},
        ],
        None,
    )
    assert render(actions) == (
        "right_single(start_box='(5,6)')\n\nhotkey(key='ctrl enter')\n\ntype(content='it\\'s')\n\n"
        "scroll(start_box='(5,6)', direction='up')\n\nwait()"
    )
    assert cursor == (5, 6)


# --- OSWorld result folder -------------------------------------------------------------------


def uitars_reply(thought: str, action: str) -> str:
    return f"Thought: {thought}\nAction: {action}"


def osworld_folder(
    base: Path, example_id: str, *, initial: bool, score: str = "1.0\n", instruction: str | None = None
) -> Path:
    folder = base / "chrome" / example_id
    folder.mkdir(parents=True)
    lines = [
        {
            "step_num": 1,
            "action_timestamp": "20250101@100000",
            "action": "pyautogui.click(100, 200)",
            "response": uitars_reply("Open the menu.", "click(start_box='(100,200)')"),
            "reward": 0,
            "done": False,
            "info": {},
            "screenshot_file": "step_1_20250101@100000.png",
        },
        # Two actions from one prediction: two lines with the same step_num, one step.
        {
            "step_num": 2,
            "action_timestamp": "20250101@100005",
            "action": "pyautogui.typewrite('abc')",
            "response": uitars_reply("Type and submit.", "type(content='abc')\n\nhotkey(key='enter')"),
            "reward": 0,
            "done": False,
            "info": {},
            "screenshot_file": "step_2_20250101@100005.png",
        },
        {
            "step_num": 2,
            "action_timestamp": "20250101@100006",
            "action": "pyautogui.press('enter')",
            "response": uitars_reply("Type and submit.", "type(content='abc')\n\nhotkey(key='enter')"),
            "reward": 0,
            "done": False,
            "info": {},
            "screenshot_file": "step_2_20250101@100006.png",
        },
        {
            "step_num": 3,
            "action_timestamp": "20250101@100010",
            "action": "DONE",
            "response": uitars_reply("Done.", "finished(content='ok')"),
            "reward": 1,
            "done": True,
            "info": {"done": True},
            "screenshot_file": "step_3_20250101@100010.png",
        },
    ]
    (folder / "traj.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    for line in lines:
        png(folder / line["screenshot_file"], line["screenshot_file"])
    if initial:
        png(folder / "step_0.png", "initial")
    (folder / "result.txt").write_text(score, encoding="utf-8")
    if instruction is not None:
        (folder.parent / f"{example_id}.json").write_text(json.dumps({"id": example_id, "instruction": instruction}))
    return folder


def test_osworld_folder_maps_after_action_screens_to_observations(project, tmp_path):
    results = tmp_path / "results"
    osworld_folder(results, "task-a", initial=False, instruction="Open the settings.")
    osworld_folder(results, "task-b", initial=True, score="0.0\n")
    assert detect_format(results) == "osworld"

    job = run_import(project, results)
    assert job.status == "succeeded", job.message
    assert job.traces_imported == 2 and job.steps_imported == 6 and job.unparsed_actions == 0

    a = Trace.objects.get(project=project, external_id__startswith="osworld-task-a")
    assert a.instruction == "Open the settings." and a.outcome == "success" and a.metadata["score"] == 1.0
    steps = list(a.steps.order_by("index"))
    assert len(steps) == 3
    # No initial screenshot: step 1 has no observation, and the warning says why.
    assert steps[0].screenshot is None
    assert any("no initial screenshot" in w and "task-a" in w for w in a.metadata["import_warnings"])
    # o_2 = the screen after action 1; o_3 = the screen after the last line of step 2.
    shots = {Path(s.screenshot.image.name).stem: s for s in steps[1:]}
    after = {
        name: _sha(tmp_path / "results/chrome/task-a" / name)
        for name in ("step_1_20250101@100000.png", "step_2_20250101@100006.png", "step_3_20250101@100010.png")
    }
    assert steps[1].screenshot.sha256 == after["step_1_20250101@100000.png"]
    assert steps[2].screenshot.sha256 == after["step_2_20250101@100006.png"]
    assert a.final_screenshot.sha256 == after["step_3_20250101@100010.png"]
    assert len(shots) == 2
    assert [x["type"] for x in steps[1].parsed_actions] == ["type", "hotkey"]
    assert steps[1].context["osworld"]["lines"] == [2, 3]
    assert steps[2].parsed_actions[0]["type"] == "finished"

    b = Trace.objects.get(project=project, external_id__startswith="osworld-task-b")
    assert b.outcome == "failure" and b.instruction == ""
    b_steps = list(b.steps.order_by("index"))
    assert b_steps[0].screenshot.sha256 == _sha(tmp_path / "results/chrome/task-b/step_0.png")
    assert any("instruction not found" in w for w in b.metadata["import_warnings"])
    assert not any("no initial screenshot" in w for w in b.metadata["import_warnings"])


def test_osworld_instruction_from_task_json_and_txt(tmp_path, settings):
    one = osworld_folder(tmp_path / "r1", "t1", initial=True)
    (one / "task.json").write_text(json.dumps({"instruction": "From task.json"}))
    two = osworld_folder(tmp_path / "r2", "t2", initial=True)
    (two / "instruction.txt").write_text("From the text file\n")
    [first] = list(iter_traces(tmp_path / "r1"))
    [second] = list(iter_traces(tmp_path / "r2"))
    assert first.instruction == "From task.json" and first.metadata["instruction_source"] == "task.json"
    assert second.instruction == "From the text file"


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


class TestMobileAgent:
    """Mobile-Agent v1 runs: phone screenshots, actions by OCR text (kept raw and flagged), hand-stopped failures."""

    def test_gmail_run_imports_with_text_clicks_flagged(self, project, realtraces):
        from traces.importers import detect_format, iter_traces

        root = realtraces / "mobile-agent-v1" / "results" / "Gmail" / "2"
        assert detect_format(root) == "mobile-agent"
        (trace,) = list(iter_traces(root))
        assert trace.outcome == "failure"  # stopped by hand: the last action is not "stop"
        assert len(trace.steps) == 9 and trace.final_screenshot is not None  # 10 images for 9 steps
        first = trace.steps[0]
        assert first.action_text == "open_app(app_name='Gmail')" and not first.parse_error
        clicks = [s for s in trace.steps if s.context["original_action"].startswith("click text")]
        assert clicks and all("not by coordinates" in s.parse_error for s in clicks)
        (missing,) = [
            w for w in trace.warnings if isinstance(w, ImportWarning) and w.code == WarningCode.INSTRUCTION_MISSING
        ]
        assert "instruction is not recorded" in missing.text

    def test_all_33_runs_import_and_keep_every_step(self, project, realtraces):
        from traces.services import import_job_create, import_job_run

        root = realtraces / "mobile-agent-v1" / "results"
        job = import_job_run(
            job_id=import_job_create(
                project=project, user=None, upload_name=str(root), server_path=True, enqueue=False, fmt="mobile-agent"
            ).pk
        )
        assert job.status == "succeeded", job.message
        assert job.traces_imported == 33 and job.steps_imported == 254
        steps = Step.objects.filter(trace__project=project)
        assert steps.filter(parse_error="").count() + steps.exclude(parse_error="").count() == 254
        assert steps.filter(parsed_actions__0__type="open_app").exists()
