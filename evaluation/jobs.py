"""The evaluation job kind (studio.engine): one checkpoint's log-likelihoods on the corrections, on a gpu worker."""

from evaluation.services import evaluation_work
from studio.engine import JobKind, job_kind_register

EVALUATION = job_kind_register(
    JobKind(
        name="evaluation",
        model="evaluation.EvaluationJob",
        run=evaluation_work,
        queue=lambda job: "gpu",  # the checkpoint stays loaded in the gpu worker
        related=("project",),
        old_task_names=("evaluation.tasks.run_evaluation",),
    )
)
