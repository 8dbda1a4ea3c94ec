"""Helpers shared by the export tests: hand-made traces with real images, accepted annotations."""

from __future__ import annotations

from django.db import transaction

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.services import annotation_transition
from tests import factories

png = factories.png  # the export tests' screens: the one builder's


def make_trace(
    project,
    *,
    replies: list[str],
    external_id: str,
    instruction: str = "Open the display settings",
    final: bool = True,
    image_seed: int = 1,
    size: tuple[int, int] = (56, 42),
):
    """A trace of ``replies`` on small distinct screens, stored as an importer stores one (tests/factories.py)."""
    return factories.make_trace(
        project,
        through="store",
        replies=replies,
        external_id=external_id,
        instruction=instruction,
        final=final,
        image_seed=image_seed,
        size=size,
    )


def accepted_annotation(trace, *, annotator, reviewer, **fields) -> Annotation:
    with transaction.atomic():
        annotation = Annotation.objects.create(trace=trace, project=trace.project, annotator=annotator, **fields)
        annotation_transition(annotation=annotation, to=AnnotationStatus.SUBMITTED, actor=annotator)
        annotation_transition(annotation=annotation, to=AnnotationStatus.ACCEPTED, actor=reviewer)
    return annotation


def accepted_error(trace, *, annotator, reviewer, tau: int = 3, **fields) -> Annotation:
    """An accepted annotation marking step ``tau`` wrong, with a correction and a post-reflection step (``fields``
    override them): one DPO pair, one error-correction and one post-reflection sample."""
    correction = {
        "corrected_thought": "Click Display.",
        "corrected_action": "click(start_box='(300,260)')",
        "reflection_thought": "Wrong panel; go back.",
        "reflection_action": "hotkey(key='alt left')",
    }
    return accepted_annotation(
        trace, annotator=annotator, reviewer=reviewer, verdict=Verdict.ERROR, tau=tau, **{**correction, **fields}
    )


REPLIES = [
    "Thought: Open the start menu.\nAction: click(start_box='(10,990)')",
    "Thought: Type the query.\nAction: type(content='display\\n')",
    "Thought: Open the wrong item.\nAction: click(start_box='<|box_start|>(500,300)<|box_end|>')",
    "Thought: Scroll down.\nAction: scroll(start_box='(500,500)', direction='down')",
]
