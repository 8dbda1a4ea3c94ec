"""Deliveries on the ``webhooks`` queue (a worker of their own on the full stack; runstudio's one worker holds them to
at most ``WEBHOOKS_DELIVERIES_PER_PROCESS`` of its threads): a slow receiver never holds an import's process or thread;
retried with exponential backoff (base × 3^attempt); waiting for a slot or a paused endpoint costs no attempt."""

from celery import shared_task

from webhooks import services


@shared_task(bind=True, acks_late=True, max_retries=None)
def deliver_webhook(self, delivery_id: int) -> bool:
    outcome = services.delivery_attempt(delivery_id=delivery_id)
    if outcome.retry_in_s is not None:
        raise self.retry(countdown=outcome.retry_in_s)
    return outcome.delivered
