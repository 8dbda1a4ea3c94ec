"""Deliveries on the ``webhooks`` queue, a worker of their own (a slow receiver never holds an import's process):
retried with exponential backoff (base × 3^attempt); waiting for a slot or a paused endpoint costs no attempt."""

from celery import shared_task

from webhooks import services


@shared_task(bind=True, acks_late=True, max_retries=None)
def deliver_webhook(self, delivery_id: int) -> bool:
    outcome = services.delivery_attempt(delivery_id=delivery_id)
    if outcome.retry_in_s is not None:
        raise self.retry(countdown=outcome.retry_in_s)
    return outcome.delivered
