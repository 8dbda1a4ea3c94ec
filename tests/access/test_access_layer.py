"""studio.access, the one engine behind every permission check: scope kinds, the row lock, 404 versus 403 and
their wording, list scoping; and that no module outside the access layer checks permissions by hand."""

from __future__ import annotations

import re
import subprocess

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from studio.access import (
    ENTITIES,
    AccessRefused,
    NotInScope,
    access,
    can,
    refusal,
    scoped,
)
from studio.permissions import PAGE_PERMISSIONS, PERMISSIONS, RULES, SOCKET_PERMISSIONS, Role, Scope
from tests.answers import error_json
from tests.conftest import REPO
from tests.factories import make_world
from tests.fixtures_annotation import make_traces


@pytest.fixture
def world(db, project, annotator, lead, engineer, admin_user, make_user, tmp_path):
    from traces.models import Membership

    colleague = make_user("colleague", Role.ANNOTATOR)  # another annotator of the same project
    Membership.objects.create(project=project, user=colleague)
    world = make_world(tmp_path, project=project, annotator=annotator, lead=lead)
    return {**world, "colleague": colleague, "engineer": engineer, "admin": admin_user}


def test_the_table_is_one_set_of_rules():
    assert PERMISSIONS == {action: rule.roles for action, rule in RULES.items()}
    named = set(PAGE_PERMISSIONS.values()) | set(SOCKET_PERMISSIONS.values())
    assert named - {"public"} <= set(RULES)
    for action, rule in RULES.items():
        assert rule.scope in Scope and rule.roles, action
        assert rule.doing and not rule.doing.endswith("."), action  # said as "You cannot <doing>."
        assert not rule.unless or rule.scope in (Scope.OWN, Scope.NOT_BLIND), f"{action}: unless narrows nothing"
    assert refusal("annotation.review") == "You cannot review annotations."


# --- member scope ----------------------------------------------------------------------------------


def test_member_scope_answers_404_alike_for_another_project_and_no_such_id(world):
    from traces.access import access_trace

    trace = world["traces"][0]
    for user in ("annotator", "lead", "engineer", "admin"):
        assert access_trace(world[user], trace.pk, "trace.view") == trace
    with pytest.raises(NotInScope) as elsewhere:
        access_trace(world["outsider"], trace.pk, "trace.view")
    with pytest.raises(NotInScope) as missing:
        access_trace(world["outsider"], 10**9, "trace.view")
    with pytest.raises(NotInScope) as not_an_id:
        access_trace(world["outsider"], "abc", "trace.view")
    assert str(elsewhere.value) == str(missing.value) == str(not_an_id.value) == "No such trace among yours."
    # The admin belongs to every project; the outsider reaches their own.
    assert access_trace(world["admin"], world["other_trace"].pk, "trace.view") == world["other_trace"]
    assert access_trace(world["outsider"], world["other_trace"].pk, "trace.view") == world["other_trace"]


def test_a_member_whose_role_may_not_gets_403_with_the_rules_wording(world):
    from traces.access import access_trace

    trace = world["traces"][0]
    with pytest.raises(AccessRefused) as refused:
        access_trace(world["annotator"], trace.pk, "trace.delete")
    assert str(refused.value) == "You cannot delete traces." == refusal("trace.delete")
    assert access_trace(world["lead"], trace.pk, "trace.delete") == trace
    # Outside the project the role question is never reached: 404, not 403 (nothing to learn from the answer).
    with pytest.raises(NotInScope):
        access_trace(world["outsider"], trace.pk, "trace.delete")


# --- own scope -------------------------------------------------------------------------------------


def test_own_scope_reaches_one_own_annotation_only(world):
    from annotation.access import access_annotation

    annotation = world["annotation"]
    assert access_annotation(world["annotator"], annotation.pk, "annotation.work") == annotation
    for other in ("colleague", "lead", "outsider"):  # a lead too: annotation.work has no "unless"
        with pytest.raises(NotInScope) as caught:
            access_annotation(world[other], annotation.pk, "annotation.work")
        assert str(caught.value) == "No such annotation among yours.", other
    with pytest.raises(AccessRefused, match="You cannot annotate."):
        access_annotation(world["engineer"], annotation.pk, "annotation.work")
    # Reviewing is another action: the lead reaches it, the owner's role may not.
    assert access_annotation(world["lead"], annotation.pk, "annotation.review") == annotation
    with pytest.raises(AccessRefused, match="You cannot review annotations."):
        access_annotation(world["annotator"], annotation.pk, "annotation.review")


def test_own_scope_with_unless_lets_leads_reach_every_lease_of_their_projects(world):
    from annotation.access import access_lease

    lease = world["lease"]
    assert access_lease(world["annotator"], lease.pk, "lease.release") == lease
    assert access_lease(world["lead"], lease.pk, "lease.release") == lease
    assert access_lease(world["admin"], lease.pk, "lease.release") == lease
    for other in ("colleague", "outsider"):
        with pytest.raises(NotInScope, match="No such lease among yours."):
            access_lease(world[other], lease.pk, "lease.release")
    assert can(world["lead"], "lease.release", lease) and not can(world["colleague"], "lease.release", lease)


