"""THE prompt builder, checked message by message against the UI-TARS layout (traces/prompting.py)."""

import pytest

from tests.fixtures_export import REPLIES, make_trace
from traces import prompting
from traces.selectors import trace_steps

BT = "<|box_start|>", "<|box_end|>"


def texts(prompt):
    return [(m.role, m.text if m.image_count == 0 else f"<{m.image_count} image>") for m in prompt.messages]


@pytest.mark.django_db
def test_state_layout_history_window_and_box_tokens(project):
    project.history_window = 2
    project.save()
    trace = make_trace(project, replies=REPLIES, external_id="t1")
    steps = list(trace_steps(trace))
    prompt = prompting.build_state_messages(trace, 4, project=project)

    instruction = prompting.instruction_text(project, trace.instruction)
    assert "{instruction}" not in instruction and "Open the display settings" in instruction
    assert "Use English in `Thought` part." in instruction
    assert f"click(start_box='{BT[0]}(x1,y1){BT[1]}')" in instruction
    assert texts(prompt) == [
        ("system", "You are a helpful assistant."),
        ("user", instruction),
        # history steps 1-2 older than the window (N=2: step 3's image + the current one): text only
        ("assistant", f"Thought: Open the start menu.\nAction: click(start_box='{BT[0]}(10,990){BT[1]}')"),
        ("assistant", "Thought: Type the query.\nAction: type(content='display\\n')"),
        ("user", "<1 image>"),
        ("assistant", f"Thought: Open the wrong item.\nAction: click(start_box='{BT[0]}(500,300){BT[1]}')"),
        ("user", "<1 image>"),
    ]
    assert [img.sha256 for img in prompt.images] == [steps[2].screenshot.sha256, steps[3].screenshot.sha256]


@pytest.mark.django_db
def test_first_state_final_state_and_no_box_tokens(project):
    project.box_tokens = False
    project.save()
    trace = make_trace(project, replies=REPLIES[:2], external_id="t2")
    first = prompting.build_state_messages(trace, 1, project=project)
    assert texts(first)[2:] == [("user", "<1 image>")]
    after_last = prompting.build_state_messages(trace, 3, project=project)
    assert after_last.images[-1].sha256 == trace.final_screenshot.sha256
    assert len(after_last.images) == 3  # N=5 covers all: o_1, o_2, final
    assert texts(after_last)[3] == ("assistant", "Thought: Open the start menu.\nAction: click(start_box='(10,990)')")
    assert "click(start_box='(x1,y1)')" in after_last.messages[1].text
    with pytest.raises(prompting.PromptError):
        prompting.build_state_messages(trace, 4, project=project)


@pytest.mark.django_db
def test_missing_observation_and_targets(project):
    trace = make_trace(project, replies=REPLIES[:1], external_id="t3", final=False)
    with pytest.raises(prompting.PromptError, match="no observation o_2"):
        prompting.build_state_messages(trace, 2, project=project)
    assert (
        prompting.render_target("Go back.", "press_back()", project=project)
        == "Thought: Go back.\nAction: press_back()"
    )
    assert (
        prompting.render_target("", "click(start_box='(1,2)')", project=project)
        == f"Action: click(start_box='{BT[0]}(1,2){BT[1]}')"
    )
    with pytest.raises(prompting.PromptError, match="does not parse"):
        prompting.render_target("x", "click(start_box=", project=project)


@pytest.mark.django_db
def test_chat_messages_placeholders_match_images(project):
    trace = make_trace(project, replies=REPLIES, external_id="t4")
    prompt = prompting.build_state_messages(trace, 3, project=project)
    chat = prompting.to_chat_messages(prompt)
    placeholders = sum(1 for m in chat for c in m["content"] if c["type"] == "image")
    assert placeholders == len(prompt.images) == 3
    assert chat[0] == {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]}


def test_a_project_starts_with_the_prompt_builders_defaults(db):
    """traces.models.Project reads its prompt defaults from prompting.PromptSettings (what scripts without Django
    pass instead of a project): the two cannot drift."""
    from dataclasses import fields

    from traces.models import Project

    project = Project(name="defaults")
    for setting in fields(prompting.PromptSettings):
        assert getattr(project, setting.name) == getattr(prompting.PROMPT_DEFAULTS, setting.name), setting.name


def test_the_prescoring_benchmark_builds_its_prompts_without_django():
    """bench/prescore.py runs where only torch and transformers are (a GPU machine): its prompts come from the one
    prompt builder with no Django settings and no Django import."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = (
        "import sys; sys.path[:0] = ['.', 'bench']; import prescore; "
        "requests = prescore.build_requests(3, 3, 5); "
        "assert len(requests) == 3 and len(requests[-1].images) == 3, requests; "
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')], 'django imported'"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}  # no DJANGO_SETTINGS_MODULE
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
