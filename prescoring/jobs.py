"""The pre-scoring job kind (studio.engine): a project's traces packed into shards of steps, scored by any worker
on the job's queue (model scoring: ``gpu``)."""

from prescoring.services import prescore_plan, prescore_queue, prescore_shard_work, prescore_summarize
from studio.engine import JobKind, job_kind_register

PRESCORE = job_kind_register(
    JobKind(
        name="prescore",
        model="prescoring.PrescoreJob",
        plan=lambda job, scratch: prescore_plan(job),
        work=prescore_shard_work,
        summarize=prescore_summarize,
        queue=prescore_queue,
        related=("project",),
        # Named in the traces app before pre-scoring had an app of its own.
        old_task_names=("traces.tasks.prescore_rules", "traces.tasks.prescore_with_model"),
        old_shard_task_names=("traces.tasks.prescore_shard",),
    )
)
