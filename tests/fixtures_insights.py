"""Generated corrections for the insights tests: accepted annotations written straight to the model (the search
index follows every save), some of them a planted failure mode."""

from __future__ import annotations

import random

from django.utils import timezone

PLANTED_THOUGHT = (
    "The search field is not focused yet: I typed before clicking the field. Click the search field first."
)
PLANTED_NOTE = "typed before clicking the field"
PLANTED_CATEGORY = "wrong action type"
# Other mistakes, each worded its own way so that text clustering has something to tell apart.
OTHER_MISTAKES = [
    (
        "wrong element / grounding",
        "The Save button is further right; the icon I hit opens the share menu.",
        "hit the share icon",
    ),
    (
        "premature finish",
        "The order is not confirmed yet, so finishing now leaves the task undone.",
        "finished too early",
    ),
    ("misread screen", "The dialog shows a warning banner about storage quota that I ignored.", "missed the warning"),
    ("needless wait or loop", "Scrolling again repeats the same page; the list ended two scrolls ago.", "scroll loop"),
]


def plant_corrections(project, traces, *, annotator, lead, planted: set[int], seed: int = 7):
    """One accepted annotation per trace: the planted mistake on the traces in ``planted`` (trace ids), another
    mistake on the others. τ is the first step whose recorded action types text (the planted ones), else the
    middle step. Returns {trace id: annotation}."""
    from annotation.models import Annotation, AnnotationStatus, Verdict
    from traces.models import Step

    rng = random.Random(seed)
    out = {}
    for trace in traces:
        steps = list(Step.objects.filter(trace=trace).order_by("index"))
        if not steps:
            continue
        typing = [s for s in steps if s.action_text.strip().startswith("type(")]
        if trace.pk in planted:
            step = typing[0] if typing else steps[len(steps) // 2]
            category, thought, note = PLANTED_CATEGORY, PLANTED_THOUGHT, PLANTED_NOTE
            action = "click(start_box='(500,80)')"
        else:
            step = steps[len(steps) // 2]
            category, thought, note = OTHER_MISTAKES[rng.randrange(len(OTHER_MISTAKES))]
            action = f"click(start_box='({rng.randrange(100, 900)},{rng.randrange(100, 900)})')"
        now = timezone.now()
        out[trace.pk] = Annotation.objects.create(
            trace=trace,
            project=project,
            annotator=annotator,
            status=AnnotationStatus.ACCEPTED,
            verdict=Verdict.ERROR,
            tau=step.index,
            error_category=category,
            corrected_thought=thought,
            corrected_action=action,
            note=note,
            submitted_at=now,
            reviewed_at=now,
            reviewed_by=lead,
        )
    return out


def plant_wordings(project, traces, *, annotator, lead, wordings: list[tuple[str, str]]):
    """One accepted correction per trace at its middle step, trace i worded ``wordings[i]`` (thought, note), all of
    one category and action: only their texts tell them apart. Returns [annotation] in trace order."""
    from annotation.models import Annotation, AnnotationStatus, Verdict
    from traces.models import Step

    made = []
    for trace, (thought, note) in zip(traces, wordings, strict=True):
        steps = list(Step.objects.filter(trace=trace).order_by("index"))
        now = timezone.now()
        made.append(
            Annotation.objects.create(
                trace=trace,
                project=project,
                annotator=annotator,
                status=AnnotationStatus.ACCEPTED,
                verdict=Verdict.ERROR,
                tau=steps[len(steps) // 2].index,
                error_category=PLANTED_CATEGORY,
                corrected_thought=thought,
                corrected_action="click(start_box='(500,80)')",
                note=note,
                submitted_at=now,
                reviewed_at=now,
                reviewed_by=lead,
            )
        )
    return made
