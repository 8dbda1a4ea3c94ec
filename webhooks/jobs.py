"""The delivery job kind (studio.engine): one delivery to one endpoint, a job of its own, on the ``webhooks`` queue.

Not sharded: a delivery is one POST, and a job's shards share its fate (one that keeps failing fails the job), while
a receiver's failures must never end another receiver's delivery. Each run is one try, or a wait for a slot or a
pause; between tries the job goes back to the queue (``studio.jobs.JobDeferred``), so a receiver's backoff holds no
worker thread. The delivery counts its tries itself (``delivery_tries_exhausted``): the engine's run count would
count its waits too."""

from studio.engine import JobKind, job_kind_register
from webhooks.services import delivery_job_work, delivery_tries_exhausted

# The queue of the workers of their own (compose's webhook-worker; docs/deploy.md, "Queues").
WEBHOOKS_QUEUE = "webhooks"

DELIVERY = job_kind_register(
    JobKind(
        name="delivery",
        model="webhooks.DeliveryJob",
        run=delivery_job_work,
        queue=lambda job: WEBHOOKS_QUEUE,
        related=("delivery__webhook",),
        exhausted=delivery_tries_exhausted,
        # The name older releases queued a delivery by, with the delivery's id, which is its job's.
        old_task_names=("webhooks.tasks.deliver_webhook",),
    )
)
