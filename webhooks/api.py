"""Webhooks API: what the page does, for a CI script that registers its own endpoint (leads' tokens). Thin: services
and selectors do the work; the secret is in the answer to the registration only, as on the page."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from studio.access import AccessedObjectMixin, ActionPermission
from traces.access import access_project
from webhooks import selectors, services
from webhooks.access import access_delivery, webhooks_for
from webhooks.models import URL_MAX_CHARS, Delivery, Webhook, WebhookEvent


class DeliverySerializer(serializers.ModelSerializer):
    class Meta:
        model = Delivery
        fields = [
            "id",
            "webhook",
            "event",
            "status",
            "attempts",
            "response_status",
            "last_error",
            "created_at",
            "delivered_at",
            "resent_from",
        ]


class WebhookSerializer(serializers.ModelSerializer):
    class Meta:
        model = Webhook
        fields = [
            "id",
            "project",
            "url",
            "events",
            "active",
            "created_at",
            "failures_in_a_row",
            "paused_until",
            "pause_reason",
        ]
        read_only_fields = ["failures_in_a_row", "paused_until", "pause_reason"]


class WebhookDetailSerializer(WebhookSerializer):
    deliveries = serializers.SerializerMethodField(help_text="The latest deliveries, newest first.")

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "deliveries"]

    def get_deliveries(self, webhook) -> list[dict]:
        # many=True makes a ListSerializer, whose data is a list; the stubs type the call as the serializer's class.
        return DeliverySerializer(selectors.deliveries_of_webhook(webhook), many=True).data  # type: ignore[return-value]


class WebhookCreateSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=URL_MAX_CHARS, help_text="https:// endpoint that receives signed POSTs.")
    events = serializers.ListField(
        child=serializers.CharField(max_length=40),
        max_length=len(WebhookEvent.values),
        help_text="WebhookEvent values.",
    )


class WebhookList(APIView):
    """GET: the project's endpoints. POST: register one; the answer holds its signing secret, this once."""

    permission_classes = [ActionPermission]
    permission_action = "webhook.manage"

    @extend_schema(responses={200: WebhookSerializer(many=True)})
    def get(self, request, project_id: int):
        project = access_project(request, project_id)
        return Response(WebhookSerializer(selectors.webhooks_of(project), many=True).data)

    @extend_schema(request=WebhookCreateSerializer, responses={201: dict})
    def post(self, request, project_id: int):
        project = access_project(request, project_id)
        form = WebhookCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        webhook, secret = services.webhook_create(project=project, user=request.user, **form.validated_data)
        return Response({**WebhookSerializer(webhook).data, "secret": secret}, status=status.HTTP_201_CREATED)


class WebhookDetail(AccessedObjectMixin, generics.RetrieveDestroyAPIView):
    """GET: an endpoint and its latest deliveries. DELETE: remove it (its delivery log goes with it)."""

    serializer_class = WebhookDetailSerializer
    permission_classes = [ActionPermission]
    permission_action = "webhook.manage"

    def get_queryset(self):
        return webhooks_for(self.request.user)

    def perform_destroy(self, instance):
        services.webhook_delete(webhook=instance)


class DeliveryResend(APIView):
    """Send a delivery's payload again, as a new logged delivery (201 with it)."""

    permission_classes = [ActionPermission]
    permission_action = "webhook.manage"

    @extend_schema(request=None, responses={201: DeliverySerializer})
    def post(self, request, pk: int):
        delivery = access_delivery(request, pk)
        again = services.delivery_resend(delivery=delivery)
        return Response(DeliverySerializer(again).data, status=status.HTTP_201_CREATED)


class DeliveryCancel(APIView):
    """Stop a pending delivery (a waiting one ends now; a try under way may still reach the receiver, and no other
    follows). 200 with the delivery and what happened, in words; a delivery that has ended is left as it is."""

    permission_classes = [ActionPermission]
    permission_action = "webhook.manage"

    @extend_schema(
        request=None,
        responses={
            200: inline_serializer(
                "DeliveryCancelled",
                {
                    "cancelled": serializers.BooleanField(),
                    "message": serializers.CharField(),
                    "delivery": DeliverySerializer(),
                },
            )
        },
    )
    def post(self, request, pk: int):
        delivery = access_delivery(request, pk)
        changed, what = services.delivery_cancel(delivery=delivery)
        delivery.refresh_from_db()
        return Response({"cancelled": changed, "message": what, "delivery": DeliverySerializer(delivery).data})
