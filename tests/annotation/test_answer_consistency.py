"""An annotation is consistent with its verdict: "no error" and "unusable" keep no τ, category,
correction or post-reflection, whoever writes (annotator's draft and submit, a lead's edit); moving τ takes off
the points placed on the old step; migration 0005 repairs stored answers."""

from __future__ import annotations

import importlib

import pytest

from annotation.models import Annotation, AnnotationStatus, AuditEvent, Verdict
from annotation.review import services as review
from tests.fixtures_annotation import make_traces

pytestmark = pytest.mark.django_db

CLICK = {"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}
ESC = {"type": "hotkey", "args": {"key": "esc"}, "style": "box"}


@pytest.fixture
def claimed(project, tmp_path, annotator, api_client):
    make_traces(project, tmp_path, count=1, steps=4)
    claim = api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/").json()
    return claim["annotation"]["id"]


def save(api_client, user, pk, version, **fields):
    response = api_client(user).put(f"/api/annotations/{pk}/draft/", {"version": version, **fields}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def full_error(project):
    return {
        "verdict": "error",
        "tau": 3,
        "error_category": project.error_categories[0],
        "corrected_thought": "Click Display.",
        "reflection_thought": "Wrong item; go back.",
        "editor_state": {"corrected": CLICK, "reflection": ESC},
    }


def test_no_error_after_a_correction_keeps_none_of_it(project, claimed, annotator, api_client):
    saved = save(api_client, annotator, claimed, 1, **full_error(project))
    assert saved["corrected_action"] and saved["tau"] == 3
    saved = save(api_client, annotator, claimed, saved["version"], verdict="no_error")
    assert (
        saved["tau"],
        saved["error_category"],
        saved["corrected_thought"],
        saved["corrected_action"],
        saved["reflection_thought"],
        saved["reflection_action"],
    ) == (None, "", "", "", "", "")
    assert saved["editor_state"] == {"corrected": None, "reflection": None}
    submitted = api_client(annotator).post(
        f"/api/annotations/{claimed}/submit/", {"version": saved["version"]}, format="json"
    )
    assert submitted.status_code == 200, submitted.json()
    stored = Annotation.objects.get(pk=claimed)
    assert stored.verdict == Verdict.NO_ERROR and stored.tau is None and stored.corrected_action == ""


def test_unusable_keeps_only_its_reason_and_error_drops_it(project, claimed, annotator, api_client):
    saved = save(api_client, annotator, claimed, 1, verdict="unusable", unusable_reason="Blank screens.", tau=2)
    assert saved["tau"] is None and saved["unusable_reason"] == "Blank screens."
    saved = save(api_client, annotator, claimed, saved["version"], verdict="error", tau=2)
    assert saved["unusable_reason"] == "" and saved["tau"] == 2


def test_moving_tau_takes_off_points_placed_on_the_old_step(project, claimed, annotator, api_client):
    saved = save(api_client, annotator, claimed, 1, **full_error(project))
    moved = save(
        api_client, annotator, claimed, saved["version"], tau=2, editor_state={"corrected": CLICK, "reflection": ESC}
    )  # the page still sends the old point
    assert moved["tau"] == 2
    assert moved["editor_state"]["corrected"]["type"] == "click"
    assert "start_box" not in moved["editor_state"]["corrected"]["args"]
    assert moved["corrected_action"] == "click()"
    assert moved["editor_state"]["reflection"]["args"] == {"key": "esc"}  # no point: nothing to take off
    placed_again = save(
        api_client, annotator, claimed, moved["version"], editor_state={"corrected": CLICK, "reflection": ESC}
    )
    assert placed_again["corrected_action"] == "click(start_box='<|box_start|>(500,500)<|box_end|>')"


def test_a_leads_edit_obeys_the_same_rule(project, claimed, annotator, lead, api_client):
    saved = save(api_client, annotator, claimed, 1, **full_error(project))
    assert (
        api_client(annotator)
        .post(f"/api/annotations/{claimed}/submit/", {"version": saved["version"]}, format="json")
        .status_code
        == 200
    )
    review.review_edit_and_accept(annotation_id=claimed, actor=lead, edits={"verdict": "no_error"})
    stored = Annotation.objects.get(pk=claimed)
    assert stored.status == AnnotationStatus.ACCEPTED and stored.verdict == Verdict.NO_ERROR
    assert (stored.tau, stored.corrected_action, stored.reflection_action, stored.error_category) == (None, "", "", "")


def test_migration_repairs_stored_contradictions(project, claimed, annotator):
    Annotation.objects.filter(pk=claimed).update(  # as the old code stored it
        verdict=Verdict.NO_ERROR,
        tau=3,
        error_category="x",
        corrected_action="click(start_box='(1,2)')",
        editor_state={"corrected": CLICK, "reflection": None},
        status=AnnotationStatus.SUBMITTED,
    )
    migration = importlib.import_module("annotation.migrations.0005_answers_consistent_with_verdict")
    from django.apps import apps

    migration.repair(apps, None)
    stored = Annotation.objects.get(pk=claimed)
    assert (stored.tau, stored.error_category, stored.corrected_action) == (None, "", "")
    assert stored.editor_state == {"corrected": None, "reflection": None}
    event = AuditEvent.objects.filter(annotation_id=claimed, kind="edit").last()
    assert "contradicted its verdict" in event.comment and event.changes["tau"] == [3, None]
    before = stored.version
    migration.repair(apps, None)  # run again: nothing left to repair
    assert Annotation.objects.get(pk=claimed).version == before


def test_review_shows_and_accepts_only_what_the_verdict_allows(project, claimed, annotator, lead, api_client, client):
    saved = save(api_client, annotator, claimed, 1, verdict="no_error")
    assert (
        api_client(annotator)
        .post(f"/api/annotations/{claimed}/submit/", {"version": saved["version"]}, format="json")
        .status_code
        == 200
    )
    Annotation.objects.filter(pk=claimed).update(  # a row written around the services (as before the rule)
        tau=3, error_category=project.error_categories[0], corrected_action="click(start_box='(1,2)')"
    )
    client.force_login(lead)
    page = client.get(f"/reviews/{claimed}/").content.decode()
    assert "No error" in page and "τ =" not in page and "review-grid" not in page
    assert project.error_categories[0] not in page.split('class="instruction card"')[1].split("</section>")[0]
    review.review_accept(annotation_id=claimed, actor=lead)
    stored = Annotation.objects.get(pk=claimed)
    assert stored.status == AnnotationStatus.ACCEPTED
    assert (stored.tau, stored.error_category, stored.corrected_action) == (None, "", "")
    assert AuditEvent.objects.filter(annotation_id=claimed, kind="edit", changes__tau=[3, None]).exists()
