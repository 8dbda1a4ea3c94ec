"""Double annotation as a project setting: the settings page, the project API's PATCH, `create_project`,
the hand-out to distinct annotators and the leads' list of shared traces waiting for another answer."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation import services
from annotation.models import Verdict
from annotation.overlap import trace_annotation_quota
from annotation.selectors import traces_awaiting_more_answers
from studio.permissions import Role
from tests.conftest import TEST_PASSWORD
from tests.fixtures_annotation import make_traces
from tests.fixtures_export import accepted_annotation
from traces.models import Project
from traces.services import membership_add


@pytest.fixture
def traces(project, tmp_path):
    return make_traces(project, tmp_path, count=3, steps=3)


def _patch(api_client, user, project, body):
    return api_client(user).patch(f"/api/projects/{project.pk}/", body, format="json")


def test_a_lead_turns_double_annotation_on_through_the_api(project, lead, api_client):
    answer = _patch(api_client, lead, project, {"double_annotation_share": 0.25, "double_annotation_annotators": 3})
    assert answer.status_code == 200, answer.json()
    assert answer.json()["double_annotation_share"] == 0.25
    assert answer.json()["double_annotation_annotators"] == 3
    assert answer.json()["double_annotation_words"] == "double annotation: 25% of traces to 3 annotators each"
    project.refresh_from_db()
    assert (project.double_annotation_share, project.double_annotation_annotators) == (0.25, 3)
    assert project.memberships.count() == 3  # a PATCH leaves the members as they were
    assert api_client(lead).get(f"/api/projects/{project.pk}/").json()["double_annotation_annotators"] == 3


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"double_annotation_share": 1.5}, "double_annotation_share", "between 0 (off) and 1"),
        ({"double_annotation_share": -0.1}, "double_annotation_share", "between 0 (off) and 1"),
        ({"double_annotation_annotators": 1}, "double_annotation_annotators", "2 to 10 distinct annotators"),
        ({"history_window": 0}, "history_window", "between 1 and 20"),
        ({"blind_prescoring": True}, "blind_prescoring", "not a setting a PATCH may change: blind_prescoring"),
        ({}, "", "Name a setting to change"),
    ],
)
def test_a_patch_the_settings_page_would_refuse_is_a_400_naming_the_field(
    project, lead, api_client, body, field, words
):
    answer = _patch(api_client, lead, project, body)
    assert answer.status_code == 400
    assert answer.json()["field"] == field and words in answer.json()["detail"], answer.json()
    project.refresh_from_db()
    assert project.double_annotation_share == 0 and project.history_window == Project().history_window


def test_only_leads_change_settings(project, annotator, engineer, api_client):
    for user in (annotator, engineer):
        assert _patch(api_client, user, project, {"double_annotation_share": 0.5}).status_code == 403
    project.refresh_from_db()
    assert project.double_annotation_share == 0


def test_the_settings_page_saves_double_annotation_and_names_a_bad_value(project, lead):
    client = Client()
    client.login(username="leader", password=TEST_PASSWORD)
    page = client.get(f"/projects/{project.pk}/settings/").content.decode()
    assert "Double annotation" in page and 'name="double_annotation_annotators"' in page
    form = {
        "name": project.name,
        "description": "",
        "platform": project.platform,
        "coordinate_convention": project.coordinate_convention,
        "history_window": project.history_window,
        "error_categories": "\n".join(project.error_categories),
        "members": list(project.memberships.values_list("user_id", flat=True)),
        "double_annotation_share": "0.2",
        "double_annotation_annotators": "2",
    }
    saved = client.post(f"/projects/{project.pk}/settings/", form)
    assert saved.status_code == 302
    project.refresh_from_db()
    assert project.double_annotation_share == 0.2
    refused = client.post(f"/projects/{project.pk}/settings/", {**form, "double_annotation_annotators": "1"})
    assert refused.status_code == 400
    assert "2 to 10 distinct annotators" in refused.content.decode()


def test_create_project_takes_double_annotation(db, capsys):
    call_command("create_project", "Overlap", "--double-annotation-share", "0.3", "--double-annotation-annotators", "2")
    project = Project.objects.get(name="Overlap")
    assert (project.double_annotation_share, project.double_annotation_annotators) == (0.3, 2)
    assert "double annotation: 30% of traces to 2 annotators each" in capsys.readouterr().out
    with pytest.raises(CommandError, match="between 0 \\(off\\) and 1"):
        call_command("create_project", "Too much", "--double-annotation-share", "2")


def test_a_shared_trace_goes_to_as_many_distinct_annotators_as_asked_never_one_twice(
    project, traces, annotator, lead, make_user, api_client
):
    project.double_annotation_share, project.double_annotation_annotators = 1.0, 3
    project.save()
    others = [make_user(f"ann{n}", Role.ANNOTATOR) for n in (2, 3, 4)]
    for user in others:
        membership_add(project=project, user=user)
    first = traces[0]
    assert trace_annotation_quota(trace_id=first.pk, project=project) == 3
    # The first annotator answers the first trace; asking again never hands it back to them.
    accepted_annotation(first, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    again = api_client(annotator).post(f"/api/projects/{project.pk}/next-trace/").json()
    assert again["trace_id"] == traces[1].pk
    handed = [api_client(user).post(f"/api/projects/{project.pk}/next-trace/").json()["trace_id"] for user in others]
    # Two more annotators take the first trace (3 in all); the fourth is given the second trace.
    assert handed == [first.pk, first.pk, traces[1].pk]


def test_leads_see_the_shared_traces_waiting_for_another_answer(project, traces, annotator, lead, make_user):
    project.double_annotation_share, project.double_annotation_annotators = 1.0, 2
    project.save()
    second = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=second)
    accepted_annotation(traces[0], annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    accepted_annotation(traces[1], annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    accepted_annotation(traces[1], annotator=second, reviewer=lead, verdict=Verdict.NO_ERROR)
    waiting, total = traces_awaiting_more_answers(project=project)
    assert total == 1 and [w["trace"].pk for w in waiting] == [traces[0].pk]
    assert waiting[0]["words"] == "1 of 2 answers" and waiting[0]["answered_by"] == ["ann"]

    client = Client()
    client.login(username="leader", password=TEST_PASSWORD)
    page = client.get("/queue/").content.decode()
    assert "Waiting for another answer" in page and traces[0].external_id in page
    client.login(username="ann2", password=TEST_PASSWORD)
    page = client.get("/queue/").content.decode()
    assert "Waiting for another answer" not in page
    # For the second annotator the shared trace the first one answered is still open, and the third trace.
    assert "2 open traces" in page

    project.double_annotation_share = 0
    project.save()
    assert traces_awaiting_more_answers(project=project) == ([], 0)


def test_the_queue_counts_open_traces_as_the_hand_out_gives_them(project, traces, annotator, lead, make_user):
    second = make_user("ann2", Role.ANNOTATOR)
    membership_add(project=project, user=second)
    accepted_annotation(traces[0], annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)
    rows = {row["project"].pk: row for row in services_queue(second)}
    assert rows[project.pk]["open_count"] == 2  # double annotation off: an answered trace is closed
    project.double_annotation_share = 1.0
    project.save()
    rows = {row["project"].pk: row for row in services_queue(second)}
    assert rows[project.pk]["open_count"] == 3
    assert services.lease_next_trace(user=second, project=project)[0].trace_id == traces[0].pk


def services_queue(user):
    from annotation.selectors import queue_for_user

    return queue_for_user(user)


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)
def test_the_demo_shows_agreement_and_time_out_of_the_box():
    from annotation.dashboards import DateRange, project_dashboard
    from demo.seed import demo_seed

    summary = demo_seed(password="demo-pass-for-tests-1", seed=7)
    assert summary["second_answers"] >= 2
    desktop = Project.objects.get(name="Desktop & web demo")
    assert desktop.double_annotation_share > 0
    figures = project_dashboard(desktop, DateRange.from_days(None, None))
    assert figures["agreement"]["pairs"] == summary["second_answers"]
    assert figures["agreement"]["first_error_exact"] == 1.0
    assert figures["median_time"]["overall_s"] > 0
    # The desktop demo's open traces still wait for both annotators; none of its answered traces waits.
    waiting, total = traces_awaiting_more_answers(project=desktop)
    assert total == 0
    assert demo_seed(password="demo-pass-for-tests-1", seed=7)["second_answers"] == 0  # nothing twice
