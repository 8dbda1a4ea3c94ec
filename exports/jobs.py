"""The export job kind (studio.engine): annotations planned into shards whose data files any worker builds, then
one assembly of the bundle."""

from exports.services import export_assemble_work, export_plan_make, export_shard_work
from studio.engine import JobKind, job_kind_register

EXPORT = job_kind_register(
    JobKind(
        name="export",
        model="exports.ExportJob",
        plan=lambda job, scratch: export_plan_make(job),
        work=export_shard_work,
        assemble=export_assemble_work,
        related=("project",),
        old_task_names=("exports.tasks.run_export",),
        old_shard_task_names=("exports.tasks.export_shard",),
    )
)
