"""Search across corrections (facets, step cards, CSV), slices and their trend, a slice's export, clusters,
judge alignment, and who sees what."""

from __future__ import annotations

import csv
import io
import re
import zipfile

import pytest
from django.core.management import CommandError, call_command

from insights import selectors, services
from insights.models import SearchEntry, Slice
from tests.factories import make_world
from tests.fixtures_annotation import make_traces
from tests.fixtures_insights import PLANTED_NOTE, plant_corrections


@pytest.fixture
def world(db, project, annotator, lead, engineer, make_user, tmp_path):
    """Eight traces in two rounds; the planted mistake on three of round 1's four traces and one of round 2's."""
    second = make_user("ann2")
    project.memberships.create(user=second)
    rounds = (("r1", "agent-v1", 4), ("r2", "agent-v2", 4))
    world = make_world(
        tmp_path,
        project=project,
        annotator=annotator,
        lead=lead,
        traces=8,
        steps=4,
        outsider=False,
        rounds=rounds,
        lease=False,
    )
    traces, (r1, r2) = world["traces"], world["rounds"]
    planted = {traces[0].pk, traces[1].pk, traces[2].pk, traces[4].pk}
    mine = plant_corrections(project, traces[:6], annotator=annotator, lead=lead, planted=planted)
    theirs = plant_corrections(project, traces[6:], annotator=second, lead=lead, planted=set())
    return {
        "traces": traces,
        "rounds": (r1, r2),
        "planted": planted,
        "annotations": {**mine, **theirs},
        "second": second,
    }


