"""Quality control's test world: traces with screenshots, gold traces whose reference a lead accepted, and answers
handed in through the real services (draft save, then submit), as an annotator's page sends them."""

from __future__ import annotations

from annotation import services
from annotation.models import Annotation, GoldTrace, Verdict
from annotation.quality import services as quality
from tests.factories import make_trace
from tests.fixtures_export import REPLIES, accepted_annotation
from traces import grammar

CATEGORY = "wrong element / grounding"
CORRECTED = {"type": "click", "args": {"start_box": [300, 260]}, "style": "box", "target_box": [280, 240, 340, 280]}
REFLECTION = {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"}


def traces_of(project, count: int, *, start: int = 0) -> list:
    """``count`` traces of four steps (screenshots stored, actions parsed), each its own task."""
    return [
        make_trace(
            project,
            external_id=f"task-{n}",
            instruction=f"Open the display settings (task {n})",
            replies=REPLIES,
            image_seed=n + 1,
        )
        for n in range(start, start + count)
    ]


def error_fields(tau: int = 3, *, category: str = CATEGORY, corrected: dict | None = None) -> dict:
    """A complete first-error answer at ``tau``: category, correction (with its element box), post-reflection."""
    return {
        "verdict": Verdict.ERROR,
        "tau": tau,
        "error_category": category,
        "corrected_thought": "Click Display instead.",
        "reflection_thought": "That opened the wrong panel; go back.",
        "editor_state": {"corrected": corrected or CORRECTED, "reflection": REFLECTION},
    }


def reference_of(trace, *, annotator, lead, tau: int = 3) -> Annotation:
    """An accepted error answer at ``tau`` on ``trace`` (the corrected click with its box, the post-reflection)."""
    project = trace.project
    render = lambda data: grammar.render_action(grammar.Action.from_json(data), box_tokens=project.box_tokens)  # noqa: E731
    return accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=tau,
        error_category=CATEGORY,
        corrected_thought="Click Display instead.",
        corrected_action=render(CORRECTED),
        reflection_thought="That opened the wrong panel; go back.",
        reflection_action=render(REFLECTION),
        editor_state={"corrected": CORRECTED, "reflection": REFLECTION},
    )


def gold_traces(project, traces, *, expert, lead) -> list[GoldTrace]:
    """Each trace made gold: ``expert``'s accepted answer (error at step 3) as its reference, marked by ``lead``."""
    golds = []
    for trace in traces:
        gold, outcome = quality.gold_mark_answer(
            annotation_id=reference_of(trace, annotator=expert, lead=lead).pk, user=lead
        )
        assert outcome == "marked"
        golds.append(gold)
    return golds


def hand_in(annotation: Annotation, user, *, seconds: int = 40, **fields) -> Annotation:
    """Save ``fields`` as the draft, credit ``seconds`` of work, submit: the workspace's path."""
    saved = services.annotation_save_draft(
        annotation_id=annotation.pk, user=user, base_version=annotation.version, fields=fields
    )
    Annotation.objects.filter(pk=saved.pk).update(time_spent_s=seconds)
    return services.annotation_submit(annotation_id=saved.pk, user=user, base_version=saved.version)


def is_gold(annotation: Annotation) -> bool:
    return GoldTrace.objects.filter(trace_id=annotation.trace_id).exists()
