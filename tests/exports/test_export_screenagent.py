"""A real ScreenAgent session: the model's original reply vs the human-edited one becomes an accepted
annotation (first differing step = τ, the human's action = the correction) and then a DPO pair."""

import pytest

from annotation.models import Verdict
from exports.builders import BuildStats, ExportOptions, Skip, iter_samples
from exports.writers import llamafactory_record, trl_record
from tests.fixtures_export import accepted_annotation
from traces import prompting
from traces.importers import screenagent
from traces.models import CoordinateConvention
from traces.selectors import trace_steps
from traces.services import trace_import_one


@pytest.mark.django_db
def test_screenagent_session_to_dpo_pair(realtraces, project, annotator, lead):
    project.coordinate_convention = CoordinateConvention.SCREEN_PIXELS
    project.box_tokens = False
    project.save()
    root = realtraces / "screenagent" / "data"
    for item in screenagent.ScreenAgentImporter().read(root):
        if isinstance(item, Exception):
            continue
        trace = trace_import_one(project=project, imported=item).trace
        steps = list(trace_steps(trace))
        edited = [
            s
            for s in steps
            if s.human_edited_response and s.context.get("human_action_text") and not s.parse_error and s.screenshot_id
        ]
        if edited:
            break
    else:
        pytest.skip("no ScreenAgent session with a human-edited reply found")
    step = edited[0]
    human_action = step.context["human_action_text"]
    human_thought = screenagent.prose_of(step.human_edited_response)
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=step.index,
        corrected_thought=human_thought,
        corrected_action=human_action,
    )

    samples = [
        s for s in iter_samples(project, ExportOptions(validation_fraction=0), BuildStats()) if not isinstance(s, Skip)
    ]
    dpo = next(s for s in samples if s.kind == "dpo")
    expected_chosen = prompting.render_target(human_thought, human_action, project=project)
    assert dpo.chosen == expected_chosen
    assert (
        dpo.rejected == prompting.render_step(step, project=project, convention=trace.coordinate_convention)
        and dpo.rejected != dpo.chosen
    )
    assert dpo.prompt.images[-1].sha256 == step.screenshot.sha256  # o_τ is the current image
    assert len(dpo.prompt.images) == min(step.index, project.history_window)
    assert trace.instruction in dpo.prompt.messages[1].text

    record = trl_record(dpo)
    assert record["chosen"][0]["content"][0]["text"] == expected_chosen
    assert sum(c["type"] == "image" for m in record["prompt"] for c in m["content"]) == len(record["images"])
    lf = llamafactory_record(dpo)
    assert len(lf["conversations"]) % 2 == 0  # system + odd number of alternating turns ending with human
    assert lf["conversations"][-1]["from"] == "human"
