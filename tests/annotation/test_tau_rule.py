"""A point belongs to its screenshot: moving τ by any path (the annotator's draft, the lead's edit form,
the review API's edit-accept and adjudicate) never keeps a point or element box placed on the old step's screenshot;
the rule is one function (services.answer_after_tau_move); an export after either path trains each point on the
screenshot it was drawn on; ``tau_moved_points`` reports accepted answers from before the rule."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Annotation, AnnotationStatus
from annotation.services import annotation_record_edit, annotation_transition
from exports.builders import BuildStats, ExportOptions, Skip, iter_samples
from tests.conftest import REPO
from tests.fixtures_annotation import make_traces
from traces.models import Step

pytestmark = pytest.mark.django_db

ON_STEP_3 = {"type": "click", "args": {"start_box": [300, 180]}, "style": "box", "target_box": [250, 150, 350, 210]}
ESC = {"type": "hotkey", "args": {"key": "esc"}, "style": "box"}


@pytest.fixture
def claimed(project, tmp_path, annotator, api_client):
    make_traces(project, tmp_path, count=1, steps=4)
    return api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/").json()["annotation"]["id"]


def save(api_client, user, pk, version, **fields):
    response = api_client(user).put(f"/api/annotations/{pk}/draft/", {"version": version, **fields}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def submitted_at_tau_3(project, api_client, annotator, pk) -> dict:
    saved = save(
        api_client,
        annotator,
        pk,
        1,
        verdict="error",
        tau=3,
        error_category=project.error_categories[0],
        corrected_thought="Click Display.",
        reflection_thought="Wrong item; go back.",
        editor_state={"corrected": ON_STEP_3, "reflection": ESC},
    )
    done = api_client(annotator).post(f"/api/annotations/{pk}/submit/", {"version": saved["version"]}, format="json")
    assert done.status_code == 200, done.json()
    return done.json()


def exported_corrections(project) -> list:
    options = ExportOptions(validation_fraction=0)
    return [s for s in iter_samples(project, options, BuildStats()) if not isinstance(s, Skip)]


def assert_trained_where_drawn(project, annotation: Annotation, drawn: dict[int, tuple[int, int]]) -> None:
    """Every error-correction sample's point was drawn on the stored screenshot its prompt shows: the sample's last
    image is step τ's stored screenshot, and its point is the one placed on that step (``drawn``: step -> point)."""
    samples = [s for s in exported_corrections(project) if s.kind == "error_correction"]
    assert len(samples) == 1
    sample = samples[0]
    step = Step.objects.select_related("screenshot").get(trace=annotation.trace, index=sample.step)
    assert sample.step == annotation.tau
    assert sample.prompt.images[-1].sha256 == step.screenshot.sha256, "the sample shows another step's screenshot"
    point = tuple(int(v) for v in re.search(r"\((\d+),(\d+)\)", sample.completion).groups())
    assert point == drawn[sample.step], f"step {sample.step} trains {point}, drawn there: {drawn[sample.step]}"
    assert all(point != p for s, p in drawn.items() if s != sample.step)


def test_the_review_api_refuses_a_tau_move_that_keeps_the_old_click(project, claimed, annotator, lead, api_client):
    version = submitted_at_tau_3(project, api_client, annotator, claimed)["version"]
    lead_api = api_client(lead)
    moved = lead_api.post(
        f"/api/reviews/{claimed}/edit-accept/", {"version": version, "edits": {"tau": 2}}, format="json"
    )
    assert moved.status_code == 400, moved.json()
    assert "τ moved from 3 to 2" in moved.json()["detail"] and "step 3's screenshot" in moved.json()["detail"]
    stored = Annotation.objects.get(pk=claimed)
    assert (stored.status, stored.tau, stored.editor_state["corrected"]) == (AnnotationStatus.SUBMITTED, 3, ON_STEP_3)
    # A new click placed on o_2 goes through; the box drawn on o_3 does not follow it.
    placed = lead_api.post(
        f"/api/reviews/{claimed}/edit-accept/",
        {"version": version, "edits": {"tau": 2, "corrected_action": "click(start_box='(420,330)')"}},
        format="json",
    )
    assert placed.status_code == 200, placed.json()
    stored.refresh_from_db()
    assert (stored.status, stored.tau) == (AnnotationStatus.ACCEPTED, 2)
    assert stored.editor_state["corrected"]["args"] == {"start_box": [420, 330]}
    assert "target_box" not in stored.editor_state["corrected"]
    assert_trained_where_drawn(project, stored, {3: (300, 180), 2: (420, 330)})


def test_a_point_given_with_the_tau_move_is_the_leads_new_point_even_where_the_old_one_was(
    project, claimed, annotator, lead, api_client
):
    """The lead moves τ and types the point again, on the new τ's screen, where the annotator's happened to be: it is
    the lead's point for the new τ (given with the move), not the old one left behind. The old box does not follow."""
    version = submitted_at_tau_3(project, api_client, annotator, claimed)["version"]
    retyped = api_client(lead).post(
        f"/api/reviews/{claimed}/edit-accept/",
        {"version": version, "edits": {"tau": 2, "corrected_action": "click(start_box='(300,180)')"}},
        format="json",
    )
    assert retyped.status_code == 200, retyped.json()
    stored = Annotation.objects.get(pk=claimed)
    assert (stored.status, stored.tau) == (AnnotationStatus.ACCEPTED, 2)
    assert stored.corrected_action == "click(start_box='<|box_start|>(300,180)<|box_end|>')"
    assert stored.editor_state["corrected"]["args"] == {"start_box": [300, 180]}
    assert "target_box" not in stored.editor_state["corrected"]
    # The audit says the lead moved τ and gave the action on step 2 (the text is the same; the place is not).
    edit = stored.audit_events.filter(kind="edit").latest("id")
    assert edit.changes["tau"] == [3, 2] and "editor_state" in edit.changes


