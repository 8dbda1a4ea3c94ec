"""The export job kind (studio.engine): annotations planned into shards whose data files any worker builds, then
one assembly of the bundle."""

from exports.services import export_assemble_work, export_plan_make, export_shard_work
from exports.storage import bundle_parts_delete, export_files_delete
from studio.engine import JobKind, job_kind_register

EXPORT = job_kind_register(
    JobKind(
        name="export",
        model="exports.ExportJob",
        plan=lambda job, scratch: export_plan_make(job),
        work=export_shard_work,
        assemble=export_assemble_work,
        # The shards' stored data files go when the export ends: the bundle holds them now, or it ended without one.
        release_files=bundle_parts_delete,
        delete_files=export_files_delete,
        related=("project",),
        old_task_names=("exports.tasks.run_export",),
        old_shard_task_names=("exports.tasks.export_shard",),
    )
)
