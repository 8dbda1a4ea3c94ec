"""Deliveries on the ``default`` queue, retried with exponential backoff (base × 3^attempt)."""

from celery import shared_task
from django.conf import settings

from webhooks import services


@shared_task(bind=True, acks_late=True, max_retries=None)
def deliver_webhook(self, delivery_id: int) -> bool:
    if services.delivery_attempt(delivery_id=delivery_id):
        return True
    if self.request.retries + 1 >= settings.WEBHOOKS_MAX_ATTEMPTS:
        services.delivery_give_up(delivery_id=delivery_id)
        return False
    raise self.retry(countdown=settings.WEBHOOKS_RETRY_BASE_S * 3**self.request.retries)
