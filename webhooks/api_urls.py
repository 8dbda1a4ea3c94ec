from django.urls import path

from webhooks import api

urlpatterns = [
    path("projects/<int:project_id>/webhooks/", api.WebhookList.as_view(), name="api-webhook-list"),
    path("webhooks/<int:pk>/", api.WebhookDetail.as_view(), name="api-webhook-detail"),
    path("deliveries/<int:pk>/resend/", api.DeliveryResend.as_view(), name="api-delivery-resend"),
    path("deliveries/<int:pk>/cancel/", api.DeliveryCancel.as_view(), name="api-delivery-cancel"),
]
