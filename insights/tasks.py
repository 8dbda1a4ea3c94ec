"""Celery tasks: thin wrappers that call services."""

from celery import shared_task


# The `default` queue: clustering is CPU work (TF-IDF and agglomerative linkage).
@shared_task(name="insights.tasks.run_clustering", acks_late=True)
def run_clustering(run_id: int) -> None:
    from insights import services

    services.cluster_run_compute(run_id=run_id)
