"""The import job kind (studio.engine): an upload planned into shards of trace units, each imported by any worker."""

from studio.engine import JobKind, job_kind_register
from traces.services import (
    import_job_files_delete,
    import_plan_make,
    import_shard_work,
    import_summarize,
    import_upload_release,
    import_uploads_sweep,
)

IMPORT = job_kind_register(
    JobKind(
        name="import",
        model="traces.ImportJob",
        plan=lambda job, scratch: import_plan_make(job=job, scratch=scratch),
        work=import_shard_work,
        summarize=import_summarize,
        release_files=lambda job: import_upload_release(job=job),
        delete_files=lambda job: import_job_files_delete(job=job),
        sweep_files=lambda now: import_uploads_sweep(now=now),
        related=("project", "round"),
        old_task_names=("traces.tasks.run_import",),
        old_shard_task_names=("traces.tasks.import_shard",),
    )
)
