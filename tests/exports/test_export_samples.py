"""Samples from a hand-made trace, checked against what each sample kind holds (docs/architecture.md, exports/)."""

import pytest

from annotation.models import Verdict
from exports.builders import BuildStats, ExportOptions, Skip, iter_samples
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace
from traces import prompting
from traces.selectors import trace_steps

BS, BE = "<|box_start|>", "<|box_end|>"


def shas(prompt):
    return [img.sha256 for img in prompt.images]


@pytest.mark.django_db
def test_error_at_tau_gives_correction_post_reflection_and_dpo(project, annotator, lead):
    project.history_window = 2
    project.save()
    trace = make_trace(project, replies=REPLIES, external_id="hand")
    steps = list(trace_steps(trace))
    o = [s.screenshot.sha256 for s in steps]
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought="Open Display, not Sound.",
        corrected_action="click(start_box='(420,260)')",
        reflection_thought="I opened the wrong panel; go back.",
        reflection_action="hotkey(key='alt left')",
    )
    samples = list(iter_samples(project, ExportOptions(include_valid_prefix=True, validation_fraction=0), BuildStats()))
    assert not [s for s in samples if isinstance(s, Skip)]
    by_kind = {}
    for s in samples:
        by_kind.setdefault(s.kind, []).append(s)
    assert sorted(by_kind) == ["dpo", "error_correction", "post_reflection", "valid_prefix"]
    assert {s.split for s in samples} == {"train"}

    instruction = prompting.instruction_text(project, trace.instruction)
    h1 = f"Thought: Open the start menu.\nAction: click(start_box='{BS}(10,990){BE}')"
    h2 = "Thought: Type the query.\nAction: type(content='display\\n')"
    h3 = f"Thought: Open the wrong item.\nAction: click(start_box='{BS}(500,300){BE}')"
    corrected = f"Thought: Open Display, not Sound.\nAction: click(start_box='{BS}(420,260){BE}')"

    # error correction: s_τ = instruction + steps 1..τ-1 (last N=2 images: o_2 in history, o_3 current)
    ec = by_kind["error_correction"][0]
    assert [(m.role, m.text, m.image_count) for m in ec.prompt.messages] == [
        ("system", "You are a helpful assistant.", 0),
        ("user", instruction, 0),
        ("assistant", h1, 0),
        ("user", "", 1),
        ("assistant", h2, 0),
        ("user", "", 1),
    ]
    assert shas(ec.prompt) == [o[1], o[2]]
    assert ec.completion == corrected

    # DPO: same prompt; chosen the correction, rejected the recorded step τ
    dpo = by_kind["dpo"][0]
    assert dpo.prompt == ec.prompt and dpo.chosen == corrected and dpo.rejected == h3

    # post-reflection: history through the wrong step τ (untrained), then o_{τ+1}
    pr = by_kind["post_reflection"][0]
    assert [(m.role, m.text, m.image_count) for m in pr.prompt.messages][2:] == [
        ("assistant", h1, 0),
        ("assistant", h2, 0),
        ("user", "", 1),
        ("assistant", h3, 0),
        ("user", "", 1),
    ]
    assert shas(pr.prompt) == [o[2], o[3]]
    assert pr.completion == "Thought: I opened the wrong panel; go back.\nAction: hotkey(key='alt left')"

    # valid prefix: steps 1..τ-1 as recorded
    prefix = by_kind["valid_prefix"]
    assert [s.completion for s in prefix] == [h1, h2]
    assert shas(prefix[0].prompt) == [o[0]] and shas(prefix[1].prompt) == [o[0], o[1]]


@pytest.mark.django_db
def test_post_reflection_on_last_step_uses_final_screenshot_and_adjudicated_wins(project, annotator, lead, make_user):
    trace = make_trace(project, replies=REPLIES[:2], external_id="last")
    other = make_user("ann2")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=1,
        corrected_thought="a",
        corrected_action="wait()",
    )
    accepted_annotation(
        trace,
        annotator=other,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        is_adjudicated=True,
        corrected_thought="Type the right thing.",
        corrected_action="type(content='display settings\\n')",
        reflection_thought="Undo.",
        reflection_action="hotkey(key='ctrl z')",
    )
    samples = [s for s in iter_samples(project, ExportOptions(), BuildStats()) if not isinstance(s, Skip)]
    assert [s.kind for s in samples] == ["error_correction", "dpo", "post_reflection"]
    assert samples[2].prompt.images[-1].sha256 == trace.final_screenshot.sha256


@pytest.mark.django_db
def test_error_free_option_and_missing_final_is_skipped_with_reason(project, annotator, lead):
    clean = make_trace(project, replies=REPLIES[:2], external_id="clean")
    accepted_annotation(clean, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    assert list(iter_samples(project, ExportOptions(), BuildStats())) == []
    free = list(iter_samples(project, ExportOptions(include_error_free=True), BuildStats()))
    assert [s.kind for s in free] == ["error_free", "error_free"]

    nofinal = make_trace(project, replies=REPLIES[:1], external_id="nofinal", final=False, image_seed=2)
    accepted_annotation(
        nofinal,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=1,
        corrected_thought="x",
        corrected_action="wait()",
        reflection_thought="y",
        reflection_action="wait()",
    )
    items = list(iter_samples(project, ExportOptions(), BuildStats()))
    skips = [s for s in items if isinstance(s, Skip)]
    assert [s.kind for s in skips] == ["post_reflection"] and "no observation o_2" in skips[0].reason
