"""Rounds: a project's rounds name the checkpoint that produced their traces; imports and runners put
traces in a round."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from annotation.services import round_mark_annotated
from studio.errors import Conflict, Invalid
from tests.fixtures_annotation import make_traces
from traces import selectors, services
from traces.models import Round, Trace


@pytest.mark.django_db
def test_round_create_checks_its_fields_and_refuses_a_taken_name(project, lead):
    made = services.round_create(
        project=project, name=" round 1 ", checkpoint="ui-tars-7b-r0", weights_hash="AB12", actor=lead
    )
    assert (made.name, made.checkpoint, made.weights_hash, made.created_by) == (
        "round 1",
        "ui-tars-7b-r0",
        "ab12",
        lead,
    )
    assert made.ran_at is not None
    with pytest.raises(Conflict) as taken:
        services.round_create(project=project, name="round 1", checkpoint="other")
    assert taken.value.extra["round"] == made.pk and "round 1" in taken.value.detail
    for bad, field in (
        ({"name": "", "checkpoint": "c"}, "name"),
        ({"name": "r", "checkpoint": "  "}, "checkpoint"),
        ({"name": "r", "checkpoint": "c", "weights_hash": "not-hex"}, "weights_hash"),
        ({"name": "x" * 121, "checkpoint": "c"}, "name"),
    ):
        with pytest.raises(Invalid) as refused:
            services.round_create(project=project, **bad)
        assert refused.value.extra["field"] == field
    assert Round.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_round_resolve_by_name_then_id_and_an_unknown_round_is_named(project):
    first = services.round_create(project=project, name="r1", checkpoint="c1")
    numeric = services.round_create(project=project, name=str(first.pk + 100), checkpoint="c2")
    assert selectors.round_resolve(project, "r1") == first
    assert selectors.round_resolve(project, str(first.pk)) == first
    assert selectors.round_resolve(project, str(first.pk + 100)) == numeric  # a name wins over an id
    assert selectors.round_resolve(project, "") is None and selectors.round_resolve(project, None) is None
    with pytest.raises(Invalid, match=r"has no round 'r9' \(its rounds: .*r1"):
        selectors.round_resolve(project, "r9")


@pytest.mark.django_db
def test_rounds_api_lists_for_members_and_creates_for_leads(project, annotator, lead, engineer, api_client, tmp_path):
    traces = make_traces(project, tmp_path, count=2, steps=1)
    assert all(t.round_id is None for t in Trace.objects.filter(project=project))  # older traces: in no round
    url = f"/api/projects/{project.pk}/rounds/"
    later = api_client(lead).post(
        url, {"name": "week 2", "checkpoint": "m2", "ran_at": "2026-11-20T10:00:00Z"}, format="json"
    )
    assert later.status_code == 201, later.content
    earlier = api_client(lead).post(
        url,
        {"name": "week 1", "checkpoint": "m1", "ran_at": "2026-11-13T10:00:00Z", "weights_hash": "ff"},
        format="json",
    )
    assert earlier.status_code == 201 and earlier.json()["weights_hash"] == "ff"
    Trace.objects.filter(pk=traces[0].pk).update(round_id=earlier.json()["id"])

    listed = api_client(annotator).get(url)
    assert listed.status_code == 200
    assert [(r["name"], r["trace_count"]) for r in listed.json()] == [("week 1", 1), ("week 2", 0)]
    detail = api_client(engineer).get(f"/api/rounds/{earlier.json()['id']}/")
    assert detail.status_code == 200 and detail.json()["checkpoint"] == "m1"
    assert api_client(annotator).get(f"/api/traces/{traces[0].pk}/").json()["round"] == earlier.json()["id"]

    refused = api_client(annotator).post(url, {"name": "week 3", "checkpoint": "m3"}, format="json")
    assert refused.status_code == 403 and refused.json()["detail"] == "You cannot create rounds."
    again = api_client(lead).post(url, {"name": "week 1", "checkpoint": "m9"}, format="json")
    assert again.status_code == 409 and again.json()["round"] == earlier.json()["id"]
    blank = api_client(lead).post(url, {"name": "week 4", "checkpoint": ""}, format="json")
    assert blank.status_code == 400
    assert Round.objects.get(pk=earlier.json()["id"]).ran_at == datetime(2026, 11, 13, 10, tzinfo=UTC)


# --- imports put traces in a round -----------------------------------------------------------------------------


def _zip_of(folder_parent, name="upload.zip"):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for file in sorted(folder_parent.rglob("*")):
            if file.is_file():
                zf.write(file, file.relative_to(folder_parent))
    buffer.seek(0)
    buffer.name = name
    return buffer


@pytest.mark.django_db
def test_import_api_names_an_unknown_round_and_puts_the_traces_of_a_known_one_in_it(
    project, lead, api_client, tmp_path
):
    from tests.factories import native_trace_folder
    from traces.models import ImportJob

    native_trace_folder(tmp_path / "src" / "a", external_id="api-a", steps=2, size=(320, 200))
    native_trace_folder(tmp_path / "src" / "b", external_id="api-b", steps=1, size=(320, 200))
    url = f"/api/projects/{project.pk}/imports/"
    unknown = api_client(lead).post(url, {"file": _zip_of(tmp_path / "src"), "round": "week 9"}, format="multipart")
    assert unknown.status_code == 400, unknown.content
    assert (
        unknown.json()["detail"] == "round: Test project has no round 'week 9' (it has no rounds yet; create one first)"
    )
    assert not ImportJob.objects.exists()

    week = services.round_create(project=project, name="week 1", checkpoint="m1")
    made = api_client(lead).post(url, {"file": _zip_of(tmp_path / "src"), "round": "week 1"}, format="multipart")
    assert made.status_code == 202, made.content
    assert (made.json()["round"], made.json()["round_name"]) == (week.pk, "week 1")
    job = services.import_job_run(job_id=made.json()["id"])  # what the worker runs (the worker path: test_cli_round)
    assert job.status == "succeeded" and job.traces_imported == 2
    assert sorted(Trace.objects.filter(round=week).values_list("external_id", flat=True)) == ["api-a", "api-b"]

    # A trace already stored stays in its round: a re-import into another round skips it.
    other = services.round_create(project=project, name="week 2", checkpoint="m2")
    again = api_client(lead).post(url, {"file": _zip_of(tmp_path / "src"), "round": str(other.pk)}, format="multipart")
    job = services.import_job_run(job_id=again.json()["id"])
    assert job.traces_skipped == 2 and not Trace.objects.filter(round=other).exists()


@pytest.mark.django_db
def test_upload_page_offers_the_rounds_and_refuses_an_unknown_one(project, lead, tmp_path):
    from django.test import Client

    from tests.factories import native_trace_folder
    from traces.models import ImportJob

    week = services.round_create(project=project, name="week 1", checkpoint="ui-tars-r1")
    native_trace_folder(tmp_path / "src" / "a", external_id="page-a", steps=1, size=(320, 200))
    client = Client()
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/import/")
    assert f'<option value="{week.pk}">week 1 (ui-tars-r1)</option>' in page.content.decode()
    refused = client.post(f"/projects/{project.pk}/import/", {"file": _zip_of(tmp_path / "src"), "round": "nope"})
    assert refused.status_code == 400 and "has no round &#x27;nope&#x27;" in refused.content.decode()
    assert not ImportJob.objects.exists()
    sent = client.post(f"/projects/{project.pk}/import/", {"file": _zip_of(tmp_path / "src"), "round": str(week.pk)})
    assert sent.status_code == 302
    job = ImportJob.objects.get()
    assert job.round == week
    services.import_job_run(job_id=job.pk)
    assert Trace.objects.get(external_id="page-a").round == week
    assert 'into round <strong id="job-round">week 1</strong>' in client.get(f"/imports/{job.pk}/").content.decode()


@pytest.mark.django_db
def test_import_traces_command_takes_a_round(project, tmp_path):
    from django.core.management import CommandError, call_command

    from tests.factories import native_trace_folder

    week = services.round_create(project=project, name="week 1", checkpoint="m1")
    folder = native_trace_folder(tmp_path / "src" / "a", external_id="cmd-a", steps=1, size=(320, 200))
    with pytest.raises(CommandError, match="has no round 'week 7'"):
        call_command("import_traces", str(folder.parent), "--project", project.name, "--round", "week 7")
    assert not Trace.objects.exists()
    import io

    out = io.StringIO()
    call_command("import_traces", str(folder.parent), "--project", project.name, "--round", "week 1", stdout=out)
    assert "into round week 1: 1 trace, " in out.getvalue()
    assert Trace.objects.get(external_id="cmd-a").round == week


@pytest.mark.django_db
def test_leads_start_a_round_on_the_round_dashboard_and_a_refusal_keeps_what_was_typed(project, lead, annotator):
    from django.test import Client

    client = Client()
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/dashboard/rounds/")
    assert 'id="round-new"' in page.content.decode()
    url = f"/projects/{project.pk}/rounds/new/"
    made = client.post(url, {"name": "week 1", "checkpoint": "m1", "weights_hash": ""})
    assert made.status_code == 302 and made["Location"] == f"/projects/{project.pk}/dashboard/rounds/"
    assert Round.objects.get(project=project, name="week 1").created_by == lead
    taken = client.post(url, {"name": "week 1", "checkpoint": "m-typed", "weights_hash": "abc"})
    text = taken.content.decode()
    assert taken.status_code == 409 and "already has a round named &#x27;week 1&#x27;" in text
    assert 'value="m-typed"' in text and 'value="abc"' in text
    bad = client.post(url, {"name": "week 2", "checkpoint": "m2", "weights_hash": "xyz"})
    assert bad.status_code == 400 and "weights_hash: a hex digest" in bad.content.decode()

    other = Client()
    other.force_login(annotator)
    assert other.post(url, {"name": "week 3", "checkpoint": "m3"}).status_code == 403
    assert Round.objects.filter(project=project).count() == 1


@pytest.mark.django_db
def test_trace_list_page_and_api_filter_by_round(project, lead, api_client, tmp_path):
    from django.test import Client

    traces = make_traces(project, tmp_path, count=3, steps=1)
    week = services.round_create(project=project, name="week 1", checkpoint="m1")
    Trace.objects.filter(pk__in=[traces[0].pk, traces[2].pk]).update(round=week)
    listed = api_client(lead).get(f"/api/projects/{project.pk}/traces/?round=week 1").json()
    assert [t["id"] for t in listed["results"]] == [traces[0].pk, traces[2].pk]
    assert api_client(lead).get(f"/api/projects/{project.pk}/traces/?round=week 9").status_code == 400
    assert api_client(lead).get(f"/api/projects/{project.pk}/traces/").json()["count"] == 3

    client = Client()
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/traces/?round={week.pk}").content.decode()
    assert f'data-trace-round="{traces[0].pk}">week 1<' in page and f'data-trace-round="{traces[1].pk}"' not in page
    assert f'<option value="{week.pk}" selected>week 1 (2)</option>' in page


@pytest.mark.django_db(transaction=True)
def test_a_round_is_annotated_once_when_its_last_trace_is_accepted(project, annotator, lead):
    from importlib import import_module

    from django.apps import apps

    from annotation.models import Verdict
    from tests.fixtures_export import REPLIES, accepted_annotation, make_trace

    empty = services.round_create(project=project, name="empty", checkpoint="m0")
    week = services.round_create(project=project, name="week", checkpoint="m1")
    traces = [make_trace(project, replies=REPLIES, external_id=f"w{n}", image_seed=n + 1) for n in range(2)]
    Trace.objects.filter(pk__in=[t.pk for t in traces]).update(round=week)

    def accept(trace):
        return accepted_annotation(trace, annotator=annotator, reviewer=lead, verdict=Verdict.NO_ERROR)

    accept(traces[0])
    assert Round.objects.get(pk=week.pk).annotated_at is None  # one trace of two
    accept(traces[1])  # the last one: marked by the accept's commit
    marked = Round.objects.get(pk=week.pk).annotated_at
    assert marked is not None
    assert round_mark_annotated(round_id=week.pk) is None  # only the first completion counts
    assert Round.objects.get(pk=week.pk).annotated_at == marked
    assert round_mark_annotated(round_id=empty.pk) is None  # no traces: nothing is annotated

    # The migration gives a round completed before it existed its completion time (no event is sent later).
    Round.objects.filter(pk=week.pk).update(annotated_at=None)
    import_module("traces.migrations.0011_round_annotated").completed_rounds(apps, None)
    assert Round.objects.get(pk=week.pk).annotated_at is not None
    assert Round.objects.get(pk=empty.pk).annotated_at is None
