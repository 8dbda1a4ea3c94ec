"""The clustering job kind (studio.engine): one clustering of a project's accepted corrections, run whole, on the
CPU worker (TF-IDF) or on a gpu worker (the pre-scoring model's embeddings: the run says which)."""

from insights.services import cluster_run_queue, cluster_run_work
from studio.engine import JobKind, job_kind_register

CLUSTERING = job_kind_register(
    JobKind(
        name="clustering",
        model="insights.ClusterRun",
        run=cluster_run_work,
        queue=cluster_run_queue,
        related=("project",),
        old_task_names=("insights.tasks.run_clustering",),
    )
)
