from django.urls import path

from webhooks import views

urlpatterns = [
    path("projects/<int:project_id>/webhooks/", views.project_webhooks, name="project-webhooks"),
    path("webhooks/<int:webhook_id>/delete/", views.webhook_delete, name="webhook-delete"),
    path("webhooks/<int:webhook_id>/resume/", views.webhook_resume, name="webhook-resume"),
    path("webhooks/deliveries/<int:delivery_id>/resend/", views.delivery_resend, name="webhook-delivery-resend"),
    path("webhooks/deliveries/<int:delivery_id>/cancel/", views.delivery_cancel, name="webhook-delivery-cancel"),
]
