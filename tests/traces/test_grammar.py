"""Tests for traces.grammar: grammar round trips, real traces, ui-tars cross-check, conventions."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from traces.grammar import (
    ACTION_SPECS,
    BOX_END,
    BOX_START,
    CONVENTIONS,
    DIRECTIONS,
    RELATIVE_1000,
    SCREEN_PIXELS,
    SMART_RESIZE_PIXELS,
    STYLES,
    Action,
    ActionSyntaxError,
    action_table_json,
    convert_action,
    from_screen_pixels,
    parse_action,
    parse_actions,
    parse_response,
    render_action,
    render_response,
    smart_resize,
    to_screen_pixels,
    validate_action,
)

# ACTIONS_MAX_EXAMPLES=5000 for a deeper local run; 200 keeps the suite fast.
MAX_EXAMPLES = int(os.environ.get("ACTIONS_MAX_EXAMPLES", "200"))
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------------------
# Real traces (read in place, never copied)


def realtraces_dir() -> Path:
    # The one setting every test reads (STUDIO_REALTRACES_DIR); no second environment variable.
    from django.conf import settings as django_settings

    return Path(django_settings.REALTRACES_DIR)


def dart_gui_responses() -> list[str]:
    path = realtraces_dir() / "dart-gui" / "examples" / "osworld_trajectory" / "final_messages.json"
    if not path.is_file():
        pytest.skip(f"real traces not found at {path}")
    out = []
    for msg in json.loads(path.read_text(encoding="utf-8")):
        if msg.get("role") != "assistant":
            continue
        content = msg["content"]
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if part.get("type") == "text")
        out.append(content)
    return out


def test_dart_gui_real_responses_parse():
    responses = dart_gui_responses()
    assert len(responses) == 15
    seen = set()
    for text in responses:
        r = parse_response(text)
        assert len(r.actions) == 1
        a = r.actions[0]
        seen.add(a.type)
        expected_thought = text[len("Thought: ") : text.index("\nAction:")].strip()
        assert r.thought == expected_thought and r.thought
        assert r.reflection is None and r.think is None
        assert r.action_text == text.split("\nAction: ", 1)[1]
        if a.type in ("click", "left_double"):
            x, y = a.point("start_box")
            assert isinstance(x, int) and isinstance(y, int)
        # The real strings are already canonical: rendering reproduces them byte for byte.
        assert render_action(a) == r.action_text
        assert render_response(r.thought, r.actions) == text
    assert seen == {"click", "left_double", "wait"}


def test_dart_gui_matches_ui_tars():
    responses = dart_gui_responses()
    import ui_tars.action_parser as ui  # a test dependency: missing means broken, not skipped

    for text in responses:
        # ui-tars cannot read box tokens (float('<|box_start|>177') fails): strip them for it.
        plain = text.replace(BOX_START, "").replace(BOX_END, "")
        _assert_agrees_with_ui_tars(ui, plain, parse_response(text))


# --------------------------------------------------------------------------------------
# Strategies

ints = st.integers(-50, 5000)
floats3 = st.integers(-50_000, 5_000_000).map(lambda n: n / 1000)
coord = st.one_of(ints, floats3)
point = st.tuples(coord, coord)
nasty_text = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(list("'\"\\\n\r\t(),= <>|[]"))),
    max_size=40,
)
duration = st.one_of(st.integers(0, 60), st.integers(0, 60_000).map(lambda n: n / 1000))


def value_for(kind: str):
    return {
        "point": point,
        "text": nasty_text,
        "keys": nasty_text,
        "direction": st.sampled_from(DIRECTIONS),
        "duration": duration,
    }[kind]


@st.composite
def actions(draw, style=None, names=None, value=value_for):
    spec = ACTION_SPECS[draw(st.sampled_from(sorted(names or ACTION_SPECS)))]
    args = {}
    for a in spec.args:
        if a.required or draw(st.booleans()):
            args[a.name] = draw(value(a.kind))
    if spec.require_any and not any(n in args for n in spec.require_any):
        n = spec.require_any[0]
        args[n] = draw(value(spec.arg(n).kind))
    return Action(spec.name, tuple(args.items()), style or draw(st.sampled_from(STYLES)))


def _num(v) -> str:
    return str(v) if isinstance(v, int) else repr(v)


def _dq(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'


@st.composite
def alternative_spelling(draw, a: Action) -> str:
    """Another valid way to write ``a``: other coordinate spellings, quotes, spacing, aliases."""
    has_end = a.point("end_box") is not None
    parts = []
    for k, v in a.args:
        kind = ACTION_SPECS[a.type].arg(k).kind
        if kind == "point":
            x, y = _num(v[0]), _num(v[1])
            val = draw(
                st.sampled_from(
                    [
                        f"'{BOX_START}({x},{y}){BOX_END}'",
                        f"'({x}, {y})'",
                        f"'[{x}, {y}, {x}, {y}]'",
                        f"'<point>{x} {y}</point>'",
                        f'"<bbox>{x} {y} {x} {y}</bbox>"',
                        f"({x},{y})",  # unquoted
                    ]
                )
            )
            if a.style == "point":
                names = {"start_box": ["start_point"] + ([] if has_end else ["point"]), "end_box": ["end_point"]}[k]
                name = draw(st.sampled_from(names))
            else:
                name = k
        elif kind == "duration":
            name, val = k, draw(st.sampled_from([_num(v), f"'{_num(v)}'", f'"{_num(v)}"']))
        elif kind == "direction":
            name, val = k, draw(st.sampled_from([f"'{v}'", f'"{v.upper()}"', v]))
        else:
            name = k
            if kind == "keys" and draw(st.booleans()):
                name = ACTION_SPECS[a.type].arg(k).aliases[0]
            val = draw(
                st.sampled_from(
                    [_dq(v), render_action(Action("finished", {"content": v}))[len("finished(content=") : -1]]
                )
            )
        sp = draw(st.sampled_from(["", " ", "  "]))
        parts.append(f"{name}{sp}={sp}{val}")
    draw(st.randoms()).shuffle(parts)
    sep = draw(st.sampled_from([", ", ",", " ,  "]))
    trailing = draw(st.sampled_from(["", ",", ", "])) if parts else ""
    return f"{a.type}({sep.join(parts)}{trailing})"


# --------------------------------------------------------------------------------------
# Round-trip properties


@SETTINGS
@given(actions(), st.booleans())
def test_render_parse_roundtrip(a, box_tokens):
    s = render_action(a, box_tokens=box_tokens)
    b = parse_action(s)
    assert b == a
    assert b.style == a.style
    assert render_action(b, box_tokens=box_tokens) == s  # canonical / idempotent


@SETTINGS
@given(actions(style="point"))
def test_point_style_roundtrip(a):
    s = render_action(a)
    if a.point("start_box") is not None:
        assert "<point>" in s and BOX_START not in s and "start_box" not in s
    assert parse_action(s) == a
    assert render_action(parse_action(s)) == s


@SETTINGS
@given(st.data())
def test_alternative_spellings_render_canonically(data):
    a = data.draw(actions())
    alt = data.draw(alternative_spelling(a))
    b = parse_action(alt)
    assert b == a, alt
    assert render_action(b) == render_action(a)


@SETTINGS
@given(actions())
def test_json_roundtrip(a):
    d = a.to_json()
    assert json.loads(json.dumps(d)) == d
    assert Action.from_json(json.loads(json.dumps(d))) == a


@SETTINGS
@given(st.lists(actions(), min_size=1, max_size=3), st.text(alphabet="abc XYZ.,'\"", max_size=30))
def test_response_roundtrip(acts, thought):
    thought = thought.strip()
    s = render_response(thought, acts)
    r = parse_response(s)
    assert r.actions == acts
    assert r.thought == thought
    assert parse_actions(r.action_text) == acts


def test_render_examples():
    assert (
        render_action(Action("click", {"start_box": (34, 546)}))
        == "click(start_box='<|box_start|>(34,546)<|box_end|>')"
    )
    assert render_action(Action("click", {"start_box": (34, 546)}), box_tokens=False) == "click(start_box='(34,546)')"
    assert (
        render_action(Action("drag", {"start_box": (1, 2), "end_box": (3, 4)}))
        == "drag(start_box='<|box_start|>(1,2)<|box_end|>', end_box='<|box_start|>(3,4)<|box_end|>')"
    )
    assert render_action(Action("type", {"content": "it's\n"})) == "type(content='it\\'s\\n')"
    assert render_action(Action("type", {"content": "a\\b"})) == "type(content='a\\\\b')"
    assert render_action(Action("hotkey", {"key": "ctrl c"})) == "hotkey(key='ctrl c')"
    assert (
        render_action(Action("scroll", {"direction": "down", "start_box": (5, 6)}), box_tokens=False)
        == "scroll(start_box='(5,6)', direction='down')"
    )
    assert render_action(Action("wait")) == "wait()"
    assert render_action(Action("finished", {"content": "done"})) == "finished(content='done')"
    assert render_action(Action("click", {"start_box": (200, 300)}, "point")) == "click(point='<point>200 300</point>')"
    assert (
        render_action(Action("drag", {"start_box": (1, 2), "end_box": (3, 4)}, "point"))
        == "drag(start_point='<point>1 2</point>', end_point='<point>3 4</point>')"
    )
    # Floats: up to 3 decimals, trailing zeros stripped; integral floats print like ints.
    assert (
        render_action(Action("click", {"start_box": (175.90062, 12.5)}), box_tokens=False)
        == "click(start_box='(175.901,12.5)')"
    )
    assert render_action(Action("click", {"start_box": (3.0, -0.0)}), box_tokens=False) == "click(start_box='(3,0)')"
    assert (
        render_response(
            "Look.", [Action("click", {"start_box": (1, 2)}), Action("hotkey", {"key": "ctrl v"})], box_tokens=False
        )
        == "Thought: Look.\nAction: click(start_box='(1,2)')\n\nhotkey(key='ctrl v')"
    )
    assert render_response("", Action("wait")) == "Action: wait()"
    assert render_response("S", Action("wait"), reflection="R") == "Reflection: R\nAction_Summary: S\nAction: wait()"


# --------------------------------------------------------------------------------------
# Parsing details


@pytest.mark.parametrize(
    "text, expected",
    [
        ("click(start_box='<|box_start|>(34,546)<|box_end|>')", (34, 546)),
        ("click(start_box='(177,549)')", (177, 549)),
        ("click(start_box='[10, 20, 30, 41]')", (20, 30.5)),
        ("click(start_box='(10,20,30,40)')", (20, 30)),
        ("click(point='<point>200 300</point>')", (200, 300)),
        ("click(start_point='<point>1.5 2.25</point>')", (1.5, 2.25)),
        ('click(start_box="(1,2)")', (1, 2)),
        ("click(start_box=(1,2))", (1, 2)),
        ("click( start_box = '( 1 , 2 )' , )", (1, 2)),
        ("click(start_box=<|box_start|>(7,8)<|box_end|>)", (7, 8)),
    ],
)
def test_coordinate_spellings(text, expected):
    a = parse_action(text)
    assert a.type == "click"
    assert a.point("start_box") == expected


def test_point_style_remembered():
    assert parse_action("click(point='<point>1 2</point>')").style == "point"
    assert parse_action("click(start_box='<point>1 2</point>')").style == "box"
    assert parse_action("click(point='(1,2)')").style == "point"
    assert parse_action("wait()").style == "box"


def test_type_content_tokenizer():
    a = parse_action(r"""type(content='it\'s (a), b=\"c\"\nnext')""")
    assert a.get("content") == 'it\'s (a), b="c"\nnext'
    # An unescaped quote that cannot end the string is literal (ui-tars accepts this too).
    assert parse_action("type(content='it's')").get("content") == "it's"
    assert parse_action("type(content=\"say 'hi'\")").get("content") == "say 'hi'"
    assert parse_action("type(content='')").get("content") == ""
    assert parse_action("type(content=hello)").get("content") == "hello"
    # Unknown escapes keep their backslash, as in Python.
    assert parse_action(r"type(content='C:\Users\d')").get("content") == "C:\\Users\\d"
    # Literal newline inside quotes is kept.
    assert parse_action("type(content='a\nb')").get("content") == "a\nb"
    # web grounding: type with a target
    a = parse_action("type(content='', start_box='(1,2)')")
    assert a.args == (("content", ""), ("start_box", (1, 2)))


def test_other_actions_and_aliases():
    assert parse_action("hotkey(hotkey='ctrl c')") == Action("hotkey", {"key": "ctrl c"})
    assert parse_action("press(press='enter')") == Action("press", {"key": "enter"})
    assert parse_action("scroll(start_box='(1,2)', direction='DOWN')").get("direction") == "down"
    assert parse_action("scroll(direction='up')") == Action("scroll", {"direction": "up"})
    assert parse_action("scroll(start_box='(1,2)', end_box='(1,9)')").point("end_box") == (1, 9)
    assert parse_action("long_press(start_box='(1,2)', time='')") == Action("long_press", {"start_box": (1, 2)})
    assert parse_action("long_press(start_box='(1,2)', time=2)").get("time") == 2
    assert parse_action("open_app(app_name='Settings')").get("app_name") == "Settings"
    for name in ("wait", "call_user", "press_home", "press_back", "finished"):
        assert parse_action(f"{name}()") == Action(name)
    assert parse_action("Action: wait()") == Action("wait")


def test_parse_response_variants():
    r = parse_response(
        "<think>\nsecret reasoning\n</think>\nThought: Open it.\nAction: click(point='<point>1 2</point>')"
    )
    assert (r.think, r.thought) == ("secret reasoning", "Open it.")
    assert r.actions[0].style == "point"
    r = parse_response("<think>draft:\nAction: wait()</think>Thought: t\nAction: finished()")
    assert (r.think, r.thought, r.actions) == ("draft:\nAction: wait()", "t", [Action("finished")])
    r = parse_response("only the closing tag</think>\nAction: wait()")
    assert (r.think, r.thought) == ("only the closing tag", "")
    with pytest.raises(ActionSyntaxError, match="unterminated <think> at position 1"):
        parse_response(" <think>Action: wait()")

    r = parse_response("Reflection: I clicked the wrong tab.\nAction_Summary: Go back.\nAction: press_back()")
    assert (r.reflection, r.action_summary, r.thought) == ("I clicked the wrong tab.", "Go back.", "Go back.")

    r = parse_response("Action_Summary: Wait a bit.\nAction: wait()")
    assert (r.reflection, r.action_summary, r.thought) == (None, "Wait a bit.", "Wait a bit.")

    r = parse_response("Action: click(start_box='(1,2)')")
    assert r.thought == "" and r.actions == [Action("click", {"start_box": (1, 2)})]

    r = parse_response(
        "Thought: The Action: menu is open.\nAction: click(start_box='(1,2)')\n\n\nhotkey(key='ctrl v')\n"
    )
    assert r.thought == "The Action: menu is open."
    assert [a.type for a in r.actions] == ["click", "hotkey"]
    assert r.action_text == "click(start_box='(1,2)')\n\n\nhotkey(key='ctrl v')"

    r = parse_response("Thought: multi\nline thought\nAction: type(content='Action: x\\n')")
    assert r.thought == "multi\nline thought"
    assert r.actions[0].get("content") == "Action: x\n"

    r = parse_response("Thought: one line Action: wait()")
    assert r.thought == "one line" and r.actions == [Action("wait")]

    assert parse_response("click(start_box='(3,4)')").actions[0].point() == (3, 4)


# --------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "text, message, position",
    [
        ("clik(start_box='(1,2)')", "unknown action 'clik'", 0),
        ("click()", "missing argument 'start_box' for click", 0),
        ("click(start_box='(12,)')", "malformed coordinates '(12,)'", 16),
        ("click(start_box='(a,b)')", "malformed coordinates '(a,b)'", 16),
        ("click(start_box='<|box_start|>(1,2)')", "malformed coordinates '<|box_start|>(1,2)'", 16),
        ("wait(foo='x')", "unexpected argument 'foo' for wait", 5),
        ("click(start_box='(1,2)', foo=1)", "unexpected argument 'foo' for click", 25),
        ("click(start_box='(1,2)'", "unbalanced parentheses: missing ')' for click", 5),
        ("type(content='abc)", "unbalanced quotes: unterminated string", 13),
        ("type(content=a'b)", "unexpected quote in unquoted value of 'content'", 14),
        ("click(start_box=(1,2)", "unbalanced parentheses: missing ')' for click", 5),
        ("click(start_box=(1,2])", "unbalanced brackets in value of 'start_box'", 20),
        ("click(start_box=((1,2)", "unbalanced brackets in value of 'start_box'", 16),
        (
            "scroll(start_box='(1,2)', direction='sideways')",
            "bad direction 'sideways' for scroll (expected one of up, down, left, right)",
            36,
        ),
        ("scroll(start_box='(1,2)')", "missing argument 'direction' for scroll", 0),
        ("click(start_box='(1,2)', start_box='(3,4)')", "duplicate argument 'start_box' for click", 25),
        (
            "drag(start_box='(1,2)', end_point='<point>3 4</point>')",
            "mixed coordinate styles ('start_box' and 'end_point') for drag",
            24,
        ),
        ("click('(1,2)')", "expected an argument name (name='value'), found ''(1,2)')'", 6),
        ("click(start_box)", "expected '=' after argument 'start_box'", 15),
        ("click", "expected '(' after 'click'", 5),
        ("click(start_box='(1,2)') junk", "unknown action 'junk'", 25),
        ("long_press(start_box='(1,2)', time='soon')", "malformed duration 'soon'", 35),
        ("hotkey(key='a' key='b')", "expected ',' or ')' after argument 'key', found 'key='b')'", 15),
        (
            "click(start_box='(1,2)' end_box='(3,4)')",
            "expected ',' or ')' after argument 'start_box', found 'end_box='(3,4)')'",
            24,
        ),
    ],
)
def test_syntax_errors(text, message, position):
    with pytest.raises(ActionSyntaxError) as ei:
        parse_actions(text)
    e = ei.value
    assert (e.message, e.position) == (message, position)
    assert str(e) == f"{message} at position {position}"


def test_error_positions_in_response_are_absolute():
    text = "Thought: hm\nAction: click(start_box='(12,)')"
    with pytest.raises(ActionSyntaxError) as ei:
        parse_response(text)
    assert ei.value.position == text.index("'(12,)'")
    with pytest.raises(ActionSyntaxError, match="missing 'Action:'"):
        parse_response("Thought: no action here")
    with pytest.raises(ActionSyntaxError, match="expected an action after 'Action:'"):
        parse_response("Thought: x\nAction:   ")
    with pytest.raises(ActionSyntaxError, match="expected a single action, found 2 at position 8"):
        parse_action("wait()\n\nwait()")
    with pytest.raises(ActionSyntaxError, match="expected an action at position 0"):
        parse_action("")


# --------------------------------------------------------------------------------------
# Cross-check with the PyPI ui-tars package


def _assert_agrees_with_ui_tars(ui, text: str, ours, width: int = 1920, height: int = 1080):
    theirs = ui.parse_action_to_structure_output(
        text, factor=1000, origin_resized_height=height, origin_resized_width=width, model_type="qwen2vl"
    )
    assert len(theirs) == len(ours.actions)
    for t, a in zip(theirs, ours.actions):
        assert t["action_type"] == a.type
        assert (t["thought"] or "") == ours.thought
        for k, v in a.args:
            if isinstance(v, tuple):
                box = ast.literal_eval(t["action_inputs"][k])
                assert box[0] == pytest.approx(v[0] / 1000, abs=1e-9)
                assert box[1] == pytest.approx(v[1] / 1000, abs=1e-9)
            elif v != "":  # ui-tars drops empty parameters and keeps numbers as text
                assert t["action_inputs"][k] == (v if isinstance(v, str) else str(v))


# ui-tars has known blind spots (text after "Action: " is split naively, content is
# left-stripped, ')' in type content ends its regex, <point> must be ints, type+start_box
# fails): keep generated strings inside what it can read.
_ui_text = st.text(alphabet="abcdefXYZ 0123456789.,!?'\"(\n", min_size=1, max_size=20).filter(
    lambda s: not s[0].isspace()
)
_ui_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=12).filter(lambda s: not s[0].isspace())


def _ui_value(kind):
    return {
        "point": st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
        "text": _ui_text,
        "keys": _ui_keys,
        "direction": st.sampled_from(DIRECTIONS),
        "duration": st.integers(1, 5),
    }[kind]


_UI_NAMES = [
    "click",
    "left_double",
    "right_single",
    "drag",
    "hotkey",
    "scroll",
    "wait",
    "finished",
    "call_user",
    "long_press",
    "open_app",
    "press_home",
    "press_back",
    "hover",
    "left_single",
    "swipe",
]


@st.composite
def _ui_action(draw, style):
    if draw(st.integers(0, 4)) == 0:  # type without start_box (ui-tars' regex needs that)
        return Action("type", {"content": draw(_ui_text)}, style)
    a = draw(actions(style=style, names=_UI_NAMES, value=_ui_value))
    if a.type == "scroll" and a.get("direction") is None:
        assume(False)
    return a


@settings(max_examples=max(MAX_EXAMPLES * 3 // 4, 1), deadline=None)
@given(st.data(), st.sampled_from(STYLES), st.text(alphabet="abc XYZ.,", min_size=1, max_size=30))
def test_generated_strings_match_ui_tars(data, style, thought):
    import ui_tars.action_parser as ui  # a test dependency: missing means broken, not skipped

    acts = data.draw(st.lists(_ui_action(style), min_size=1, max_size=3))
    thought = thought.strip() or "x"
    text = render_response(thought, acts, box_tokens=False)
    ours = parse_response(text)
    assert ours.actions == acts
    _assert_agrees_with_ui_tars(ui, text, ours)


def test_reflection_layout_matches_ui_tars():
    import ui_tars.action_parser as ui  # a test dependency: missing means broken, not skipped

    text = "Reflection: wrong tab\nAction_Summary: go back\nAction: click(start_box='(10,20)')"
    theirs = ui.parse_action_to_structure_output(text, 1000, 1080, 1920, model_type="qwen2vl")[0]
    ours = parse_response(text)
    assert (theirs["reflection"], theirs["thought"]) == (ours.reflection, ours.thought)


def test_smart_resize_matches_ui_tars():
    import ui_tars.action_parser as ui  # a test dependency: missing means broken, not skipped

    sizes = [(h, w) for h in range(1, 4200, 61) for w in range(1, 4200, 67)]
    sizes += [(1080, 1920), (768, 1024), (1170, 540), (2160, 3840), (4320, 7680), (28, 28), (1, 1), (10, 2000)]
    budgets = [
        {},
        {"max_pixels": 2700 * 28 * 28},
        {"max_pixels": 5120 * 28 * 28},
        {"min_pixels": 3136, "max_pixels": 1003520},
    ]
    for kw in budgets:
        for h, w in sizes:
            try:
                expected = ui.smart_resize(h, w, **kw)
            except ValueError:
                with pytest.raises(ValueError):
                    smart_resize(h, w, **kw)
                continue
            assert smart_resize(h, w, **kw) == expected, (h, w, kw)
    assert smart_resize(1080, 1920) == (1092, 1932)


# --------------------------------------------------------------------------------------
# Conventions


def test_readme_examples():
    px = to_screen_pixels((235, 512), convention=RELATIVE_1000, width=1920, height=1080)
    assert (round(px[0]), round(px[1])) == (451, 553)
    assert from_screen_pixels((451, 553), convention=RELATIVE_1000, width=1920, height=1080) == (235, 512)
    px = to_screen_pixels((177, 549), convention=SMART_RESIZE_PIXELS, width=1920, height=1080)
    assert px == pytest.approx((175.9, 542.97), abs=0.01)
    assert from_screen_pixels(px, convention=SMART_RESIZE_PIXELS, width=1920, height=1080) == (177, 549)
    assert to_screen_pixels((3, 4), convention=SCREEN_PIXELS, width=1920, height=1080) == (3.0, 4.0)
    # Every convention gives the integers a model emits, ties to even: 4.25 -> 4, 6.5 -> 6, 7.5 -> 8.
    assert from_screen_pixels((3, 4.25), convention=SCREEN_PIXELS, width=1920, height=1080) == (3, 4)
    assert from_screen_pixels((6.5, 7.5), convention=SCREEN_PIXELS, width=1920, height=1080) == (6, 8)
    # A smaller pixel budget changes the resized grid and therefore the mapping.
    small = to_screen_pixels((177, 549), convention=SMART_RESIZE_PIXELS, width=1920, height=1080, max_pixels=1003520)
    assert small != px


def test_convention_errors():
    with pytest.raises(ValueError):
        to_screen_pixels((1, 2), convention="pixels", width=10, height=10)
    with pytest.raises(ValueError):
        to_screen_pixels((1, 2), convention=RELATIVE_1000, width=0, height=10)


# Up to 1920 px wide: one relative-1000 step is then at most 1.92 px, so its rounding stays
# within 1 px (no convention can do better than half its own step).
SCREENS = [(1920, 1080), (1280, 720), (1024, 768), (540, 1170), (1366, 768), (800, 600), (1080, 1920)]


@SETTINGS
@given(st.sampled_from(SCREENS), st.integers(0, 1000), st.integers(0, 1000))
def test_model_conventions_roundtrip_exactly(screen, x, y):
    w, h = screen
    for conv in (RELATIVE_1000, SMART_RESIZE_PIXELS):
        px = to_screen_pixels((x, y), convention=conv, width=w, height=h)
        assert from_screen_pixels(px, convention=conv, width=w, height=h) == (x, y)


@SETTINGS
@given(
    st.sampled_from(SCREENS),
    st.floats(0, 1, allow_nan=False),
    st.floats(0, 1, allow_nan=False),
    st.sampled_from(CONVENTIONS),
    st.sampled_from(CONVENTIONS),
)
def test_roundtrip_between_conventions_within_1px(screen, fx, fy, src, dst):
    w, h = screen
    px = Action("drag", {"start_box": (round(fx * (w - 1)), round(fy * (h - 1))), "end_box": (0, h - 1)})
    a = convert_action(px, src=SCREEN_PIXELS, dst=src, width=w, height=h)  # what a model would emit
    back = convert_action(convert_action(a, src=src, dst=dst, width=w, height=h), src=dst, dst=src, width=w, height=h)
    for name in ("start_box", "end_box"):
        p0 = to_screen_pixels(a.point(name), convention=src, width=w, height=h)
        p1 = to_screen_pixels(back.point(name), convention=src, width=w, height=h)
        assert abs(p0[0] - p1[0]) <= 1 and abs(p0[1] - p1[1]) <= 1, (name, p0, p1)
        # and the first conversion itself lands within 1 px of the original pixel
        p2 = to_screen_pixels(px.point(name), convention=SCREEN_PIXELS, width=w, height=h)
        assert abs(p0[0] - p2[0]) <= 1 and abs(p0[1] - p2[1]) <= 1
    assert back.type == a.type and back.style == a.style


def test_convert_action_keeps_other_args():
    a = Action("scroll", {"start_box": (500, 500), "direction": "up"}, "point")
    b = convert_action(a, src=RELATIVE_1000, dst=SMART_RESIZE_PIXELS, width=1920, height=1080)
    assert b == Action("scroll", {"start_box": (966, 546), "direction": "up"}, "point")
    assert convert_action(b, src=SMART_RESIZE_PIXELS, dst=RELATIVE_1000, width=1920, height=1080) == a


# --------------------------------------------------------------------------------------
# validate_action


def _v(a, convention=RELATIVE_1000, platform=None, w=1920, h=1080):
    return validate_action(a, convention=convention, width=w, height=h, platform=platform)


def test_validate_bounds():
    assert _v(Action("click", {"start_box": (1000, 1000)})) == []
    assert _v(Action("click", {"start_box": (0, 0)})) == []
    (p,) = _v(Action("click", {"start_box": (1001, 5)}))
    assert "outside the screen" in p and "relative-1000" in p and "[0, 1000]" in p
    assert len(_v(Action("drag", {"start_box": (-1, 5), "end_box": (5, 1200)}))) == 2
    assert _v(Action("click", {"start_box": (1919, 1079)}), SCREEN_PIXELS) == []
    assert _v(Action("click", {"start_box": (1919.5, 0)}), SCREEN_PIXELS) == []
    (p,) = _v(Action("click", {"start_box": (1920, 0)}), SCREEN_PIXELS)
    assert "[0, 1919] x [0, 1079]" in p
    assert _v(Action("click", {"start_box": (1932, 1092)}), SMART_RESIZE_PIXELS) == []
    assert len(_v(Action("click", {"start_box": (1933, 0)}), SMART_RESIZE_PIXELS)) == 1


def test_validate_platform_and_args():
    (p,) = _v(Action("long_press", {"start_box": (1, 2)}), platform="desktop")
    assert p == "long_press is not available on desktop (only on mobile)"
    assert _v(Action("long_press", {"start_box": (1, 2)}), platform="mobile") == []
    assert _v(Action("click", {"start_box": (1, 2)}), platform="web") == []
    assert _v(Action("hotkey", {"key": " "})) == ["empty key for hotkey"]
    assert _v(Action("hotkey", {"key": "ctrl shift alt t"})) == []  # >3 keys is only a warning
    assert _v(Action("scroll", {"direction": "sideways"})) == [
        "bad direction 'sideways' for scroll (expected one of up, down, left, right)"
    ]
    assert _v(Action("clik", {"start_box": (1, 2)})) == ["unknown action 'clik'"]
    assert _v(Action("click")) == ["missing argument 'start_box' for click"]
    assert _v(Action("wait", {"foo": "x"})) == ["unexpected argument 'foo' for wait"]
    assert _v(Action("type", {"content": 5})) == ["argument 'content' of type must be text"]
    with pytest.raises(ValueError):
        _v(Action("wait"), platform="tv")


@SETTINGS
@given(actions(value=lambda k: _ui_value(k) if k in ("point", "direction") else value_for(k)))
def test_generated_in_range_actions_validate_clean(a):
    assume(not any(k == "key" and not v.strip() for k, v in a.args))
    spec = ACTION_SPECS[a.type]
    platform = sorted(spec.platforms)[0]
    assert validate_action(a, convention=RELATIVE_1000, width=1920, height=1080, platform=platform) == []


# --------------------------------------------------------------------------------------
# Action object and table


def test_action_object():
    a = Action("drag", {"end_box": [3, 4], "start_box": (1.00001, 2)})
    assert a.args == (("start_box", (1.0, 2)), ("end_box", (3, 4)))
    assert a.point("start_point") == (1, 2) and a.point("end_box") == (3, 4)
    assert a.to_json() == {"type": "drag", "args": {"start_box": [1.0, 2], "end_box": [3, 4]}, "style": "box"}
    assert Action("wait", (), "point").style == "box"
    with pytest.raises(ValueError):
        Action("click", {"start_box": (float("nan"), 1)})
    with pytest.raises(TypeError):
        Action("click", {"start_box": ("1", 2)})
    with pytest.raises(ValueError):
        Action("click", {"start_box": (1, 2)}, "bbox")
    with pytest.raises(ValueError):
        Action.from_json({"args": {}})


FORMATS_ACTIONS = {
    "click": ["start_box"],
    "left_double": ["start_box"],
    "right_single": ["start_box"],
    "drag": ["start_box", "end_box"],
    "hotkey": ["key"],
    "type": ["content"],
    "scroll": ["start_box", "direction"],
    "wait": [],
    "finished": ["content"],
    "call_user": [],
    "long_press": ["start_box", "time"],
    "open_app": ["app_name"],
    "press_home": [],
    "press_back": [],
    "select": ["start_box"],
    "swipe": ["start_box", "end_box"],
}
EXTRAS = {"left_single", "hover", "press", "keydown", "release", "keyup"}


def test_table_covers_formats_md():
    assert set(ACTION_SPECS) == set(FORMATS_ACTIONS) | EXTRAS
    for name, args in FORMATS_ACTIONS.items():
        assert set(args) <= set(ACTION_SPECS[name].arg_names), name
        assert not ACTION_SPECS[name].extra
    assert all(ACTION_SPECS[n].extra for n in EXTRAS)
    assert ACTION_SPECS["long_press"].platforms == {"mobile"}


def test_action_table_json():
    t = action_table_json()
    assert json.loads(json.dumps(t)) == t
    assert [a["name"] for a in t["actions"]] == list(ACTION_SPECS)
    assert t["directions"] == ["up", "down", "left", "right"]
    assert [c["id"] for c in t["conventions"]] == [RELATIVE_1000, SMART_RESIZE_PIXELS, SCREEN_PIXELS]
    click = next(a for a in t["actions"] if a["name"] == "click")
    assert click["label"] == "Click" and click["platforms"] == ["desktop", "mobile", "web"]
    assert click["args"] == [
        {
            "name": "start_box",
            "kind": "point",
            "required": True,
            "aliases": [],
            "description": "target point",
            "required_in_target": True,
            "point_style_names": ["point", "start_point"],
        }
    ]
    assert next(a for a in t["actions"] if a["name"] == "hover")["extra"] is True