def test_own_scope_on_an_entity_without_an_owner_is_membership(world):
    from traces.access import access_project

    project = world["project"]
    assert access_project(world["colleague"], project.pk, "annotation.work") == project
    with pytest.raises(NotInScope, match="No such project among yours."):
        access_project(world["outsider"], project.pk, "annotation.work")
    with pytest.raises(AccessRefused):
        access_project(world["engineer"], project.pk, "annotation.work")


# --- not-blind scope -------------------------------------------------------------------------------


def test_not_blind_scope_hides_pre_scoring_from_annotators_of_a_blind_project(world):
    from traces.access import access_trace

    project, trace = world["project"], world["traces"][0]
    assert all(can(world[u], "prescore.view", trace) for u in ("annotator", "lead", "engineer", "admin"))
    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    trace.refresh_from_db()
    assert not can(world["annotator"], "prescore.view", trace)
    assert not can(world["annotator"], "prescore.view", project)
    assert all(can(world[u], "prescore.view", trace) for u in ("lead", "engineer", "admin"))
    assert not can(world["outsider"], "prescore.view", trace)
    with pytest.raises(AccessRefused, match="You cannot see model pre-scoring in this project."):
        access_trace(world["annotator"], trace.pk, "prescore.view")
    assert access_trace(world["engineer"], trace.pk, "prescore.view") == trace
    from traces.models import Trace

    assert not scoped(world["annotator"], Trace.objects.filter(project=project), "prescore.view").exists()
    assert scoped(world["lead"], Trace.objects.filter(project=project), "prescore.view").count() == 2


def test_the_blind_rule_decides_the_queue_flag_and_the_hand_out_alike(world):
    """One rule, three places: the queue page's order checkbox (a server-given flag), the lease hand-out's
    suspicion order and the pre-scoring API all follow prescore.view."""
    from annotation.selectors import queue_for_user

    project = world["project"]
    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    row = next(r for r in queue_for_user(world["annotator"]) if r["project"].pk == project.pk)
    assert row["suspicion_order"] is False
    row = next(r for r in queue_for_user(world["lead"]) if r["project"].pk == project.pk)
    assert row["suspicion_order"] is True
    client = Client()
    client.force_login(world["annotator"])
    page = client.get("/queue/")
    assert page.status_code == 200 and b"data-doubtful-first" not in page.content
    hidden = client.get(f"/api/traces/{world['traces'][0].pk}/suggestions/")
    assert hidden.status_code == 200 and hidden.json()["hidden"] is True
    lead = Client()
    lead.force_login(world["lead"])
    assert b"data-doubtful-first" in lead.get("/queue/").content
    assert lead.get(f"/api/traces/{world['traces'][0].pk}/suggestions/").json()["hidden"] is False


# --- the lock --------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_lock_reads_the_row_for_update_after_the_same_checks(role_groups, make_user, tmp_path):
    from annotation.access import access_annotation
    from annotation.services import lease_next_trace
    from traces.services import project_create

    owner, colleague = make_user("own", Role.ANNOTATOR), make_user("col", Role.ANNOTATOR)
    project = project_create(name="Locks", members=[owner, colleague])
    make_traces(project, tmp_path / "t", count=1, steps=1)
    annotation, _ = lease_next_trace(user=owner, project=project)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        assert access_annotation(owner, annotation.pk, "annotation.work", lock=True) == annotation
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in sql
    with transaction.atomic(), pytest.raises(NotInScope):
        access_annotation(colleague, annotation.pk, "annotation.work", lock=True)
    with CaptureQueriesContext(connection) as unlocked:
        access_annotation(owner, annotation.pk, "annotation.work")
    assert "FOR UPDATE" not in " ".join(q["sql"] for q in unlocked.captured_queries)


# --- lists -----------------------------------------------------------------------------------------


def test_lists_are_scoped_like_single_objects(world):
    from annotation.access import annotations_for, history_for, leases_for
    from annotation.models import AuditEvent
    from annotation.services import annotation_save_draft, lease_next_trace
    from traces.access import projects_for, traces_for

    project, annotation = world["project"], world["annotation"]
    theirs, _ = lease_next_trace(user=world["colleague"], project=project)
    assert set(traces_for(world["outsider"])) == {world["other_trace"]}
    assert set(traces_for(world["annotator"])) == set(world["traces"])
    assert set(projects_for(world["engineer"], "annotation.work")) == set()
    assert set(projects_for(world["lead"], "dashboard.view")) == {project}
    assert set(annotations_for(world["annotator"], "annotation.work")) == {annotation}
    assert set(annotations_for(world["lead"], "annotation.review")) == {annotation, theirs}
    assert not annotations_for(world["engineer"], "annotation.work").exists()
    assert set(leases_for(world["colleague"], "lease.release")) == set(theirs.trace.leases.all())
    assert set(leases_for(world["lead"], "lease.release")) >= {world["lease"]}
    # "Annotators see only their own history": one rule (annotation.history), leads see everyone's.
    annotation_save_draft(annotation_id=annotation.pk, user=world["annotator"], base_version=1, fields={"note": "a"})
    annotation_save_draft(annotation_id=theirs.pk, user=world["colleague"], base_version=1, fields={"note": "b"})
    events = AuditEvent.objects.filter(project=project)
    assert {e.annotator_id for e in history_for(world["annotator"], events)} == {world["annotator"].pk}
    assert {e.annotator_id for e in history_for(world["lead"], events)} == {
        world["annotator"].pk,
        world["colleague"].pk,
    }
    assert not history_for(world["outsider"], events).exists()


