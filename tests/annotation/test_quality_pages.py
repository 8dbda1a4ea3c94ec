"""The quality control pages without a browser: the lead's settings form (saved; refused beside its field with what
was typed kept), gold from a file (each refused row with its line), another attempt for no member refused as bad
input, the feedback page only for what has feedback, and a gold trace that looks like any other in the workspace
while a qualification trace says so and goes on to its feedback."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation import services
from annotation.models import AnnotationKind, GoldTrace
from annotation.quality import services as quality
from annotation.quality.selectors import quality_settings
from studio.permissions import Role
from tests.fixtures_quality import error_fields, gold_traces, hand_in, traces_of
from traces.services import membership_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def expert(project, make_user):
    user = make_user("expert", Role.ANNOTATOR)
    membership_add(project=project, user=user)
    return user


def test_the_settings_form_saves_and_refuses_beside_its_field(project, lead, client):
    client.force_login(lead)
    fields = {
        "gold_every": "10",
        "point_tolerance": "0.04",
        "qualification_size": "0",
        "qualification_pass_mark": "0.9",
        "min_gold_accuracy": "0.75",
        "min_gold_answers": "4",
        "min_median_seconds": "12",
        "max_no_error_streak": "20",
    }
    saved = client.post(f"/projects/{project.pk}/quality/", fields)
    assert saved.status_code == 302
    settings = quality_settings(project)
    assert (settings.gold_every, settings.point_tolerance, settings.max_no_error_streak) == (10, 0.04, 20)

    refused = client.post(f"/projects/{project.pk}/quality/", {**fields, "point_tolerance": "1.5"})
    page = refused.content.decode()
    assert refused.status_code == 400 and "point_tolerance must lie in 0..1, not 1.5" in page
    assert 'id="q-point_tolerance" name="point_tolerance" value="1.5"' in page  # what was typed stays
    assert '<div class="form-field invalid" data-field="point_tolerance">' in page
    not_a_number = client.post(f"/projects/{project.pk}/quality/", {**fields, "gold_every": "often"})
    assert not_a_number.status_code == 400 and "gold_every must be a number" in not_a_number.content.decode()
    assert quality_settings(project).point_tolerance == 0.04  # nothing of a refused form is saved


def test_gold_from_a_file_says_each_refused_row(project, lead, expert, client):
    from tests.fixtures_quality import reference_of

    traces = traces_of(project, 2)
    reference_of(traces[0], annotator=expert, lead=lead)
    client.force_login(lead)
    upload = SimpleUploadedFile("gold.csv", b"external_id\ntask-0\ntask-1\nnowhere\n", content_type="text/csv")
    page = client.post(f"/projects/{project.pk}/quality/gold-file/", {"file": upload}).content.decode()
    assert "gold.csv:</strong> 1 marked gold" in page and "2 refused:" in page
    assert '<li data-line="3">line 3 (task-1): trace task-1 has no answer yet' in page
    assert "line 4 (nowhere): no trace &#x27;nowhere&#x27; in Test project" in page
    assert list(GoldTrace.objects.values_list("trace__external_id", flat=True)) == ["task-0"]
    unreadable = client.post(
        f"/projects/{project.pk}/quality/gold-file/", {"file": SimpleUploadedFile("g.csv", b"name\nx\n")}
    )
    assert unreadable.status_code == 400 and "needs a header line with external_id" in unreadable.content.decode()
    assert client.post(f"/projects/{project.pk}/quality/gold-file/").status_code == 400  # no file chosen


def test_another_attempt_for_no_member_is_bad_input(project, lead, client):
    client.force_login(lead)
    answer = client.post(f"/projects/{project.pk}/quality/allow/", {"annotator": "nobody"})
    assert (
        answer.status_code == 400
        and "annotator: &#x27;nobody&#x27; is no member of Test project" in answer.content.decode()
    )


def test_a_gold_trace_looks_like_any_other_and_has_no_feedback_for_its_annotator(
    project, annotator, lead, expert, client
):
    gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    traces_of(project, 1, start=10)
    quality.quality_settings_save(project=project, user=lead, fields={"gold_every": 1})
    annotation, _ = services.lease_next_trace(user=annotator, project=project)
    assert annotation.kind == AnnotationKind.GOLD
    client.force_login(annotator)
    workspace = client.get(f"/annotations/{annotation.pk}/").content.decode()
    assert "data-feedback-url" not in workspace and "ws-qualification" not in workspace
    assert "gold" not in workspace.lower()
    hand_in(annotation, annotator, **error_fields(3))
    refused = client.get(f"/annotations/{annotation.pk}/feedback/")
    page = refused.content.decode()
    assert refused.status_code == 409 and "There is no feedback for this answer." in page
    assert "feedback-parts" not in page  # nothing of the reference
    client.force_login(lead)  # a lead reads the comparison of any scored answer, linked from its review page
    review = client.get(f"/reviews/{annotation.pk}/").content.decode()
    assert f'href="/annotations/{annotation.pk}/feedback/" id="gold-feedback-link"' in review
    assert 'id="gold-mark"' not in review  # a gold answer is never a reference
    shown = client.get(f"/annotations/{annotation.pk}/feedback/").content.decode()
    assert 'id="feedback-parts"' in shown and "Right: the answer agrees with the reference" in shown
    assert "How ann's answer compares" in shown and "Next qualification trace" not in shown


def test_a_qualification_trace_says_so_and_leads_to_its_feedback(project, annotator, lead, expert, client):
    gold_traces(project, traces_of(project, 2), expert=expert, lead=lead)
    quality.quality_settings_save(project=project, user=lead, fields={"qualification_size": 2})
    client.force_login(annotator)
    queue = client.get("/queue/").content.decode()
    assert "Start the qualification →" in queue and 'data-standing="not_started"' in queue
    started = client.post(f"/queue/{project.pk}/next/")
    annotation = services.lease_next_trace(user=annotator, project=project)[0]
    assert started["Location"] == f"/annotations/{annotation.pk}/" and annotation.kind == AnnotationKind.QUALIFICATION
    workspace = client.get(started["Location"]).content.decode()
    assert f'data-feedback-url="/annotations/{annotation.pk}/feedback/"' in workspace
    assert "Qualification · 0 of 2 answered</span>" in workspace
    draft = client.get(f"/annotations/{annotation.pk}/feedback/")
    assert draft.status_code == 409 and "Feedback comes once you submit this answer." in draft.content.decode()
    hand_in(annotation, annotator, **error_fields(3))
    page = client.get(f"/annotations/{annotation.pk}/feedback/").content.decode()
    assert "Right: your answer agrees with the reference in every part that counts." in page
    assert "Attempt 1: 1 of 2 answered, 1 right" in page and "Next qualification trace →" in page


def test_the_review_page_says_why_an_answer_cannot_be_gold(project, annotator, lead, client):
    from annotation.models import Annotation, AnnotationStatus
    from annotation.services import annotation_transition

    trace = traces_of(project, 1)[0]
    answer = Annotation.objects.create(trace=trace, project=project, annotator=annotator, verdict="no_error")
    annotation_transition(annotation=answer, to=AnnotationStatus.SUBMITTED, actor=annotator)
    client.force_login(lead)
    page = client.get(f"/reviews/{answer.pk}/").content.decode()
    assert 'id="gold-mark"' not in page
    assert (
        "This answer cannot be a gold reference: it is not reviewed yet; only an accepted answer can be a reference."
        in page
    )
    refused = client.post(f"/reviews/{answer.pk}/gold/", follow=True)  # the service's rule, said on the page
    assert "cannot be gold: it is not reviewed yet" in refused.content.decode()
    assert not GoldTrace.objects.exists()
    client.force_login(annotator)
    assert client.post(f"/reviews/{answer.pk}/gold/").status_code == 403  # leads only


def test_a_closed_queue_lands_on_where_the_member_stands(project, annotator, lead, client):
    traces_of(project, 1)
    quality.annotator_pause_set(project=project, annotator=annotator, actor=lead, paused=True, reason="check your τ")
    client.force_login(annotator)
    queue = client.get("/queue/").content.decode()
    assert f'data-next-trace="{project.pk}"' not in queue and "Where you stand →" in queue
    answer = client.post(f"/queue/{project.pk}/next/", follow=True)
    assert answer.redirect_chain == [(f"/projects/{project.pk}/qualification/", 302)]
    page = answer.content.decode()
    assert (
        "A lead paused your queue in Test project: check your τ. Ask them to resume it." in page
    )  # the hand-out's words
    assert 'data-paused="1"' in page and "Your queue is paused" in page


def test_the_trace_page_shows_gold_to_leads_only(project, annotator, lead, expert, client):
    from tests.fixtures_quality import reference_of

    trace = traces_of(project, 1)[0]
    reference = reference_of(trace, annotator=expert, lead=lead)
    client.force_login(lead)
    page = client.get(f"/traces/{trace.pk}/").content.decode()
    assert (
        'id="trace-gold" data-gold="no"' in page and f"Use answer #{reference.pk} by expert as gold reference" in page
    )
    client.post(f"/reviews/{reference.pk}/gold/", {"next": f"/traces/{trace.pk}/"})
    page = client.get(f"/traces/{trace.pk}/").content.decode()
    assert (
        'data-gold="yes"' in page
        and f'Its reference is <a href="/reviews/{reference.pk}/">answer #{reference.pk}</a>' in page
    )
    client.force_login(annotator)
    assert 'id="trace-gold"' not in client.get(f"/traces/{trace.pk}/").content.decode()


def test_a_passed_qualification_opens_the_real_queue_from_the_feedback(project, annotator, lead, expert, client):
    gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    traces_of(project, 1, start=10)
    quality.quality_settings_save(project=project, user=lead, fields={"qualification_size": 1})
    annotation, _ = services.lease_next_trace(user=annotator, project=project)
    hand_in(annotation, annotator, **error_fields(3))
    client.force_login(annotator)
    page = client.get(f"/annotations/{annotation.pk}/feedback/").content.decode()
    assert "You passed the qualification." in page and "Start annotating →" in page
    standing = client.get(f"/projects/{project.pk}/qualification/").content.decode()
    assert 'data-status="passed"' in standing and "Next trace →" in standing
    assert f'data-next-trace="{project.pk}">Next trace →' in client.get("/queue/").content.decode()


def test_what_differed_says_you_to_the_annotator_and_their_name_to_a_lead(
    project, annotator, lead, expert, client, api_client
):
    gold_traces(project, traces_of(project, 2), expert=expert, lead=lead)
    quality.quality_settings_save(project=project, user=lead, fields={"qualification_size": 2})
    annotation = services.lease_next_trace(user=annotator, project=project)[0]
    hand_in(annotation, annotator, verdict="no_error")
    url = f"/annotations/{annotation.pk}/feedback/"
    client.force_login(annotator)
    assert "You said no error; the reference says a first error at step 3." in client.get(url).content.decode()
    words = lambda user: [d["words"] for d in api_client(user).get(f"/api{url}").json()["comparison"]["differences"]]  # noqa: E731
    assert words(annotator)[0] == "You said no error; the reference says a first error at step 3."
    client.force_login(lead)
    page = client.get(url).content.decode()
    assert "ann said no error; the reference says a first error at step 3." in page and "You said" not in page
    assert words(lead)[0] == "ann said no error; the reference says a first error at step 3."


def test_the_project_settings_page_holds_the_quality_settings_for_a_lead(project, lead, annotator, client):
    from django.urls import reverse

    settings_url = reverse("project-settings", args=[project.pk])
    client.force_login(lead)
    page = client.get(settings_url).content.decode()
    assert 'id="quality-settings-section"' in page and f'action="/projects/{project.pk}/quality/"' in page
    assert 'name="gold_every" value="0"' in page and f'name="next" value="{settings_url}"' in page
    fields = _form_values(page) | {"gold_every": "7"}
    saved = client.post(f"/projects/{project.pk}/quality/", fields)
    assert saved.status_code == 302 and saved["Location"] == settings_url
    assert quality_settings(project).gold_every == 7
    back = client.get(settings_url).content.decode()
    assert "Quality settings saved." in back and 'name="gold_every" value="7"' in back
    # The quality page's own form (no ``next``) still comes back to the quality page.
    own = {name: value for name, value in fields.items() if name != "next"}
    assert client.post(f"/projects/{project.pk}/quality/", own)["Location"] == f"/projects/{project.pk}/quality/"
    # A refused value stays beside its field on the quality page, with what was typed.
    refused = client.post(f"/projects/{project.pk}/quality/", {**fields, "point_tolerance": "1.5"})
    assert refused.status_code == 400 and 'value="1.5"' in refused.content.decode()
    assert quality_settings(project).point_tolerance != 1.5
    client.force_login(annotator)  # nobody else sees the section (an annotator is refused the settings page anyway)
    assert client.get(settings_url).status_code == 403


def _form_values(page: str) -> dict:
    import re

    section = page[page.index('id="quality-settings-section"') :]
    return dict(re.findall(r'<input type="(?:number|hidden)" (?:id="[^"]*" )?name="(\w+)" value="([^"]*)"', section))
