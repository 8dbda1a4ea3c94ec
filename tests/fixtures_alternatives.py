"""What a finished alternatives request leaves, written straight to the database for tests that start from there:
the job and its replies at a step, parsed by the server's grammar (annotation.alternatives)."""

from __future__ import annotations

from annotation.alternatives import services
from annotation.models import AlternativesJob, Annotation, StepAlternative


def store_alternatives(
    annotation: Annotation,
    step_index: int,
    texts: list[str],
    *,
    model_dir: str = "/models/agent-r1",
    weights_hash: str = "ab" * 32,
) -> list[StepAlternative]:
    step = annotation.trace.steps.get(index=step_index)
    sampling = services.sampling_settings(project=annotation.project)
    key = services.settings_key(sampling)
    rows = [
        StepAlternative.objects.create(
            step=step,
            weights_hash=weights_hash,
            model_name="agent-r1",
            settings_key=key,
            settings=sampling,
            number=n,
            reply=text,
            actions=[a.to_json() for a in services.assess.parse_model_reply(text)],
        )
        for n, text in enumerate(texts, start=1)
    ]
    parsed = sum(1 for row in rows if row.actions)
    AlternativesJob.objects.create(
        annotation=annotation,
        step=step,
        model_dir=model_dir,
        model_name="agent-r1",
        weights_hash=weights_hash,
        settings=sampling,
        settings_key=key,
        status="succeeded",
        message=f"{len(rows)} alternatives sampled, {parsed} parsed, {len(rows) - parsed} kept as text",
    )
    return rows