def test_every_entity_names_a_real_path(world):
    from django.apps import apps

    for label, entity in ENTITIES.items():
        model = apps.get_model(label)
        queryset = model.objects.all()
        if entity.project is not None:
            queryset = queryset.filter(**{f"{entity.project}__pk__in": [world["project"].pk]})
        if entity.owner is not None:
            queryset = queryset.filter(**{entity.owner: world["annotator"]})
        list(queryset[:1])  # a wrong path raises FieldError here
    project = world["project"]
    assert access(world["lead"], type(project), project.pk, "project.view") == project


# --- over HTTP: the same answers a page and the API give ------------------------------------------------


def test_http_404_is_the_same_for_someone_elses_and_for_no_such_annotation(world):
    annotation = world["annotation"]
    client = Client()
    client.force_login(world["colleague"])
    theirs = client.get(f"/api/annotations/{annotation.pk}/")
    missing = client.get(f"/api/annotations/{annotation.pk + 10_000}/")
    assert theirs.status_code == missing.status_code == 404
    assert (
        error_json(theirs) == error_json(missing) == {"detail": "No such annotation among yours.", "kind": "not_found"}
    )
    assert client.get(f"/annotations/{annotation.pk}/").status_code == 404  # the page too
    owner = Client()
    owner.force_login(world["annotator"])
    assert owner.get(f"/api/annotations/{annotation.pk}/").status_code == 200
    assert owner.get(f"/annotations/{annotation.pk}/").status_code == 200
    # The generic detail views answer the same way (AccessedObjectMixin).
    outsider = Client()
    outsider.force_login(world["outsider"])
    elsewhere = outsider.get(f"/api/traces/{world['traces'][0].pk}/")
    nowhere = outsider.get("/api/traces/999999/")
    assert elsewhere.status_code == nowhere.status_code == 404
    assert error_json(elsewhere) == error_json(nowhere) == {"detail": "No such trace among yours.", "kind": "not_found"}
    assert outsider.get(f"/api/traces/{world['other_trace'].pk}/").status_code == 200


def test_http_403_says_what_the_user_cannot_do_as_json_or_as_a_page(world):
    client = Client()
    client.force_login(world["annotator"])
    api = client.delete(f"/api/traces/{world['traces'][0].pk}/", data={"reason": "x"}, content_type="application/json")
    assert api.status_code == 403 and error_json(api) == {"detail": "You cannot delete traces.", "kind": "forbidden"}
    page = client.post(f"/traces/{world['traces'][0].pk}/delete/", {"reason": "x"})
    assert page.status_code == 403 and "text/html" in page["Content-Type"]


def test_releasing_an_already_released_lease_answers_the_same_everywhere(world):
    from annotation.models import Lease
    from annotation.services import lease_release_by

    lease = world["lease"]
    owner = Client()
    owner.force_login(world["annotator"])
    first = owner.post(f"/api/leases/{lease.pk}/release/", data="{}", content_type="application/json")
    again = owner.post(f"/api/leases/{lease.pk}/release/", data="{}", content_type="application/json")
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    released = Lease.objects.get(pk=lease.pk)
    # The lead's page and the socket go through the same service: unchanged, no error.
    lead = Client()
    lead.force_login(world["lead"])
    assert lead.post(f"/leases/{lease.pk}/release/").status_code == 302
    unchanged = lease_release_by(actor=world["lead"], lease_id=lease.pk, action="lease.manage")
    assert (unchanged.released_at, unchanged.release_reason, unchanged.released_by_id) == (
        released.released_at,
        "closed",
        world["annotator"].pk,
    )


# --- one place ---------------------------------------------------------------------------------------

ACCESS_LAYER = {"studio/access.py", "studio/permissions.py"}


def test_no_permission_checks_outside_the_access_layer():
    """Zero ``has_permission(`` calls and no ``@login_required`` (the middleware already requires a login) outside
    studio/access.py and studio/permissions.py; the tests are left out (this one names both)."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "*.py", "*.html"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    offenders = []
    for name in files:
        if name in ACCESS_LAYER or name.startswith("tests/"):
            continue
        path = REPO / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bhas_permission\(|login_required", line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert len(files) > 100
    assert not offenders, "\n".join(offenders)
