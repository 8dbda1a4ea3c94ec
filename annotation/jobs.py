"""The alternatives job kind (studio.engine): a checkpoint's sampled replies at one step, on a gpu worker."""

from annotation.alternatives.services import alternatives_sample
from studio.engine import JobKind, job_kind_register

ALTERNATIVES = job_kind_register(
    JobKind(
        name="alternatives",
        model="annotation.AlternativesJob",
        run=alternatives_sample,
        queue=lambda job: "gpu",  # the model stays loaded in the gpu worker, shared with pre-scoring
        related=("annotation__project", "step__trace"),
        old_task_names=("annotation.tasks.sample_alternatives",),
    )
)
