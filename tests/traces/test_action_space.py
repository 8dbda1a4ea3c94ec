"""The served action table is the single source: what the editor offers, what the
validator accepts in a correction and what the exported prompt lists agree on every platform; a correction follows
the prompt's rules (at most 3 lowercase known keys, a scroll with a direction)."""

from __future__ import annotations

import re

import pytest

from traces import grammar, prompting
from traces.models import Project

pytestmark = pytest.mark.django_db

EXAMPLES = {  # one valid correction of each type, in relative-1000 (the test project's convention)
    "click": "click(start_box='(500,500)')",
    "left_double": "left_double(start_box='(500,500)')",
    "right_single": "right_single(start_box='(500,500)')",
    "drag": "drag(start_box='(1,2)', end_box='(3,4)')",
    "hotkey": "hotkey(key='ctrl c')",
    "type": "type(content='hello\\n')",
    "scroll": "scroll(start_box='(500,500)', direction='down')",
    "wait": "wait()",
    "finished": "finished(content='ok')",
    "long_press": "long_press(start_box='(500,500)')",
    "open_app": "open_app(app_name='Settings')",
    "press_home": "press_home()",
    "press_back": "press_back()",
}


@pytest.mark.parametrize("platform", grammar.PLATFORMS)
def test_editor_validator_and_prompt_agree(platform, api_client, annotator):
    project = Project(name="p", platform=platform, box_tokens=True)
    in_prompt = re.findall(r"^(\w+)\(", prompting.action_space_text(project), re.M)
    table = api_client(annotator).get("/api/actions/table/").json()
    offered = table["targets"][platform]
    assert offered == list(dict.fromkeys(in_prompt))  # the editor offers exactly the prompt's action space
    for name, spec in grammar.ACTION_SPECS.items():
        if platform not in spec.platforms:
            continue
        example = EXAMPLES.get(name)
        if example is None:
            assert name not in offered, name
            continue
        problems = grammar.target_problems(grammar.parse_action(example), platform=platform)
        assert (not problems) == (name in offered), (name, problems)


def test_correction_rules_from_the_prompt():
    def problems(text, platform="desktop"):
        return grammar.target_problems(grammar.parse_action(text), platform=platform)

    assert problems("hotkey(key='ctrl alt shift t')") == ["4 keys in 'ctrl alt shift t': the prompt allows at most 3"]
    assert problems("hotkey(key='esc foo')") == ["unknown key 'foo'"]
    assert problems("hotkey(key='Ctrl C')") == ["keys must be lowercase: 'ctrl c', not 'Ctrl C'"]
    assert problems("scroll(start_box='(1,2)', end_box='(3,4)')", "mobile") == [
        "missing argument 'direction' for scroll"
    ]
    assert problems("swipe(start_box='(1,2)', end_box='(3,4)')", "mobile")[0].startswith("swipe is not in the mobile")
    assert problems("hotkey(key='ctrl shift t')") == []


def test_check_action_refuses_what_the_prompt_forbids(project, annotator, api_client, tmp_path):
    from tests.fixtures_annotation import make_traces

    make_traces(project, tmp_path, count=1, steps=3)
    pk = api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/").json()["annotation"]["id"]
    check = api_client(annotator).post(
        f"/api/annotations/{pk}/check-action/",
        {"slot": "corrected", "tau": 1, "action": {"type": "hotkey", "args": {"key": "ctrl alt shift t"}}},
        format="json",
    )
    assert not check.json()["valid"] and "at most 3" in check.json()["errors"][0]
    table = api_client(annotator).get("/api/actions/table/").json()
    scroll = next(a for a in table["actions"] if a["name"] == "scroll")
    assert {a["name"]: a["required_in_target"] for a in scroll["args"]}["direction"] is True