def _search(client, project, **params):
    response = client.get(f"/api/projects/{project.pk}/search/", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_search_finds_the_phrase_and_facets_count_what_the_search_found(world, project, lead, api_client):
    client = api_client(lead)
    every = _search(client, project)
    assert every["count"] == 8
    found = _search(client, project, q=f'"{PLANTED_NOTE}"')
    assert found["count"] == 4
    assert {c["trace_id"] for c in found["results"]} == world["planted"]
    categories = {v["label"]: v["count"] for v in found["facets"]["category"]}
    assert categories == {"wrong action type": 4}
    rounds = {v["label"]: v["count"] for v in found["facets"]["round"]}
    assert rounds == {"r1": 3, "r2": 1}
    # A facet filter narrows, and the counts follow it.
    r2 = world["rounds"][1]
    narrowed = _search(client, project, q=f'"{PLANTED_NOTE}"', round=r2.pk)
    assert narrowed["count"] == 1 and narrowed["facets"]["round"] == [{"value": str(r2.pk), "label": "r2", "count": 1}]
    card = narrowed["results"][0]
    assert card["corrected_action"] == "click(start_box='(500,80)')"
    assert card["recorded_action"].startswith("click(") and card["screenshot"]
    # The recorded and corrected points, as shares of the screenshot, for drawing on the thumbnail.
    assert card["corrected_point"] == [0.5, 0.08]
    assert 0 < card["recorded_point"][0] < 1


def test_bad_search_input_is_a_400_naming_the_field(world, project, lead, api_client):
    client = api_client(lead)
    response = client.get(f"/api/projects/{project.pk}/search/", {"colour": "red"})
    assert response.status_code == 400 and "colour" in response.json()["detail"]
    response = client.get(f"/api/projects/{project.pk}/search/", {"round": "²"})
    assert response.status_code == 400 and "round" in response.json()["detail"]


def test_annotators_find_only_their_own_corrections(world, project, annotator, lead, api_client, client):
    mine = _search(api_client(annotator), project)
    assert mine["count"] == 6
    assert {v["label"] for v in mine["facets"]["annotator"]} == {annotator.username}
    assert _search(api_client(lead), project)["count"] == 8
    # The page and its CSV say the same.
    client.force_login(annotator)
    page = client.get(f"/projects/{project.pk}/search/")
    assert page.status_code == 200 and world["second"].username not in page.content.decode()
    rows = list(csv.reader(io.StringIO(client.get(f"/projects/{project.pk}/search.csv").content.decode())))
    assert len(rows) == 1 + 6 and rows[0][0] == "annotation_id"
    # Slices and clusters are for leads and engineers.
    assert api_client(annotator).get(f"/api/projects/{project.pk}/slices/").status_code == 403


def test_the_index_follows_each_save_of_an_annotation(world, project, lead, api_client):
    from annotation.models import Verdict

    annotation = world["annotations"][world["traces"][3].pk]
    annotation.note = "clicked the zebra-striped banner"
    annotation.save()
    assert _search(api_client(lead), project, q="zebra-striped")["count"] == 1
    annotation.verdict, annotation.tau = Verdict.NO_ERROR, None
    annotation.save()
    assert not SearchEntry.objects.filter(annotation=annotation).exists()
    assert _search(api_client(lead), project, q="zebra-striped")["count"] == 0
    assert services.search_index_rebuild(project=project) == 7
    # A lead mends the instruction of a trace with a handed-in answer: its entry follows.
    from traces.services import trace_instruction_set

    mended = world["traces"][4]
    trace_instruction_set(trace_id=mended.pk, actor=lead, instruction="Find the quokka preferences pane")
    assert _search(api_client(lead), project, q="quokka")["count"] == 1
    SearchEntry.objects.all().delete()  # an index from before search existed, made by the command
    out = io.StringIO()
    call_command("search_index_rebuild", "--project", str(project.pk), stdout=out)
    assert out.getvalue() == f"{project.name}: 7 search entries\n"
    assert _search(api_client(lead), project, q="zebra-striped")["count"] == 0
    with pytest.raises(CommandError, match="no project 'nowhere'"):
        call_command("search_index_rebuild", "--project", "nowhere")


def test_a_slice_keeps_its_count_per_round_and_exports_exactly_its_annotations(
    world, project, lead, engineer, api_client, tmp_path
):
    from exports import services as export_services

    client = api_client(lead)
    made = client.post(
        f"/api/projects/{project.pk}/slices/",
        {"name": "typed first", "query": {"q": f'"{PLANTED_NOTE}"'}},
        format="json",
    )
    assert made.status_code == 201, made.content
    again = client.post(f"/api/projects/{project.pk}/slices/", {"name": "typed first", "query": {}}, format="json")
    assert again.status_code == 409
    detail = client.get(f"/api/slices/{made.json()['id']}/").json()
    assert detail["count"] == 4
    assert [(p["name"], p["count"], p["of"]) for p in detail["trend"]] == [("r1", 3, 4), ("r2", 1, 4)]
    job = export_services.export_to_path(
        project=project, user=engineer, fmt="trl", options={"slice": made.json()["id"]}, out=tmp_path / "s.zip"
    )
    wanted = sorted(world["annotations"][t].pk for t in world["planted"])
    assert sorted(pk for pk, _ in job.sources) == wanted
    with zipfile.ZipFile(tmp_path / "s.zip") as bundle:
        assert '"slice": ' in bundle.read("manifest.json").decode()
    # Another project's slice is refused by name, before any job exists.
    from traces.services import project_create

    other = project_create(name="Elsewhere", members=[engineer])
    refused = api_client(engineer).post(
        f"/api/projects/{other.pk}/exports/", {"format": "trl", "options": {"slice": made.json()["id"]}}, format="json"
    )
    assert refused.status_code == 400 and "slice" in refused.json()["detail"]


def test_clusters_group_the_planted_mistake_and_make_a_slice(world, project, lead, api_client):
    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    run = services.cluster_run_compute(run_id=run.pk)
    assert run.status == "succeeded" and run.corrections == 8
    planted_ids = sorted(world["annotations"][t].pk for t in world["planted"])
    text = [c for c in run.clusters.filter(kind="text") if c.annotation_ids == planted_ids]
    assert len(text) == 1, [(c.name, c.annotation_ids) for c in run.clusters.all()]
    assert set(text[0].terms) & {"field", "clicking", "typed", "search", "focused"}
    assert text[0].sizes_by_round == {"r1": 3, "r2": 1}
    signature = [c for c in run.clusters.filter(kind="signature") if "wrong action type" in c.name]
    assert signature and signature[0].annotation_ids == planted_ids
    made = api_client(lead).post(f"/api/clusters/{text[0].pk}/slice/")
    assert made.status_code == 201
    assert selectors.slice_annotation_ids(project=project, slice_id=made.json()["id"]) == planted_ids


def test_leads_rename_pin_and_merge_clusters_and_a_new_clustering_keeps_it(
    world, project, lead, annotator, api_client, client
):
    run = services.cluster_run_create(project=project, user=lead, enqueue=False)
    run = services.cluster_run_compute(run_id=run.pk)
    planted_ids = sorted(a.pk for t, a in world["annotations"].items() if t in world["planted"])
    planted = next(c for c in run.clusters.filter(kind="text") if c.annotation_ids == planted_ids)
    api = api_client(lead)
    renamed = api.patch(f"/api/clusters/{planted.pk}/", {"label": "  typed   before focus "}, format="json")
    assert renamed.status_code == 200, renamed.content
    assert renamed.json()["display_name"] == "typed before focus" and renamed.json()["name"] == planted.name
    assert api.patch(f"/api/clusters/{planted.pk}/", {"pinned": True}, format="json").json()["pinned"] is True
    assert api.patch(f"/api/clusters/{planted.pk}/", {"label": "x" * 201}, format="json").status_code == 400
    # An annotator may not rename what leads study.
    assert api_client(annotator).patch(
        f"/api/clusters/{planted.pk}/", {"label": "mine"}, format="json"
    ).status_code in {403, 404}
    signature = list(run.clusters.filter(kind="signature"))
    assert len(signature) >= 2, [(c.name, c.annotation_ids) for c in run.clusters.all()]
    # Merging across kinds, into itself, or an unknown id is refused, naming why; nothing changes.
    assert api.post(f"/api/clusters/{planted.pk}/merge/", {"other": signature[0].pk}, format="json").status_code == 400
    assert api.post(f"/api/clusters/{planted.pk}/merge/", {"other": planted.pk}, format="json").status_code == 400
    assert api.post(f"/api/clusters/{planted.pk}/merge/", {"other": "two"}, format="json").status_code == 400
    a, b = signature[0], signature[1]
    union = sorted(set(a.annotation_ids) | set(b.annotation_ids))
    merged = api.post(f"/api/clusters/{a.pk}/merge/", {"other": b.pk}, format="json")
    assert merged.status_code == 200, merged.content
    assert merged.json()["annotation_ids"] == union and merged.json()["size"] == len(union) and merged.json()["merged"]
    assert not run.clusters.filter(pk=b.pk).exists()
    rounds = merged.json()["sizes_by_round"]
    assert sum(rounds.values()) == len(union)
    # The page shows the pinned cluster first, under its name, with typical examples drawn as step cards.
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/clusters/").content.decode()
    first = re.search(r'<section class="cluster card( pinned)?" data-cluster="(\d+)"', page)
    assert first and first.group(1) and int(first.group(2)) == planted.pk
    section = page[first.start() : page.index("</section>", first.start())]
    assert "typed before focus" in section and section.count('class="card step-card"') == 3
    # Clustering again keeps the name, the pin and the merge on the clusters that cover the same corrections.
    again = services.cluster_run_create(project=project, user=lead, enqueue=False)
    again = services.cluster_run_compute(run_id=again.pk)
    kept = next(c for c in again.clusters.filter(kind="text") if c.annotation_ids == planted_ids)
    assert (kept.label, kept.pinned) == ("typed before focus", True)
    assert any(c.annotation_ids == union and c.merged for c in again.clusters.filter(kind="signature"))
    # The page form does the same as the API.
    other = next(c for c in again.clusters.filter(kind="signature"))
    client.post(f"/clusters/{other.pk}/edit/", {"label": "by the form"})
    client.post(f"/clusters/{other.pk}/edit/", {"pinned": "1"})
    other.refresh_from_db()
    assert (other.label, other.pinned) == ("by the form", True)


def test_a_slice_sent_to_the_queue_gets_one_more_answer_each_first_in_line(
    world, project, lead, engineer, make_user, api_client, client, tmp_path
):
    from annotation.models import Annotation, AnnotationStatus, Verdict
    from annotation.services import lease_next_trace

    third = make_user("ann3")
    project.memberships.create(user=third)
    fresh, answered = make_traces(project, tmp_path / "more", count=2, steps=4, instruction="Turn on dark mode")
    Annotation.objects.create(
        trace=answered,
        project=project,
        annotator=world["second"],
        status=AnnotationStatus.ACCEPTED,
        verdict=Verdict.ERROR,
        tau=2,
        error_category="premature finish",
        corrected_thought="Not done yet.",
        corrected_action="click(start_box='(10,10)')",
    )
    api = api_client(lead)
    made = api.post(
        f"/api/projects/{project.pk}/slices/", {"name": "dark mode", "query": {"q": "not done yet"}}, format="json"
    )
    assert made.status_code == 201, made.content
    slice_id = made.json()["id"]
    # Engineers study slices but the queue is the leads'.
    assert api_client(engineer).post(f"/api/slices/{slice_id}/queue/", {}, format="json").status_code == 403
    assert api.post(f"/api/slices/{slice_id}/queue/", {"withdraw": "yes"}, format="json").status_code == 400
    sent = api.post(f"/api/slices/{slice_id}/queue/", {}, format="json")
    assert sent.status_code == 200, sent.content
    assert sent.json() == {
        "requested": 1,
        "already_requested": 0,
        "traces": 1,
        "slice_traces": 1,
        "in_queue": 1,
        "waiting": 1,
    }
    # Sending again asks nothing more.
    assert api.post(f"/api/slices/{slice_id}/queue/", {}, format="json").json()["requested"] == 0
    # The sent trace comes before the fresh one although the fresh one is older; the annotator who answered it
    # never gets it again.
    annotation, _ = lease_next_trace(user=third, project=project)
    assert annotation.trace_id == answered.pk
    assert lease_next_trace(user=world["second"], project=project)[0].trace_id == fresh.pk
    # The lead sees it wait for its second answer; once given, nothing waits and the trace is closed to others.
    annotation.status, annotation.verdict = AnnotationStatus.SUBMITTED, Verdict.NO_ERROR
    annotation.save()
    state = api.get(f"/api/slices/{slice_id}/queue/").json()
    assert (state["in_queue"], state["waiting"]) == (1, 0)
    fourth = make_user("ann4")
    project.memberships.create(user=fourth)
    assert lease_next_trace(user=fourth, project=project) is None  # fresh is held by the second annotator
    # Taking it back leaves the answers given.
    taken = api.post(f"/api/slices/{slice_id}/queue/", {"withdraw": True}, format="json").json()
    assert taken["withdrawn"] == 1 and taken["in_queue"] == 0
    assert Annotation.objects.filter(trace=answered).count() == 2
    client.force_login(lead)
    page = client.get(f"/slices/{slice_id}/").content.decode()
    assert 'id="slice-send-to-queue"' in page


def test_judge_alignment_matches_a_count_by_hand(world, project, lead, client):
    """Six traces with a human first error, two without; the rules scorer names τ on five of them."""
    from annotation.models import Verdict
    from prescoring.models import PrescoreJob, TraceSuggestion

    traces = world["traces"]
    humans = world["annotations"]
    # Two traces become error-free for the human.
    for trace in traces[6:]:
        a = humans[trace.pk]
        a.verdict, a.tau = Verdict.NO_ERROR, None
        a.save()
    job = PrescoreJob.objects.create(project=project, scorer="rules", status="succeeded")
    tau = {t.pk: humans[t.pk].tau for t in traces[:6]}
    predicted = {
        traces[0].pk: tau[traces[0].pk],  # exact
        traces[1].pk: tau[traces[1].pk] + 1,  # off by one
        traces[2].pk: tau[traces[2].pk] + 2,  # miss
        traces[6].pk: 2,  # false alarm on an error-free trace
        traces[4].pk: tau[traces[4].pk] - 1,  # off by one (round 2)
    }
    for trace in traces:
        TraceSuggestion.objects.create(trace=trace, job=job, scorer="rules", suggested_tau=predicted.get(trace.pk))
    # By hand: 5 predictions, 6 human errors; exact hits 1, within one step 3.
    expect_all = {"precision_exact": 0.2, "recall_exact": round(1 / 6, 4), "precision_near": 0.6, "recall_near": 0.5}
    # Round r1 (traces 0-3: four human errors, three predictions): exact 1, near 2.
    expect_r1 = {
        "precision_exact": round(1 / 3, 4),
        "recall_exact": 0.25,
        "precision_near": round(2 / 3, 4),
        "recall_near": 0.5,
    }
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/alignment/").content.decode()

    def figures(by: str, group: str) -> dict:
        row = re.search(rf'<tr data-by="{by}" data-group="{re.escape(group)}">(.*?)</tr>', page, re.S).group(1)
        return {k: float(v) for k, v in re.findall(r'data-figure="(\w+)">([\d.]+)<', row)}

    assert figures("all", "all") == expect_all
    assert figures("round", "r1") == expect_r1
    api = client.get(f"/api/projects/{project.pk}/alignment/").json()[0]["rows"]
    overall = next(r for r in api if r["by"] == "all")
    assert {k: overall[k] for k in expect_all} == expect_all
    assert client.get(f"/projects/{project.pk}/alignment.csv").content.decode().count("\n") == 1 + len(api)


def test_calibration_and_best_threshold_match_a_count_by_hand(world, project, lead, client):
    """Steps before τ score 0.15, τ scores 0.85 on three traces and 0.35 on three, steps after τ score 0.95 (they
    must not count: an answer says nothing of the steps after its first error); two traces have no error."""
    from annotation.models import Verdict
    from prescoring.models import PrescoreJob, StepSuggestion
    from traces.models import Step

    traces = world["traces"]
    humans = world["annotations"]
    for trace in traces[6:]:
        a = humans[trace.pk]
        a.verdict, a.tau = Verdict.NO_ERROR, None
        a.save()
    job = PrescoreJob.objects.create(project=project, scorer="rules", status="succeeded")
    before_tau = 0
    for i, trace in enumerate(traces):
        tau = humans[trace.pk].tau if i < 6 else None
        for step in Step.objects.filter(trace=trace):
            if tau is None or step.index < tau:
                suspicion, before_tau = 0.15, before_tau + 1
            elif step.index == tau:
                suspicion = 0.85 if i < 3 else 0.35
            else:
                suspicion = 0.95
            StepSuggestion.objects.create(step=step, job=job, scorer="rules", suspicion=suspicion)
    # By hand: 8 traces of 4 steps; the error traces' τ is their middle step (3), so 2 steps before each.
    assert before_tau == 6 * 2 + 2 * 4
    client.force_login(lead)
    scorer = client.get(f"/api/projects/{project.pk}/alignment/").json()[0]
    bins = {b["low"]: (b["steps"], b["first_errors"]) for b in scorer["calibration"] if b["steps"]}
    assert bins == {0.1: (20, 0), 0.3: (3, 3), 0.8: (3, 3)}
    table = {
        r["threshold"]: (r["steps_read"], r["first_errors_caught"], r["per_hundred_steps"])
        for r in scorer["thresholds"]
    }
    assert table[0.0] == (26, 6, round(600 / 26, 2))
    assert table[0.2] == (6, 6, 100.0)
    assert table[0.5] == (3, 3, 100.0)
    assert table[0.9] == (0, 0, None)
    # 0.2 to 0.8 all catch 100 per hundred steps; 0.2 catches every first error, so it is the best.
    assert scorer["best_threshold"]["threshold"] == 0.2
    page = client.get(f"/projects/{project.pk}/alignment/").content.decode()
    best = re.search(r'<tr data-threshold="([\d.]+)" class="best">', page)
    assert best and float(best.group(1)) == 0.2
    assert 'data-low="0.8"' in page


def _scored(world, project, suspicion_of) -> None:
    """Two traces without error, six with their human first error at step 3; each step up to τ (and every step of
    an error-free trace) scored ``suspicion_of(trace number, is τ)``."""
    from annotation.models import Verdict
    from prescoring.models import PrescoreJob, StepSuggestion
    from traces.models import Step

    traces, humans = world["traces"], world["annotations"]
    for trace in traces[6:]:
        a = humans[trace.pk]
        a.verdict, a.tau = Verdict.NO_ERROR, None
        a.save()
    job = PrescoreJob.objects.create(project=project, scorer="rules", status="succeeded")
    for i, trace in enumerate(traces):
        tau = humans[trace.pk].tau if i < 6 else None
        for step in Step.objects.filter(trace=trace):
            StepSuggestion.objects.create(
                step=step, job=job, scorer="rules", suspicion=suspicion_of(i, step.index == tau)
            )


def test_a_threshold_is_recommended_with_its_cost_and_gain_and_never_one_that_reads_everything(
    world, project, lead, client
):
    # A scorer blind to the errors: every step 0.5. Reading at 0.0 to 0.5 reads all 26 judged steps (6 first
    # errors); above 0.5 it reads nothing. No threshold saves reading and catches anything: none is recommended
    # (the old rule named 0.0, "read every step", as the best threshold).
    _scored(world, project, lambda i, at_tau: 0.5)
    client.force_login(lead)
    scorer = client.get(f"/api/projects/{project.pk}/alignment/").json()[0]
    assert scorer["best_threshold"] is None
    table = {r["threshold"]: r for r in scorer["thresholds"]}
    assert (table[0.0]["steps_read"], table[0.0]["steps_not_read"], table[0.0]["first_errors_caught"]) == (26, 0, 6)
    assert (table[0.6]["steps_read"], table[0.6]["first_errors_missed"]) == (0, 6)
    advice = scorer["threshold_advice"]
    assert (advice["threshold"], advice["steps"], advice["first_errors"]) == (None, 26, 6)
    assert "no threshold is recommended" in advice["reason"]
    page = client.get(f"/projects/{project.pk}/alignment/").content.decode()
    assert 'class="best"' not in page and "recommended</span>" not in page
    assert advice["reason"] in page.replace("&#x27;", "'")


def test_the_recommended_threshold_says_what_it_costs_and_catches(world, project, lead, client):
    # τ scores 0.85 on four traces and 0.05 on two; steps before τ and error-free traces' steps 0.25. At 0.3 a lead
    # reads 4 steps of 26 and catches 4 of the 6 first errors (100 per hundred against 6/26 reading every step);
    # a threshold that catches nothing (0.9) is never the advice.
    _scored(world, project, lambda i, at_tau: (0.85 if i < 4 else 0.05) if at_tau else 0.25)
    client.force_login(lead)
    scorer = client.get(f"/api/projects/{project.pk}/alignment/").json()[0]
    advice = scorer["threshold_advice"]
    assert advice["threshold"] == 0.3 == scorer["best_threshold"]["threshold"]
    assert (advice["steps_read"], advice["steps_not_read"], advice["steps"]) == (4, 22, 26)
    assert (advice["first_errors_caught"], advice["first_errors_missed"], advice["first_errors"]) == (4, 2, 6)
    assert (advice["per_hundred_steps"], advice["every_step_per_hundred"]) == (100.0, round(600 / 26, 2))
    page = client.get(f"/projects/{project.pk}/alignment/").content.decode()
    text = " ".join(re.search(r'<p class="threshold-advice"[^>]*>(.*?)</p>', page, re.S).group(1).split())
    text = re.sub(r"<[^>]+>", "", text)
    assert (
        "suspicion ≥ 0.3: 4 of 26 steps to read (22 fewer), catching 4 of the 6 human first errors (2 missed)" in text
    )


def test_checkpoint_agreement_and_suspicion_facets_count_and_filter(world, project, lead, annotator, api_client):
    from annotation.models import Annotation, AnnotationStatus, Verdict
    from prescoring.models import PrescoreJob, StepSuggestion
    from traces.models import Step

    traces, humans = world["traces"], world["annotations"]
    # A second answer on trace 0 with the same τ, one on trace 1 with another τ (by the second annotator).
    for trace, shift in ((traces[0], 0), (traces[1], 1)):
        Annotation.objects.create(
            trace=trace,
            project=project,
            annotator=world["second"],
            status=AnnotationStatus.SUBMITTED,
            verdict=Verdict.ERROR,
            tau=humans[trace.pk].tau + shift,
            error_category="misread screen",
            corrected_thought="Another reading.",
            corrected_action="click(start_box='(1,1)')",
        )
    # The step at τ of trace 2 scored 0.9, of trace 3 0.1.
    job = PrescoreJob.objects.create(project=project, scorer="rules", status="succeeded")
    for trace, suspicion in ((traces[2], 0.9), (traces[3], 0.1)):
        step = Step.objects.get(trace=trace, index=humans[trace.pk].tau)
        StepSuggestion.objects.create(step=step, job=job, scorer="rules", suspicion=suspicion)
    lead_client = api_client(lead)

    def facet(name, client=lead_client, **params):
        found = client.get(f"/api/projects/{project.pk}/search/", params).json()
        return {v["value"]: v["count"] for v in found["facets"][name]}, found["count"]

    assert facet("checkpoint")[0] == {"agent-v1": 4 + 2, "agent-v2": 4}
    assert facet("checkpoint", checkpoint="agent-v2")[1] == 4
    # Trace 0's two answers agree on τ; trace 1's do not: two entries each.
    assert facet("agreement")[0] == {"same τ": 2, "other τ": 2}
    assert facet("agreement", agreement="other τ")[1] == 2
    assert facet("suspicion")[0] == {"high": 1, "low": 1}
    assert {
        c["trace_id"]
        for c in lead_client.get(f"/api/projects/{project.pk}/search/", {"suspicion": "high"}).json()["results"]
    } == {traces[2].pk}
    # In a blind project the annotator's search shows no suspicion and filters nothing by it.
    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    mine, count = facet("suspicion", client=api_client(annotator))
    assert mine == {} and count == 6
    assert facet("suspicion", client=api_client(annotator), suspicion="high")[1] == 0


def test_a_slice_compared_between_two_checkpoints_and_two_rounds(world, project, lead, api_client, client):
    api = api_client(lead)
    made = api.post(
        f"/api/projects/{project.pk}/slices/",
        {"name": "typed first", "query": {"q": f'"{PLANTED_NOTE}"'}},
        format="json",
    )
    slice_id = made.json()["id"]
    # By hand: agent-v1 (round r1) has the planted mistake on 3 of its 4 corrections, agent-v2 (r2) on 1 of 4.
    compared = api.get(
        f"/api/slices/{slice_id}/compare/", {"by": "checkpoint", "before": "agent-v1", "after": "agent-v2"}
    )
    assert compared.status_code == 200, compared.content
    body = compared.json()
    assert (body["before"]["count"], body["before"]["of"], body["after"]["count"], body["after"]["of"]) == (3, 4, 1, 4)
    assert body["change_points"] == -50.0
    r1, r2 = world["rounds"]
    by_round = api.get(f"/api/slices/{slice_id}/compare/", {"by": "round", "before": r1.pk, "after": r2.pk}).json()
    assert (by_round["before"]["label"], by_round["after"]["share"]) == ("r1", 0.25)
    refused = api.get(
        f"/api/slices/{slice_id}/compare/", {"by": "checkpoint", "before": "agent-v9", "after": "agent-v2"}
    )
    assert refused.status_code == 400 and "agent-v9" in refused.json()["detail"]
    assert api.get(f"/api/slices/{slice_id}/compare/", {"by": "week"}).status_code == 400
    client.force_login(lead)
    page = client.get(f"/slices/{slice_id}/", {"before": "agent-v1", "after": "agent-v2"}).content.decode()
    assert 'data-change="-50.0"' in page and "down 50 points" in page


def test_blind_projects_keep_alignment_from_annotators(world, project, annotator, client):
    project.blind_prescoring = True
    project.save(update_fields=["blind_prescoring"])
    client.force_login(annotator)
    assert client.get(f"/projects/{project.pk}/alignment/").status_code == 403
    assert client.get(f"/api/projects/{project.pk}/alignment/").status_code == 403


def test_pages_render_for_a_lead(world, project, lead, client):
    client.force_login(lead)
    Slice.objects.create(project=project, name="all of it", query={})
    for url in (
        f"/projects/{project.pk}/search/?q=field",
        f"/projects/{project.pk}/slices/",
        f"/projects/{project.pk}/clusters/",
        f"/slices/{Slice.objects.get().pk}/",
    ):
        assert client.get(url).status_code == 200, url
    saved = client.post(f"/projects/{project.pk}/slices/", {"name": "from the page", "q": "field"})
    assert saved.status_code == 302
    assert Slice.objects.get(name="from the page").query == {"q": "field"}


def test_text_clustering_past_the_direct_linkage_limit_finds_the_same_families(monkeypatch):
    """Past DIRECT_LINKAGE_LIMIT distinct texts, k-means groups first and the linkage joins their centres: the
    families a direct linkage finds are found again, and texts worded alike share a label."""
    import random

    rng = random.Random(3)
    families = [
        "typed before clicking the search {el}: it is not focused yet, so the text went nowhere; click it first",
        "the order is not confirmed yet so finishing now leaves the task undone; confirm the order in {app}",
        "scrolling again repeats the same page of results; the list already ended, stop scrolling in {app}",
        "the dialog shows a storage quota warning banner that was ignored; read the warning in {app} first",
    ]
    texts, family_of = [], []
    for i in range(240):
        f = i % len(families)
        element = rng.choice(["field", "box", "bar", "input", "entry", "slot"])
        app = rng.choice(["Maps", "Mail", "Notes", "Photos", "Files", "Chrome"])
        texts.append(families[f].format(el=element, app=app))
        family_of.append(f)
    direct, _ = services.text_clusters(texts)
    assert len({services._normalised(t) for t in texts}) == 24
    monkeypatch.setattr(services, "DIRECT_LINKAGE_LIMIT", 8)
    monkeypatch.setattr(services, "KMEANS_GROUPS", 8)
    grouped, method = services.text_clusters(texts)
    assert "k-means" in method

    def partition(labels):
        return {frozenset(i for i, label in enumerate(labels) if label == value) for value in set(labels)}

    families_partition = partition(family_of)
    assert partition(direct) == families_partition
    assert partition(grouped) == families_partition
