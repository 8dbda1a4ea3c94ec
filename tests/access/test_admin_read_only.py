"""The admin looks things up and writes nothing around the services: no model of the studio can be added or edited
there (a project's convention, an annotation's audited versions, a job's state machine would be skipped), and
only projects and jobs are deleted, through project_delete and job_delete."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin import ModelAdmin
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from annotation.models import Annotation, AnnotationStatus
from studio.models import JobBase
from tests.fixtures_export import REPLIES, accepted_error, make_trace
from traces.models import CoordinateConvention, Project, Trace

STUDIO_APPS = {"studio", "traces", "annotation", "prescoring", "exports", "evaluation", "webhooks", "insights"}


def _studio_admins():
    return [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label in STUDIO_APPS
    ]


@pytest.mark.django_db
def test_no_studio_model_is_added_or_edited_in_the_admin_and_only_projects_and_jobs_are_deleted(admin_user):
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    admins = _studio_admins()
    assert {model.__name__ for model, _ in admins} >= {"Project", "Trace", "Step", "Annotation", "ExportJob"}
    for model, model_admin in admins:
        assert not model_admin.has_add_permission(request), model
        assert not model_admin.has_change_permission(request), model
        assert model_admin.has_view_permission(request), model
        deletes = model_admin.has_delete_permission(request)
        assert deletes == (model is Project or issubclass(model, JobBase)), model
        if deletes:  # through the service, with a delete page that counts rather than lists every row
            for method in ("delete_model", "delete_queryset", "get_deleted_objects"):
                assert getattr(type(model_admin), method) is not getattr(ModelAdmin, method), (model, method)
        for inline in model_admin.get_inline_instances(request):
            assert not inline.has_add_permission(request, None) and not inline.has_change_permission(request), model


@pytest.mark.django_db
def test_a_posted_edit_changes_nothing(client, admin_user, project, annotator, lead):
    trace = make_trace(project, replies=REPLIES, external_id="t0")
    annotation = accepted_error(trace, annotator=annotator, reviewer=lead, tau=2)
    client.force_login(admin_user)

    # A project holding traces keeps its convention: the settings page's rule, which the admin used to skip.
    convention = project.coordinate_convention
    other = next(c for c in CoordinateConvention.values if c != convention)
    change = reverse("admin:traces_project_change", args=[project.pk])
    page = client.get(change)
    assert page.status_code == 200 and f'href="/projects/{project.pk}/settings/"' in page.content.decode()
    response = client.post(change, {"name": project.name, "coordinate_convention": other, "history_window": 5})
    assert response.status_code == 403
    project.refresh_from_db()
    assert project.coordinate_convention == convention

    version = annotation.version
    response = client.post(
        reverse("admin:annotation_annotation_change", args=[annotation.pk]),
        {"corrected_action": "click(start_box='(1,1)')", "status": AnnotationStatus.DRAFT},
    )
    assert response.status_code == 403
    annotation.refresh_from_db()
    assert annotation.corrected_action == "click(start_box='(300,260)')" and annotation.version == version
    assert annotation.status == AnnotationStatus.ACCEPTED
    assert Annotation.objects.filter(pk=annotation.pk).exists()

    # A trace is deleted on its page, with a reason kept in the deletion record.
    assert client.post(reverse("admin:traces_trace_delete", args=[trace.pk]), {"post": "yes"}).status_code == 403
    assert Trace.objects.filter(pk=trace.pk).exists()
    assert (
        f'href="/traces/{trace.pk}/"'
        in client.get(reverse("admin:traces_trace_change", args=[trace.pk])).content.decode()
    )


@pytest.mark.django_db
def test_every_studio_model_an_operator_looks_up_has_pages_that_answer(client, admin_user, project, annotator, lead):
    """Every job kind, rounds, deletion records and webhook deliveries can be looked up; each list and each row's page
    answers 200, and a webhook's signing secret is not on its page."""
    from annotation.models import AlternativesJob
    from evaluation.models import EvaluationJob
    from traces.models import Round, TraceDeletion
    from webhooks.models import Delivery, DeliveryJob, Webhook

    trace = make_trace(project, replies=REPLIES, external_id="t0")
    annotation = accepted_error(trace, annotator=annotator, reviewer=lead)
    AlternativesJob.objects.create(annotation=annotation, step=trace.steps.first(), created_by=lead, settings_key="k")
    EvaluationJob.objects.create(project=project, checkpoint="agent-r2", model_dir="/models/r2", created_by=lead)
    Round.objects.create(project=project, name="r1", checkpoint="agent-r1", ran_at=timezone.now())
    TraceDeletion.objects.create(project=project, trace_id=999, external_id="gone", reason="duplicate", deleted_by=lead)
    hook = Webhook.objects.create(
        project=project, url="https://ci.example.org/h", events=["bundle.ready"], secret="s3cr3t-value"
    )
    delivery = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={"export": {"id": 1}})
    DeliveryJob.objects.create(delivery=delivery)
    client.force_login(admin_user)
    registered = {model for model, _ in _studio_admins()}
    assert {AlternativesJob, EvaluationJob, Round, TraceDeletion, Webhook, Delivery, DeliveryJob} <= registered
    for model in registered:
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        listing = client.get(reverse(f"{prefix}_changelist"))
        assert listing.status_code == 200, model
        row = model._base_manager.first()
        if row is not None:
            page = client.get(reverse(f"{prefix}_change", args=[row.pk]))
            assert page.status_code == 200, model
            assert "s3cr3t-value" not in page.content.decode(), model


@pytest.mark.django_db
def test_the_admin_never_shows_or_makes_an_api_token_key(client, admin_user, annotator):
    """A key is shown once, to its owner (studio.security.api_token_issue); rest_framework's token page listed every
    user's key in the clear, named each row by its key and made keys for any user. The admin has no token page."""
    from django.urls import NoReverseMatch
    from rest_framework.authtoken.models import Token, TokenProxy

    from studio.security import api_token_issue

    key = api_token_issue(user=annotator)
    assert not admin.site.is_registered(TokenProxy) and not admin.site.is_registered(Token)
    with pytest.raises(NoReverseMatch):
        reverse("admin:authtoken_tokenproxy_changelist")
    client.force_login(admin_user)
    for path in ("/admin/", "/admin/authtoken/tokenproxy/", f"/admin/authtoken/tokenproxy/{annotator.pk}/change/"):
        response = client.get(path, follow=True)
        assert key not in response.content.decode(), path
    assert client.post("/admin/authtoken/tokenproxy/add/", {"user": admin_user.pk}).status_code == 404
    assert Token.objects.filter(user=admin_user).count() == 0
