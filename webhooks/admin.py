"""Django admin for operators: look up webhook endpoints and their deliveries (studio.admin: a lead registers, resends
and removes them on the project's webhooks page). An endpoint's signing secret is never shown again after it was
registered, here neither."""

from django.contrib import admin

from studio.admin import JobAdmin, ReadOnlyAdmin
from webhooks.models import Delivery, DeliveryJob, Webhook


@admin.register(Webhook)
class WebhookAdmin(ReadOnlyAdmin):
    list_display = ["id", "project", "url", "active", "created_at"]
    list_filter = ["active"]
    exclude = ["secret"]


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ["id", "webhook", "event", "status", "attempts", "response_status", "created_at", "delivered_at"]
    list_filter = ["status", "event"]
    raw_id_fields = ["webhook", "resent_from"]


@admin.register(DeliveryJob)
class DeliveryJobAdmin(JobAdmin):
    list_display = ["delivery", "status", "attempts", "heartbeat_at", "message", "created_at", "finished_at"]
    raw_id_fields = ["delivery"]
