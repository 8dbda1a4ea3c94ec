"""An annotation's versions: every saved version listed (who, when, number, what changed in words) to its
annotator and the project's leads, and one restored as a new, audited version through the draft's write (409 on a
stale base; the status rules of editing)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F

from annotation.models import Annotation, AnnotationStatus, AuditEvent
from studio.permissions import Role
from tests.fixtures_annotation import make_traces
from traces.services import membership_add

pytestmark = pytest.mark.django_db

CLICK = {"type": "click", "args": {"start_box": [300, 180]}, "style": "box"}
OTHER_CLICK = {"type": "click", "args": {"start_box": [640, 410]}, "style": "box"}


@pytest.fixture
def claimed(project, tmp_path, annotator, api_client):
    make_traces(project, tmp_path, count=1, steps=4)
    return api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/").json()["annotation"]["id"]


def save(api_client, user, pk, version, **fields):
    response = api_client(user).put(f"/api/annotations/{pk}/draft/", {"version": version, **fields}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def versions(api_client, user, pk):
    response = api_client(user).get(f"/api/annotations/{pk}/versions/")
    assert response.status_code == 200, response.json()
    return response.json()


def restore(api_client, user, pk, number, base):
    return api_client(user).post(f"/api/annotations/{pk}/versions/{number}/restore/", {"version": base}, format="json")


@pytest.fixture
def three_saves(project, claimed, annotator, api_client) -> dict:
    """v2: an error at τ 3 with a click; v3: the thought rewritten; v4: the verdict turned to "no error" (the
    correction cleared by the verdict rule: what a stray key did)."""
    v2 = save(
        api_client,
        annotator,
        claimed,
        1,
        verdict="error",
        tau=3,
        error_category=project.error_categories[0],
        corrected_thought="Click Display.",
        editor_state={"corrected": CLICK, "reflection": None},
    )
    v3 = save(api_client, annotator, claimed, v2["version"], corrected_thought="Open the Display panel.")
    v4 = save(api_client, annotator, claimed, v3["version"], verdict="no_error")
    assert (v2["version"], v3["version"], v4["version"]) == (2, 3, 4) and v4["corrected_action"] == ""
    return {"v2": v2, "v3": v3, "v4": v4}


def test_versions_are_listed_newest_first_in_words(claimed, annotator, three_saves, api_client):
    listed = versions(api_client, annotator, claimed)
    assert listed["current_version"] == 4 and listed["can_restore"] is True
    numbers = [v["number"] for v in listed["versions"]]
    assert numbers == [4, 3, 2, 1]
    newest, thought, first_save, made = listed["versions"]
    assert newest["current"] and not thought["current"]
    assert newest["by"] == annotator.username and newest["status"] == "Draft"
    assert "verdict: First error at τ → No error" in newest["changes"]
    assert "first error (τ): step 3 → nothing" in newest["changes"]
    assert thought["changes"] == ["corrected thought: “Click Display.” → “Open the Display panel.”"]
    assert "verdict: Not decided → First error at τ" in first_save["changes"]
    assert "corrected action: nothing → “click(start_box='<|box_start|>(300,180)<|box_end|>')”" in first_save["changes"]
    assert made["kind"] == "created" and made["number"] == 1
    assert thought["restore_url"] == f"/api/annotations/{claimed}/versions/3/restore/"


def test_restoring_writes_the_old_answer_as_a_new_audited_version(claimed, annotator, three_saves, api_client):
    restored = restore(api_client, annotator, claimed, 3, base=4)
    assert restored.status_code == 200, restored.json()
    body = restored.json()
    assert body["version"] == 5 and body["restored"] == 3
    stored = Annotation.objects.get(pk=claimed)
    assert (stored.verdict, stored.tau, stored.corrected_thought) == ("error", 3, "Open the Display panel.")
    assert stored.editor_state["corrected"] == CLICK
    assert stored.corrected_action == "click(start_box='<|box_start|>(300,180)<|box_end|>')"
    event = AuditEvent.objects.filter(annotation_id=claimed).latest("id")
    assert (event.kind, event.version, event.comment, event.actor_id) == ("edit", 5, "Restored version 3", annotator.pk)
    assert event.changes["verdict"] == ["no_error", "error"]
    newest = versions(api_client, annotator, claimed)["versions"][0]
    assert newest["number"] == 5 and newest["kind"] == "restore" and newest["changes"][0] == "Restored version 3"
    # The same restore retried after it landed changes nothing and answers the annotation as it is.
    again = restore(api_client, annotator, claimed, 3, base=4)
    assert again.status_code == 200 and again.json()["version"] == 5


def test_a_stale_base_is_refused_and_overwrites_nothing(claimed, annotator, three_saves, api_client):
    stale = restore(api_client, annotator, claimed, 2, base=3)
    assert stale.status_code == 409
    assert stale.json()["current_version"] == 4 and stale.json()["current"]["verdict"] == "no_error"
    assert Annotation.objects.get(pk=claimed).version == 4
    assert restore(api_client, annotator, claimed, 9, base=4).status_code == 404
    assert restore(api_client, annotator, claimed, 2, base="x").status_code == 400


def test_a_restore_goes_through_the_tau_rule(project, claimed, annotator, three_saves, api_client):
    """Version 2 holds τ 3 with a click drawn on o_3; now τ is 2 with another click: restoring brings both back
    together (the restored click is the one drawn for the restored τ)."""
    v5 = save(
        api_client,
        annotator,
        claimed,
        4,
        verdict="error",
        tau=2,
        error_category=project.error_categories[0],
        editor_state={"corrected": OTHER_CLICK, "reflection": None},
    )
    restored = restore(api_client, annotator, claimed, 2, base=v5["version"])
    assert restored.status_code == 200, restored.json()
    assert restored.json()["tau"] == 3 and restored.json()["editor_state"]["corrected"] == CLICK


def test_status_rules_follow_editing(project, claimed, annotator, lead, three_saves, api_client):
    submitted = api_client(annotator).post(f"/api/annotations/{claimed}/submit/", {"version": 4}, format="json")
    assert submitted.status_code == 200, submitted.json()
    version = submitted.json()["version"]
    # Submitted: no longer the annotator's to change; a lead's to restore before deciding (it stays submitted).
    listed = versions(api_client, annotator, claimed)
    assert listed["can_restore"] is False and "waits for review" in listed["restore_refusal"]
    assert restore(api_client, annotator, claimed, 3, base=version).status_code == 409
    assert versions(api_client, lead, claimed)["can_restore"] is True
    by_lead = restore(api_client, lead, claimed, 3, base=version)
    assert by_lead.status_code == 200, by_lead.json()
    stored = Annotation.objects.get(pk=claimed)
    assert (stored.status, stored.verdict, stored.tau) == (AnnotationStatus.SUBMITTED, "error", 3)
    accepted = api_client(lead).post(f"/api/reviews/{claimed}/accept/", {"version": stored.version}, format="json")
    assert accepted.status_code == 200, accepted.json()
    # Accepted: nobody restores (an accepted answer changes by adjudication only).
    refused = restore(api_client, lead, claimed, 2, base=accepted.json()["version"])
    assert refused.status_code == 409 and "adjudication" in refused.json()["detail"]
    assert versions(api_client, lead, claimed)["versions"][0]["status"] == "Accepted"


def test_only_its_annotator_and_leads_see_the_versions(project, claimed, three_saves, make_user, engineer, api_client):
    other = make_user("other-annotator", Role.ANNOTATOR)
    membership_add(project=project, user=other)  # a member of the project: still not their annotation
    assert api_client(other).get(f"/api/annotations/{claimed}/versions/").status_code == 404
    assert restore(api_client, other, claimed, 2, base=4).status_code == 404
    assert api_client(engineer).get(f"/api/annotations/{claimed}/versions/").status_code == 403


def test_rows_recorded_without_a_version_are_numbered_back_from_the_annotation(
    claimed, annotator, three_saves, api_client
):
    before = versions(api_client, annotator, claimed)["versions"]
    AuditEvent.objects.filter(annotation_id=claimed).update(version=None)
    assert versions(api_client, annotator, claimed)["versions"] == before
    assert restore(api_client, annotator, claimed, 2, base=4).json()["corrected_thought"] == "Click Display."


THOUGHT = "Click the Display item in the sidebar of the Settings window, then wait for its page to open."


def type_thought(api_client, annotator, pk, version, text: str, *, every: int = 1) -> int:
    """Save ``text`` as the workspace does while it is typed: a save at each pause, a word (``every`` words) more each
    time. Returns the version the last save made."""
    words = text.split(" ")
    for n in range(every, len(words) + every, every):
        version = save(api_client, annotator, pk, version, corrected_thought=" ".join(words[:n]))["version"]
    return version


def test_a_typing_session_is_one_version_with_what_it_changed(project, claimed, annotator, api_client):
    v2 = save(api_client, annotator, claimed, 1, verdict="error", tau=3, error_category=project.error_categories[0])
    typed = type_thought(api_client, annotator, claimed, v2["version"], THOUGHT)
    assert typed == 2 + len(THOUGHT.split(" "))  # every save is a version (the draft's version check counts them)
    listed = versions(api_client, annotator, claimed)["versions"]
    assert [v["number"] for v in listed] == [typed, 2, 1]
    session = listed[0]
    assert (session["first"], session["saves"], session["current"]) == (3, typed - 2, True)
    assert session["changes"] == [f"corrected thought: nothing → “{THOUGHT[:57]}…”"]
    # The audit trail keeps every save, and any of them is still restored by its number.
    assert AuditEvent.objects.filter(annotation_id=claimed, kind="edit").count() == typed - 1
    halfway = restore(api_client, annotator, claimed, 8, base=typed)
    assert halfway.status_code == 200 and halfway.json()["corrected_thought"] == " ".join(THOUGHT.split(" ")[:6])


def test_a_rewritten_text_shows_what_differs_and_a_pause_ends_a_session(project, claimed, annotator, api_client):
    v2 = save(api_client, annotator, claimed, 1, verdict="error", tau=3, error_category=project.error_categories[0])
    written = type_thought(api_client, annotator, claimed, v2["version"], THOUGHT, every=4)
    # A pause longer than TYPING_PAUSE, then one word changed mid-sentence (two texts that read alike when cut).
    AuditEvent.objects.filter(annotation_id=claimed).update(at=F("at") - timedelta(minutes=3))
    rewritten = THOUGHT.replace("Display", "Sound")
    changed = save(api_client, annotator, claimed, written, corrected_thought=rewritten)["version"]
    listed = versions(api_client, annotator, claimed)["versions"]
    assert [v["number"] for v in listed] == [changed, written, 2, 1]
    rewrite = listed[0]
    assert rewrite["saves"] == 1
    assert rewrite["changes"] == ["corrected thought: rewritten (what differs is shown below)"]
    assert rewrite["diffs"] == [
        {
            "field": "corrected thought",
            "segments": [
                {"op": "equal", "text": "Click the "},
                {"op": "delete", "text": "Display"},
                {"op": "insert", "text": "Sound"},
                {"op": "equal", "text": " item in the sidebar of the…"},
            ],
        }
    ]
    # Another field, or the verdict, is another version: only the saves typing one field are a session.
    note = save(api_client, annotator, claimed, changed, note="Check the sound page.")["version"]
    assert [v["number"] for v in versions(api_client, annotator, claimed)["versions"]][:2] == [note, changed]
