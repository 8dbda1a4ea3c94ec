"""Writes for exports: create, run, cancel and recover export jobs; build a bundle.

An export is a sharded job (its kind: exports/jobs.py, run by studio/engine.py): its plan cuts its annotations, in
trace order, into shards of ``EXPORT_SHARD_ANNOTATIONS``; any worker builds a shard's data files (``export_part_build``) and stores them with
the shard's result (an ``ExportPart``, kept as JSON); when the last shard is done the export's own task runs again and assembles the one bundle
(``export_assemble``: the parts taken together by ``parts_reduce``, then the data files, README, manifest and archive
made from the total), deterministically, then ends the job once (studio.jobs.job_run).

A room each: ``parts`` (a shard's data files), ``assembly`` (the bundle from the parts) and ``export_jobs`` (the job:
create, plan, a shard's work, the assembly's run, the summary, cancel). Callers import the public names from here; the
rooms import each other directly, never this package."""

from exports.services.assembly import (
    BuildResult,
    Filters,
    PartsTotal,
    export_assemble,
    parts_reduce,
    rounds_of_sources,
    sequence_lengths,
)
from exports.services.export_jobs import (
    MAX_JOB_ERRORS,
    ExportError,
    export_assemble_work,
    export_base,
    export_job_cancel,
    export_job_create,
    export_job_delete_bundle,
    export_job_run,
    export_plan,
    export_plan_make,
    export_shard_work,
    export_summary,
    export_to_path,
)
from exports.services.parts import (
    REDUCED_FOLDER,
    ExportPart,
    PartFile,
    deflated_path,
    export_part_build,
    pixel_contract,
    reduced_png,
)

__all__ = [
    "BuildResult",
    "ExportError",
    "ExportPart",
    "Filters",
    "MAX_JOB_ERRORS",
    "PartFile",
    "PartsTotal",
    "REDUCED_FOLDER",
    "deflated_path",
    "export_assemble",
    "export_assemble_work",
    "export_base",
    "export_job_cancel",
    "export_job_create",
    "export_job_delete_bundle",
    "export_job_run",
    "export_part_build",
    "export_plan",
    "export_plan_make",
    "export_shard_work",
    "export_summary",
    "export_to_path",
    "parts_reduce",
    "pixel_contract",
    "reduced_png",
    "rounds_of_sources",
    "sequence_lengths",
]
