"""Leads and admins can delete a trace: audited with a reason, refused to other roles and without
a reason, through the API and the trace page."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Annotation
from tests.fixtures_annotation import make_traces
from traces.models import Step, Trace, TraceDeletion

pytestmark = pytest.mark.django_db


def test_api_delete_is_audited_and_needs_a_reason(project, annotator, lead, api_client, tmp_path):
    trace = make_traces(project, tmp_path, count=1, steps=3)[0]
    api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/")
    assert Annotation.objects.filter(trace=trace).exists()
    refused = api_client(annotator).delete(f"/api/traces/{trace.pk}/", {"reason": "mine"}, format="json")
    assert refused.status_code == 403
    no_reason = api_client(lead).delete(f"/api/traces/{trace.pk}/", {"reason": "  "}, format="json")
    assert no_reason.status_code == 400 and "reason" in no_reason.json()
    deleted = api_client(lead).delete(f"/api/traces/{trace.pk}/", {"reason": "Corrupted screenshots."}, format="json")
    assert deleted.status_code == 204
    assert not Trace.objects.filter(pk=trace.pk).exists() and not Step.objects.filter(trace_id=trace.pk).exists()
    assert not Annotation.objects.filter(trace_id=trace.pk).exists()
    record = TraceDeletion.objects.get()
    assert (record.trace_id, record.deleted_by, record.reason, record.step_count, record.annotation_count) == (
        trace.pk,
        lead,
        "Corrupted screenshots.",
        3,
        1,
    )
    assert api_client(lead).get(f"/api/projects/{project.pk}/traces/").status_code == 200


def test_page_delete(project, lead, annotator, tmp_path):
    trace = make_traces(project, tmp_path, count=1, steps=2)[0]
    client = Client()
    client.force_login(annotator)
    assert b"Delete this trace" not in client.get(f"/traces/{trace.pk}/").content
    assert client.post(f"/traces/{trace.pk}/delete/", {"reason": "x"}).status_code == 403
    client.force_login(lead)
    assert b"Delete this trace" in client.get(f"/traces/{trace.pk}/").content
    response = client.post(f"/traces/{trace.pk}/delete/", {"reason": "Duplicate of another run."}, follow=True)
    assert response.redirect_chain[-1][0] == f"/projects/{project.pk}/traces/"
    assert b"deleted" in response.content and not Trace.objects.filter(pk=trace.pk).exists()
