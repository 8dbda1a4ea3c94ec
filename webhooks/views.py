"""Pages for leads: a project's webhook endpoints, their deliveries, re-send. Thin over services/selectors."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from traces.access import access_project
from webhooks import selectors, services
from webhooks.access import access_delivery, access_webhook
from webhooks.models import WebhookEvent


@require_http_methods(["GET", "POST"])
def project_webhooks(request, project_id: int):
    project = access_project(request.user, project_id, "webhook.manage")
    created, secret, error, status = None, "", "", 200
    if request.method == "POST":
        try:
            created, secret = services.webhook_create(
                project=project,
                url=request.POST.get("url", ""),
                events=request.POST.getlist("events"),
                user=request.user,
            )
        except services.WebhookRefused as exc:
            error, status = exc.detail, exc.status
    # A refused endpoint keeps what the lead typed and ticked (it came back blank, every event ticked again).
    typed = error != ""
    return render(
        request,
        "webhooks/project_webhooks.html",
        {
            "project": project,
            "webhooks": selectors.webhooks_of(project),
            "deliveries": selectors.deliveries_of(project),
            "events": WebhookEvent.choices,
            "created": created,
            "secret": secret,
            "error": error,
            "typed_url": request.POST.get("url", "") if typed else "",
            "chosen_events": request.POST.getlist("events") if typed else [value for value, _ in WebhookEvent.choices],
        },
        status=status,
    )


@require_POST
def webhook_delete(request, webhook_id: int):
    webhook = access_webhook(request.user, webhook_id, "webhook.manage")
    services.webhook_delete(webhook=webhook)
    messages.success(request, f"Removed the endpoint {webhook.url}.")
    return redirect("project-webhooks", project_id=webhook.project_id)


@require_POST
def webhook_resume(request, webhook_id: int):
    webhook = access_webhook(request.user, webhook_id, "webhook.manage")
    services.webhook_resume(webhook=webhook)
    messages.success(request, f"Deliveries to {webhook.url} resumed; the next one tries it again.")
    return redirect("project-webhooks", project_id=webhook.project_id)


@require_POST
def delivery_resend(request, delivery_id: int):
    delivery = access_delivery(request.user, delivery_id, "webhook.manage")
    again = services.delivery_resend(delivery=delivery)
    messages.success(request, f"Delivery {delivery.pk} queued again as {again.pk}.")
    return redirect("project-webhooks", project_id=delivery.webhook.project_id)


@require_POST
def delivery_cancel(request, delivery_id: int):
    delivery = access_delivery(request.user, delivery_id, "webhook.manage")
    changed, what = services.delivery_cancel(delivery=delivery)
    (messages.success if changed else messages.info)(request, f"Delivery {delivery.pk}: {what}")
    return redirect("project-webhooks", project_id=delivery.webhook.project_id)