def test_the_leads_edit_form_and_adjudication_refuse_it_too(project, claimed, annotator, lead, api_client):
    version = submitted_at_tau_3(project, api_client, annotator, claimed)["version"]
    stored = Annotation.objects.get(pk=claimed)
    page = Client()
    page.force_login(lead)
    form = {
        "decision": "edit_accept",
        "version": version,
        "verdict": "error",
        "tau": "4",
        "error_category": stored.error_category,
        "corrected_thought": stored.corrected_thought,
        "reflection_thought": stored.reflection_thought,
    }  # the actions the lead did not touch: the page does not send them (static/js/review/edit_form.js)
    refused = page.post(f"/reviews/{claimed}/decide/", form)
    assert refused.status_code == 400
    assert "τ moved from 3 to 4" in refused.content.decode()
    assert Annotation.objects.get(pk=claimed).tau == 3
    refused = api_client(lead).post(f"/api/reviews/{claimed}/adjudicate/", {"edits": {"tau": 1}}, format="json")
    assert refused.status_code == 400 and "τ moved from 3 to 1" in refused.json()["detail"]
    assert Annotation.objects.get(pk=claimed).status == AnnotationStatus.SUBMITTED


def test_the_draft_takes_the_points_off_and_the_export_trains_the_new_ones(
    project, claimed, annotator, lead, api_client
):
    saved = save(
        api_client,
        annotator,
        claimed,
        1,
        verdict="error",
        tau=3,
        error_category=project.error_categories[0],
        corrected_thought="Click Display.",
        reflection_thought="Wrong item; go back.",
        editor_state={"corrected": ON_STEP_3, "reflection": ESC},
    )
    moved = save(api_client, annotator, claimed, saved["version"], tau=2, editor_state=saved["editor_state"])
    assert moved["editor_state"]["corrected"] == {"type": "click", "args": {}, "style": "box"}
    submit = api_client(annotator).post(
        f"/api/annotations/{claimed}/submit/", {"version": moved["version"]}, format="json"
    )
    assert submit.status_code == 400 and "corrected_action" in submit.json()["errors"]
    on_step_2 = {"type": "click", "args": {"start_box": [610, 240]}, "style": "box"}
    placed = save(
        api_client, annotator, claimed, moved["version"], editor_state={"corrected": on_step_2, "reflection": ESC}
    )
    submit = api_client(annotator).post(
        f"/api/annotations/{claimed}/submit/", {"version": placed["version"]}, format="json"
    )
    assert submit.status_code == 200, submit.json()
    accepted = api_client(lead).post(
        f"/api/reviews/{claimed}/accept/", {"version": submit.json()["version"]}, format="json"
    )
    assert accepted.status_code == 200, accepted.json()
    assert_trained_where_drawn(project, Annotation.objects.get(pk=claimed), {3: (300, 180), 2: (610, 240)})


def test_every_path_that_moves_tau_calls_the_one_rule():
    """The rule is one function; the draft's write and the lead's edits call it, and no other module takes points off
    an action by hand."""
    sources = {
        path: (REPO / path).read_text(encoding="utf-8")
        for path in ("annotation/services/drafts.py", "annotation/review/services.py")
    }
    assert sources["annotation/services/drafts.py"].count("def answer_after_tau_move(") == 1
    assert "answer_after_tau_move(annotation, out)" in sources["annotation/services/drafts.py"]
    assert sources["annotation/review/services.py"].count("answer_after_tau_move(") == 2
    others = [
        p
        for p in (REPO / "annotation").rglob("*.py")
        if "migrations" not in p.parts and "_without(" in p.read_text(encoding="utf-8")
    ]
    assert [p.relative_to(REPO).as_posix() for p in others] == ["annotation/services/drafts.py"]


def test_the_command_reports_answers_accepted_with_a_moved_tau(project, claimed, annotator, lead, api_client):
    version = submitted_at_tau_3(project, api_client, annotator, claimed)["version"]
    # Accepted as the review path did before the rule: τ moved, the click drawn on o_3 kept.
    annotation = Annotation.objects.get(pk=claimed)
    from django.db import transaction

    with transaction.atomic():
        annotation.tau, annotation.version = 2, version + 1
        annotation.save()
        annotation_record_edit(annotation=annotation, actor=lead, changes={"tau": [3, 2]})
        annotation_transition(annotation=annotation, to=AnnotationStatus.ACCEPTED, actor=lead)
    out = StringIO()
    call_command("tau_moved_points", stdout=out)
    text = out.getvalue()
    assert text.startswith("1 of 1 accepted error annotations hold a point drawn for another τ (1 actions).")
    assert f"annotation {claimed} " in text and "drawn for τ=3, accepted with τ=2" in text
    assert Annotation.objects.get(pk=claimed).editor_state["corrected"] == ON_STEP_3  # reported, not rewritten
    # An answer accepted through the rule is not reported.
    with transaction.atomic():
        annotation = Annotation.objects.select_for_update().get(pk=claimed)
        annotation.tau, annotation.version = 3, annotation.version + 1
        annotation.save()
        annotation_record_edit(annotation=annotation, actor=lead, changes={"tau": [2, 3]})
    out = StringIO()
    call_command("tau_moved_points", f"--project={project.pk}", stdout=out)
    assert out.getvalue().startswith("0 of 1 accepted")
