"""Pages for leads: a project's webhook endpoints, their deliveries, re-send. Thin over services/selectors."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from studio.permissions import has_permission
from traces.selectors import projects_for_user
from webhooks import selectors, services
from webhooks.models import Delivery, Webhook, WebhookEvent


def _project_for(user, project_id: int):
    project = get_object_or_404(projects_for_user(user), pk=project_id)
    if not has_permission(user, "webhook.manage", project):
        raise PermissionDenied("Only leads and admins of this project manage its webhooks.")
    return project


@require_http_methods(["GET", "POST"])
def project_webhooks(request, project_id: int):
    project = _project_for(request.user, project_id)
    created, secret, error = None, "", ""
    if request.method == "POST":
        try:
            created, secret = services.webhook_create(
                project=project,
                url=request.POST.get("url", ""),
                events=request.POST.getlist("events"),
                user=request.user,
            )
        except services.WebhookRefused as exc:
            error = str(exc)
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
        },
        status=400 if error else 200,
    )


@require_POST
def webhook_delete(request, webhook_id: int):
    webhook = get_object_or_404(
        Webhook.objects.select_related("project"), pk=webhook_id, project__in=projects_for_user(request.user)
    )
    _project_for(request.user, webhook.project_id)
    services.webhook_delete(webhook=webhook)
    messages.success(request, f"Removed the endpoint {webhook.url}.")
    return redirect("project-webhooks", project_id=webhook.project_id)


@require_POST
def delivery_resend(request, delivery_id: int):
    delivery = get_object_or_404(
        Delivery.objects.select_related("webhook__project"),
        pk=delivery_id,
        webhook__project__in=projects_for_user(request.user),
    )
    _project_for(request.user, delivery.webhook.project_id)
    again = services.delivery_resend(delivery=delivery)
    messages.success(request, f"Delivery {delivery.pk} queued again as {again.pk}.")
    return redirect("project-webhooks", project_id=delivery.webhook.project_id)
