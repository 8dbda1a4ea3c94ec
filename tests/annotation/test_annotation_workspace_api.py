"""Queue, leases, drafts, submit and permissions of the annotator workspace, through services and the API."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.test import Client
from django.utils import timezone

from annotation import services
from annotation.models import Annotation, AnnotationStatus, AuditEvent, Lease
from annotation.selectors import workspace_payload
from studio.permissions import Role
from tests.conftest import TEST_PASSWORD
from tests.fixtures_annotation import make_traces
from traces.services import membership_add, project_create

CLICK = {"type": "click", "args": {"start_box": [500, 500]}, "style": "box"}


def take(api_client, user, project):
    response = api_client(user).post(f"/api/projects/{project.pk}/next-trace/")
    return response


@pytest.fixture
def traces(project, tmp_path):
    return make_traces(project, tmp_path, count=3, steps=4)


def test_next_trace_leases_resumes_and_skips_held(project, traces, annotator, make_user, api_client):
    other = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=other)
    first = take(api_client, annotator, project)
    assert first.status_code == 200, first.json()
    assert first.json()["trace_id"] == traces[0].pk
    again = take(api_client, annotator, project)
    assert again.json()["trace_id"] == traces[0].pk  # the held trace, not a new one
    assert again.json()["lease"]["id"] == first.json()["lease"]["id"]
    second = take(api_client, other, project)
    assert second.json()["trace_id"] == traces[1].pk
    assert Lease.objects.filter(released_at__isnull=True).count() == 2


def test_expired_lease_frees_the_trace_and_heartbeat_renews(project, traces, annotator, make_user, api_client):
    other = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=other)
    claim = take(api_client, annotator, project).json()
    lease = Lease.objects.get(pk=claim["lease"]["id"])
    before = lease.expires_at
    Lease.objects.filter(pk=lease.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=40))
    beat = api_client(annotator).post(f"/api/leases/{lease.pk}/heartbeat/")
    assert beat.status_code == 200
    lease.refresh_from_db()
    assert lease.expires_at >= before
    assert 39 <= Annotation.objects.get(pk=claim["annotation"]["id"]).time_spent_s <= 45  # credited, capped
    Lease.objects.filter(pk=lease.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert take(api_client, other, project).json()["trace_id"] == traces[0].pk
    lost = api_client(annotator).post(f"/api/leases/{lease.pk}/heartbeat/")
    assert lost.status_code == 409 and "another annotator" in lost.json()["detail"]


def test_time_credit_is_capped(project, traces, annotator, api_client):
    claim = take(api_client, annotator, project).json()
    Lease.objects.filter(pk=claim["lease"]["id"]).update(heartbeat_at=timezone.now() - timedelta(hours=3))
    api_client(annotator).post(f"/api/leases/{claim['lease']['id']}/heartbeat/")
    assert Annotation.objects.get(pk=claim["annotation"]["id"]).time_spent_s == services.HEARTBEAT_CREDIT_CAP_S


def test_lead_lists_and_releases_leases_annotator_cannot(project, traces, annotator, lead, api_client):
    claim = take(api_client, annotator, project).json()
    assert api_client(annotator).get(f"/api/projects/{project.pk}/leases/").status_code == 403
    listed = api_client(lead).get(f"/api/projects/{project.pk}/leases/").json()["results"]
    assert [row["user"] for row in listed] == ["ann"]
    released = api_client(lead).post(f"/api/leases/{claim['lease']['id']}/release/")
    assert released.status_code == 200 and released.json()["release_reason"] == "released-by-lead"
    beat = api_client(annotator).post(f"/api/leases/{claim['lease']['id']}/heartbeat/")
    assert beat.status_code == 409 and "leader" in beat.json()["detail"]


def test_draft_versions_and_stale_save_conflict(project, traces, annotator, api_client):
    claim = take(api_client, annotator, project).json()
    url = f"/api/annotations/{claim['annotation']['id']}/draft/"
    client = api_client(annotator)
    saved = client.put(
        url, {"version": 1, "verdict": "error", "tau": 2, "corrected_thought": "Click OK."}, format="json"
    )
    assert saved.status_code == 200 and saved.json()["version"] == 2
    retried = client.put(
        url, {"version": 1, "verdict": "error", "tau": 2, "corrected_thought": "Click OK."}, format="json"
    )
    assert retried.status_code == 200 and retried.json()["version"] == 2  # a retry of a landed save is harmless
    stale = client.put(url, {"version": 1, "corrected_thought": "Something else"}, format="json")
    assert stale.status_code == 409
    assert "version 2" in stale.json()["detail"] and stale.json()["current"]["corrected_thought"] == "Click OK."
    assert Annotation.objects.get(pk=claim["annotation"]["id"]).corrected_thought == "Click OK."
    assert AuditEvent.objects.filter(annotation_id=claim["annotation"]["id"], kind="edit").count() == 1
    bad = client.put(url, {"version": 2, "tau": 99}, format="json")
    assert bad.status_code == 400 and "outside the trace's steps 1..4" in bad.json()["detail"]
    bad = client.put(url, {"version": 2, "error_category": "made up"}, format="json")
    assert bad.status_code == 400 and "not one of this project's categories" in bad.json()["detail"]


def test_editor_state_renders_canonical_and_check_validates(project, traces, annotator, api_client):
    claim = take(api_client, annotator, project).json()
    pk = claim["annotation"]["id"]
    client = api_client(annotator)
    saved = client.put(
        f"/api/annotations/{pk}/draft/",
        {
            "version": 1,
            "verdict": "error",
            "tau": 1,
            "editor_state": {"corrected": CLICK, "reflection": {"type": "click", "args": {}}},
        },
        format="json",
    ).json()
    assert saved["corrected_action"] == "click(start_box='<|box_start|>(500,500)<|box_end|>')"
    assert saved["reflection_action"] == "click()"  # incomplete, kept as the editor had it
    check = client.post(
        f"/api/annotations/{pk}/check-action/",
        {"slot": "corrected", "tau": 1, "action": {"type": "click", "args": {"start_box": [1200, 5]}}},
        format="json",
    ).json()
    assert not check["valid"] and "outside the screen" in check["errors"][0]
    check = client.post(
        f"/api/annotations/{pk}/check-action/",
        {"slot": "reflection", "tau": 1, "action": {"type": "drag", "args": {"start_box": [1, 2]}}},
        format="json",
    ).json()
    assert check["errors"] == ["missing argument 'end_box' for drag"]


def test_submit_validation_messages_then_submit(project, traces, annotator, api_client):
    claim = take(api_client, annotator, project).json()
    pk = claim["annotation"]["id"]
    client = api_client(annotator)
    submit = lambda v: client.post(f"/api/annotations/{pk}/submit/", {"version": v}, format="json")  # noqa: E731
    response = submit(1)
    assert response.status_code == 400 and "verdict" in response.json()["errors"]
    client.put(f"/api/annotations/{pk}/draft/", {"version": 1, "verdict": "error", "tau": 2}, format="json")
    errors = submit(2).json()["errors"]
    assert set(errors) == {
        "error_category",
        "corrected_thought",
        "corrected_action",
        "reflection_thought",
        "reflection_action",
    }
    client.put(
        f"/api/annotations/{pk}/draft/",
        {
            "version": 2,
            "error_category": "wrong element / grounding",
            "corrected_thought": "Click Settings.",
            "reflection_thought": "I clicked the wrong item; go back.",
            "editor_state": {
                "corrected": CLICK,
                "reflection": {"type": "hotkey", "args": {"key": "alt left"}, "style": "box"},
            },
        },
        format="json",
    )
    Lease.objects.filter(pk=claim["lease"]["id"]).update(heartbeat_at=timezone.now() - timedelta(seconds=20))
    done = submit(3)
    assert done.status_code == 200, done.json()
    annotation = Annotation.objects.get(pk=pk)
    assert annotation.status == AnnotationStatus.SUBMITTED and annotation.submitted_at
    assert annotation.reflection_action == "hotkey(key='alt left')"
    assert annotation.time_spent_s >= 19
    assert Lease.objects.get(pk=claim["lease"]["id"]).release_reason == "submitted"
    assert AuditEvent.objects.filter(annotation=annotation, kind="transition", to_status="submitted").exists()
    assert client.put(f"/api/annotations/{pk}/draft/", {"version": 4, "note": "late"}, format="json").status_code == 409
    # the next trace is a new one: never the same annotator twice
    assert take(api_client, annotator, project).json()["trace_id"] == traces[1].pk


def test_no_post_reflection_without_next_screen_is_recorded(project, tmp_path, annotator, api_client):
    make_traces(project, tmp_path, count=1, steps=2, final=False)
    claim = take(api_client, annotator, project).json()
    pk = claim["annotation"]["id"]
    client = api_client(annotator)
    client.put(
        f"/api/annotations/{pk}/draft/",
        {
            "version": 1,
            "verdict": "error",
            "tau": 2,
            "error_category": "premature finish",
            "corrected_thought": "Wait.",
            "editor_state": {"corrected": {"type": "wait", "args": {}}},
        },
        format="json",
    )
    done = client.post(f"/api/annotations/{pk}/submit/", {"version": 2}, format="json")
    assert done.status_code == 200, done.json()
    recorded = Annotation.objects.get(pk=pk).no_reflection_reason
    assert "no screenshot after step 2" in recorded
    annotation = Annotation.objects.get(pk=pk)
    assert workspace_payload(annotation=annotation, lease=None)["steps"][1]["server_no_reflection_reason"] == recorded


def test_the_page_gets_each_steps_post_reflection_screen_from_the_one_rule(project, tmp_path, annotator):
    # The workspace places the post-reflection on the served reflection_screen (static/js/workspace/editor.js):
    # o_{i+1} when kept, the final screen after the last step, none when the runner kept no final screen; the same
    # rule the submit's "no o_{τ+1}" check reads (services.observation_for).

    [kept] = make_traces(project, tmp_path / "kept", count=1, steps=3, final=True)
    # Another task: the same task on the same screens would be the same trace (known by its content).
    [lost] = make_traces(
        project, tmp_path / "lost", count=1, steps=3, final=False, instruction="Open the settings, no final screen"
    )
    for trace, expected in ((kept, [2, 3, 4]), (lost, [2, 3, None])):
        annotation = Annotation.objects.create(trace=trace, project=project, annotator=annotator)
        steps = workspace_payload(annotation=annotation, lease=None)["steps"]
        assert [s["reflection_screen"] for s in steps] == expected
        # Where o_{τ+1} was not kept the server records why there is no post-reflection: the page is told so per step
        # (it hides the annotator's reason field), in the words the submit records.
        reasons = [s["server_no_reflection_reason"] for s in steps]
        assert [bool(r) for r in reasons] == [e is None for e in expected]
        assert all("no screenshot after step 3" in r for r in reasons if r)
        assert [services.observation_for(trace, i + 1) is not None for i in (1, 2, 3)] == [
            e is not None for e in expected
        ]


def test_unusable_needs_reason_and_skip_releases(project, traces, annotator, api_client):
    claim = take(api_client, annotator, project).json()
    pk = claim["annotation"]["id"]
    client = api_client(annotator)
    client.put(f"/api/annotations/{pk}/draft/", {"version": 1, "verdict": "unusable"}, format="json")
    assert client.post(f"/api/annotations/{pk}/submit/", {"version": 2}, format="json").json()["errors"] == {
        "unusable_reason": "Say why the trace is unusable."
    }
    assert client.post(f"/api/annotations/{pk}/skip/").status_code == 200
    assert Lease.objects.get(pk=claim["lease"]["id"]).release_reason == "skipped"
    assert take(api_client, annotator, project).json()["trace_id"] == traces[1].pk


def test_other_project_annotator_reaches_nothing(project, traces, annotator, make_user, api_client):
    claim = take(api_client, annotator, project).json()
    outsider = make_user("outsider", Role.ANNOTATOR)
    project_create(name="Other", members=[outsider])
    client = api_client(outsider)
    pk = claim["annotation"]["id"]
    assert client.post(f"/api/projects/{project.pk}/next-trace/").status_code == 404
    assert client.get(f"/api/annotations/{pk}/").status_code == 404
    assert client.put(f"/api/annotations/{pk}/draft/", {"version": 1, "note": "x"}, format="json").status_code == 404
    assert client.post(f"/api/annotations/{pk}/submit/", {"version": 1}, format="json").status_code == 404
    assert client.post(f"/api/leases/{claim['lease']['id']}/heartbeat/").status_code == 404
    browser = Client()
    browser.login(username="outsider", password=TEST_PASSWORD)
    assert browser.get(f"/annotations/{pk}/").status_code == 404
    # an engineer of the same project does not annotate
    assert (
        api_client(make_user("eng2", Role.ENGINEER)).post(f"/api/projects/{project.pk}/next-trace/").status_code == 403
    )


def test_csrf_is_enforced_on_writes(project, traces, annotator):
    client = Client(enforce_csrf_checks=True)
    client.login(username="ann", password=TEST_PASSWORD)
    assert client.post(f"/api/projects/{project.pk}/next-trace/").status_code == 403
    assert client.post(f"/queue/{project.pk}/next/").status_code == 403
    page = client.get("/queue/")
    token = page.cookies["csrftoken"].value
    assert client.post(f"/api/projects/{project.pk}/next-trace/", HTTP_X_CSRFTOKEN=token).status_code == 200


def test_double_annotation_gives_a_trace_to_two_distinct_annotators(project, traces, annotator, make_user, api_client):
    project.double_annotation_share = 1.0
    project.save()
    second, third = make_user("ann2", Role.ANNOTATOR), make_user("ann3", Role.ANNOTATOR)
    for user in (second, third):
        membership_add(project=project, user=user)
    assert services.trace_annotation_quota(trace_id=traces[0].pk, project=project) == 2
    assert take(api_client, annotator, project).json()["trace_id"] == traces[0].pk
    assert take(api_client, second, project).json()["trace_id"] == traces[0].pk
    assert take(api_client, third, project).json()["trace_id"] == traces[1].pk
    project.double_annotation_share = 0.25
    shares = [services.trace_annotation_quota(trace_id=i, project=project) for i in range(1, 2001)]
    assert 0.2 < shares.count(2) / len(shares) < 0.3


def test_queue_page_lists_work_and_leads_see_leases(project, traces, annotator, lead, api_client):
    take(api_client, annotator, project)
    page = Client()
    page.login(username="ann", password=TEST_PASSWORD)
    body = page.get("/queue/").content.decode()
    assert "Next trace" in body and "Your drafts" in body and "Open leases" not in body
    page.login(username="leader", password=TEST_PASSWORD)
    body = page.get("/queue/").content.decode()
    assert "Open leases" in body and ">ann<" in body


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("role_groups")
def test_concurrent_claimers_never_share_a_trace(tmp_path):
    from studio.demo import user_create_with_role

    users = [user_create_with_role(username=f"c{i}", password=TEST_PASSWORD, role=Role.ANNOTATOR) for i in range(8)]
    project = project_create(name="Race", members=users)
    make_traces(project, tmp_path, count=6, steps=1, final=False)
    results, errors = {}, []
    barrier = threading.Barrier(len(users))

    def claim(user):
        try:
            barrier.wait()
            got = services.lease_next_trace(user=user, project=project)
            results[user.username] = got[0].trace_id if got else None
        except Exception as exc:  # surfaced below
            errors.append(repr(exc))
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=claim, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    handed = [t for t in results.values() if t is not None]
    assert len(handed) == 6 and len(set(handed)) == 6  # six traces, eight claimers: two get nothing
    assert list(results.values()).count(None) == 2


def test_seed_demo_creates_accepted_annotations_idempotently(project, traces, make_user):
    make_user("annotator", Role.ANNOTATOR)
    make_user("lead", Role.LEAD)
    data = {
        "verdict": "error",
        "tau": 1,
        "error_category": "wrong element / grounding",
        "note": "demo",
        "corrected_thought": "Click the right one.",
        "corrected_action": "click(start_box='<|box_start|>(10,20)<|box_end|>')",
        "reflection_thought": "I clicked the wrong one; going back.",
        "reflection_action": "hotkey(key='alt left')",
    }
    assert services.annotation_seed_demo(project=project, external_id=traces[0].external_id, annotation=data) == 1
    assert services.annotation_seed_demo(project=project, external_id=traces[0].external_id, annotation=data) == 0
    annotation = Annotation.objects.get(trace=traces[0])
    assert annotation.status == AnnotationStatus.ACCEPTED and annotation.reviewed_by.username == "lead"
    assert annotation.corrected_action == data["corrected_action"]
    assert list(annotation.audit_events.values_list("to_status", flat=True).filter(kind="transition")) == [
        "submitted",
        "accepted",
    ]
    assert (
        services.annotation_seed_demo(
            project=project, external_id=traces[1].external_id, annotation={"verdict": "no_error"}
        )
        == 1
    )


def test_most_doubtful_first_hands_out_the_most_suspicious_trace(project, annotator, tmp_path, api_client):
    """With pre-scoring run, "most doubtful first" hands out the trace whose steps the checks doubt most."""
    from prescoring.services import prescore_job_create, prescore_job_run
    from tests.factories import native_trace_folder
    from traces.services import import_job_create, import_job_run

    calm = ["click(start_box='<|box_start|>(100,200)<|box_end|>')", "finished(content='done')"]
    looping = ["wait()", "wait()", "wait()", "wait()"]
    native_trace_folder(tmp_path / "a", external_id="calm", steps=2, actions=calm)
    native_trace_folder(tmp_path / "b", external_id="looping", steps=4, actions=looping)
    import_job_run(
        job_id=import_job_create(
            project=project, user=None, upload_name=str(tmp_path), server_path=True, enqueue=False
        ).pk
    )
    assert (
        prescore_job_run(
            job_id=prescore_job_create(project=project, user=None, scorer="rules", enqueue=False).pk
        ).status
        == "succeeded"
    )
    client = api_client(annotator)
    client.enforce_csrf_checks = False
    assert client.post(f"/api/projects/{project.pk}/next-trace/", {"order": "bogus"}, format="json").status_code == 400
    taken = client.post(f"/api/projects/{project.pk}/next-trace/", {"order": "suspicion"}, format="json")
    assert taken.status_code == 200, taken.content
    from traces.models import Trace

    assert Trace.objects.get(pk=taken.json()["trace_id"]).external_id == "looping"


def test_holder_closes_own_lease_others_cannot(project, traces, annotator, make_user, lead, api_client):
    """The workspace's beacon on page hide: the holder frees the trace; another annotator cannot touch the lease;
    closing a closed lease changes nothing."""
    other = make_user("other")
    membership_add(project=project, user=other)
    claim = take(api_client, annotator, project).json()
    lease_id = claim["lease"]["id"]
    assert api_client(other).post(f"/api/leases/{lease_id}/release/").status_code == 404
    closed = api_client(annotator).post(f"/api/leases/{lease_id}/release/")
    assert closed.status_code == 200 and closed.json()["release_reason"] == "closed"
    again = api_client(lead).post(f"/api/leases/{lease_id}/release/")
    assert again.status_code == 200 and again.json()["release_reason"] == "closed"
    assert Lease.objects.get(pk=lease_id).released_by_id == annotator.pk


def test_a_reloaded_pages_farewell_does_not_close_its_successors_lease(project, traces, annotator, api_client):
    """Reload = the old page's pagehide beacon + the new page's load, in either order at the server."""
    claim = take(api_client, annotator, project).json()
    annotation = Annotation.objects.get(pk=claim["annotation"]["id"])
    first = services.lease_take_for_annotation(annotation=annotation, user=annotator, page="old-page")
    second = services.lease_take_for_annotation(annotation=annotation, user=annotator, page="new-page")
    assert first.pk == second.pk
    farewell = api_client(annotator).post(f"/api/leases/{first.pk}/release/", {"page": "old-page"})
    assert farewell.status_code == 200 and farewell.json()["released_at"] is None
    closed = api_client(annotator).post(f"/api/leases/{first.pk}/release/", {"page": "new-page"})
    assert closed.json()["release_reason"] == "closed"
