"""Helpers shared by the export tests: hand-made traces with real images, accepted annotations."""

from __future__ import annotations

import io

from django.db import transaction
from PIL import Image

from annotation.models import Annotation, AnnotationStatus, Verdict
from annotation.services import annotation_transition
from traces.importers.base import ImageRef, ImportedStep, ImportedTrace
from traces.services import trace_import_one


def png(seed: int, size=(56, 42)) -> bytes:
    image = Image.new("RGB", size, ((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _constant(data: bytes):
    return lambda: data


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
    steps = [
        ImportedStep(screenshot=ImageRef(f"s{i}.png", _constant(png(image_seed * 100 + i, size))), raw_response=reply)
        for i, reply in enumerate(replies, start=1)
    ]
    final_ref = ImageRef("final.png", _constant(png(image_seed * 100 + 99, size))) if final else None
    imported = ImportedTrace(
        external_id=external_id, instruction=instruction, source="native", steps=steps, final_screenshot=final_ref
    )
    return trace_import_one(project=project, imported=imported).trace


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
