"""Celery tasks: thin wrappers that call services."""

from celery import shared_task


# Sent to the queue its run names (services.cluster_run_queue): `default` for TF-IDF, `gpu` for the model's embeddings.
@shared_task(name="insights.tasks.run_clustering", acks_late=True)
def run_clustering(run_id: int) -> None:
    from insights import services

    services.cluster_run_compute(run_id=run_id)
