"""Rule flags: unit checks, and the real traces' known failures (dart-gui's wait loop, Mobile-Agent's repeated tap)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from prescoring import rules, services
from prescoring.models import PrescoreJob, StepSuggestion, TraceSuggestion
from tests.fixtures_annotation import import_dart_gui_example
from traces import grammar
from traces.models import CoordinateConvention, Trace

GMAIL_2 = "mobile-agent-v1/results/Gmail/2"


def _screen(color):
    return lambda: Image.new("RGB", (200, 100), color)


def _step(index, text, image=None):
    return rules.RuleStep(index=index, action_text=text, actions=grammar.parse_actions(text), image=image)


def codes(flags):
    return [sorted({f["code"] for f in step}) for step in flags]


def test_flags_on_a_synthetic_trace():
    click = "click(start_box='(10,10)')"
    steps = [
        _step(1, click, _screen("white")),
        _step(2, click, _screen("white")),  # repeats step 1, which changed nothing
        _step(3, "wait()", _screen("white")),
        _step(4, "wait()", _screen("black")),
        _step(5, "click(start_box='(1500,10)')", _screen("black")),  # off-screen in relative-1000
        rules.RuleStep(index=6, action_text="clik(", parse_error="unknown action", image=_screen("gray")),
    ]
    flags = rules.step_flags(steps, final_image=_screen("red"), convention="relative-1000")
    assert codes(flags) == [
        ["no_change"],
        ["no_change", "repeated_no_change"],
        ["wait_run"],
        ["wait_run"],
        ["off_screen"],
        ["unparseable"],
    ]
    assert "outside the screen" in flags[4][0]["message"]
    assert rules.flags_suspicion([]) == 0
    assert rules.flags_suspicion(flags[1]) == pytest.approx(1 - 0.75 * 0.2)


def test_first_error_reads_suspicions_as_probabilities():
    assert rules.first_error([1, 2, 3], [0.1, 0.9, 0.9]).index == 2
    assert rules.first_error([1, 2, 3], [0.6, 0.9, 0.9]).index == 1
    none = rules.first_error([1, 2], [0.0, 0.1])
    assert none.index is None and none.no_error_probability == pytest.approx(0.9)


def test_mobile_agent_repeated_tap_in_gmail_2(realtraces):
    """Gmail/2 taps "Subject" twice (steps 5 and 6) with nothing changing, then taps the recipient (SOURCE.txt)."""
    folder = realtraces / GMAIL_2
    data = json.loads((folder / "data.json").read_text())
    # Mobile-Agent's actions ("click text (Subject)") are not UI-TARS calls: compared as recorded text.
    steps = [
        rules.RuleStep(index=int(k), action_text=v["Action"], image=(lambda p=folder / f"{k}.jpg": Image.open(p)))
        for k, v in sorted(data.items(), key=lambda kv: int(kv[0]))
    ]
    final = lambda: Image.open(folder / f"{len(steps) + 1}.jpg")  # noqa: E731 — 10 images for 9 steps
    flags = rules.step_flags(steps, final_image=final, convention="screen-pixels", platform="mobile")
    by_step = dict(zip((s.index for s in steps), codes(flags)))
    assert "repeated_no_change" in by_step[6]
    assert all("repeated_no_change" not in by_step[i] for i in by_step if i != 6)
    first = rules.first_error([s.index for s in steps], [rules.flags_suspicion(f) for f in flags])
    assert first.index == 6


@pytest.fixture
def dart_trace(realtraces, project):
    project.coordinate_convention = CoordinateConvention.SMART_RESIZE_PIXELS
    project.save()
    return import_dart_gui_example(project, realtraces)


@pytest.mark.heavy
def test_dart_gui_wait_loop_through_a_rules_job(dart_trace, project, lead):
    job = services.prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)
    job = services.prescore_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    assert (job.steps_scored, job.steps_failed, job.progress_done, job.progress_total) == (15, 0, 15, 15)
    flags = {s.step.index: {f["code"] for f in s.flags} for s in StepSuggestion.objects.filter(job=job)}
    # Steps 7..12 are six waits in a row while GIMP already shows the image.
    assert [i for i, f in sorted(flags.items()) if "wait_run" in f] == [7, 8, 9, 10, 11, 12]
    assert "wait_run" not in flags[2]  # one wait while GIMP starts is fine
    assert not any("off_screen" in f or "unparseable" in f for f in flags.values())
    summary = TraceSuggestion.objects.get(job=job)
    assert summary.suggested_tau == 7
    assert summary.scorer == "rules" and summary.max_suspicion >= 0.5


def test_each_flag_reaches_the_page_in_words(dart_trace, project, lead, api_client, annotator):
    """The suggestions API gives each flag its words from the one table (rules.FLAG_LABELS): the workspace shows
    them as given, never the raw code ("wait_run") nor a copy of the table in JavaScript."""
    assert set(rules.FLAG_LABELS) == set(rules.FLAG_WEIGHTS)  # every flag the rules raise has its words
    job = services.prescore_job_run(
        job_id=services.prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False).pk
    )
    assert job.status == "succeeded", job.message
    data = api_client(annotator).get(f"/api/traces/{dart_trace.pk}/suggestions/").json()
    flags = [f for row in data["scorers"]["rules"]["steps"] for f in row["flags"]]
    assert any(f["code"] == "wait_run" for f in flags)
    assert all(f["label"] == rules.FLAG_LABELS[f["code"]] for f in flags)
    assert rules.flag_label("some_new_code") == "some new code"


def test_off_screen_follows_the_traces_own_convention(dart_trace, project, lead):
    """dart-gui's close-button click (1916,44) is in screen pixels, and the trace says so: in a relative-1000 project
    it is on the screen. Read in the wrong convention (a trace imported with the wrong --coordinates) it is not."""
    project.coordinate_convention = CoordinateConvention.RELATIVE_1000
    project.save()

    def flags_of_last_step():
        job = services.prescore_job_run(
            job_id=services.prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False).pk
        )
        return {f["code"] for f in StepSuggestion.objects.get(job=job, step__index=15).flags}

    assert dart_trace.coordinate_convention == CoordinateConvention.SCREEN_PIXELS
    assert "off_screen" not in flags_of_last_step()
    Trace.objects.filter(pk=dart_trace.pk).update(coordinate_convention=CoordinateConvention.RELATIVE_1000)
    assert "off_screen" in flags_of_last_step()


def test_rescoring_keeps_the_old_run(dart_trace, project, lead):
    first = services.prescore_job_run(
        job_id=services.prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False).pk
    )
    second = services.prescore_job_run(
        job_id=services.prescore_job_create(
            project=project, user=lead, scorer="rules", settings={"change_threshold": 0.0001}, enqueue=False
        ).pk
    )
    assert StepSuggestion.objects.filter(job=first).count() == 15
    assert StepSuggestion.objects.filter(job=second).count() == 15
    assert PrescoreJob.objects.get(pk=second.pk).settings["change_threshold"] == 0.0001


def test_bad_job_input_is_named(project, lead):
    with pytest.raises(services.PrescoreError, match="unknown scorer"):
        services.prescore_job_create(project=project, user=lead, scorer="magic")
    with pytest.raises(services.PrescoreError, match="unknown setting 'speed'"):
        services.prescore_job_create(project=project, user=lead, scorer="rules", settings={"speed": 2})
    with pytest.raises(services.PrescoreError, match="does not exist"):
        services.prescore_job_create(project=project, user=lead, scorer="qwen2vl", model_path="/nonexistent/model")
    with pytest.raises(services.PrescoreError, match="not in project"):
        services.prescore_job_create(project=project, user=lead, scorer="rules", trace_ids=[999999])


def test_model_scoring_goes_to_the_gpu_queue_and_rule_scoring_to_the_default_one():
    from prescoring.models import PrescoreJob
    from studio.celery import app

    model_job, rules_job = PrescoreJob(scorer="qwen2vl"), PrescoreJob(scorer="rules")
    assert (model_job.queue_name(), model_job.shard_queue()) == ("gpu", "gpu")
    assert (rules_job.queue_name(), rules_job.shard_queue()) == ("default", "default")
    # A model job's message queued by an older release under its task's old name is routed to gpu, too.
    assert app.amqp.router.route({}, "traces.tasks.prescore_with_model")["queue"].name == "gpu"


def test_prescore_command_reports_progress(dart_trace, project):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = StringIO()
    call_command("prescore", "--project", project.name, "--scorer", "rules", stdout=out)
    text = out.getvalue()
    assert "15/15 steps (15 scored, 0 failed)" in text and "succeeded: 15 steps scored, 0 failed" in text
    with pytest.raises(CommandError, match="no project named"):
        call_command("prescore", "--project", "nope", "--scorer", "rules")


def test_trace_list_offers_prescoring_to_leads_only(project, lead, annotator, client):
    from django.template.loader import render_to_string

    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/traces/").content.decode()
    assert 'id="prescore-start"' in page and "js/prescore_start.js" in page
    client.force_login(annotator)
    assert 'id="prescore-start"' not in client.get(f"/projects/{project.pk}/traces/").content.decode()
    include = render_to_string("annotation/_prescore.html")
    assert 'id="suspicion-strip"' in include and "js/prescore.js" in include and "<script>" not in include


def test_the_rules_hold_one_full_screenshot_at_a_time():
    """A long trace of full screenshots is read one image at a time: each is downscaled once and let go before the
    next is loaded (before, the whole trace's decoded images were held at once)."""
    import gc
    import weakref

    alive_at_load: list[int] = []
    refs: list[weakref.ref] = []

    def loader(shade: int):
        def load():
            gc.collect()
            alive_at_load.append(sum(1 for ref in refs if ref() is not None))
            image = Image.new("RGB", (320, 200), (shade, shade, shade))
            refs.append(weakref.ref(image))
            return image

        return load

    steps = [
        rules.RuleStep(
            index=i, action_text="wait()", actions=[grammar.parse_action("wait()")], image=loader(i % 2 * 200)
        )
        for i in range(1, 41)
    ]
    # Every object made before the scoring (the whole test process's heap: Django, torch …) is moved out of the
    # collector's reach, so each collection walks only what the scoring made, the images among it: the same count
    # of images alive, without a walk of the process's whole heap before each of the 41 loads.
    gc.collect()
    gc.freeze()
    try:
        flags = rules.step_flags(steps, final_image=loader(0), convention="relative-1000")
    finally:
        gc.unfreeze()
    assert len(flags) == 40 and len(alive_at_load) == 41
    assert max(alive_at_load) <= 1, alive_at_load


def test_a_jobs_suggestions_are_read_by_step_ids_never_by_a_join_on_the_trace(dart_trace, project, lead):
    """A job's rows for one trace are asked for by the trace's step ids (the (job, step) unique index). Asked for
    by a join on the trace, PostgreSQL read every row the job had stored for each trace (251 ms per trace at 86,000
    rows, 0.3 ms by ids): a 200,000-step job slowed as it went. Checked on the queries a job and the trace page
    make."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from prescoring.selectors import trace_suggestions

    job = services.prescore_job_create(project=project, user=lead, scorer="rules", enqueue=False)
    with CaptureQueriesContext(connection) as queries:
        job = services.prescore_job_run(job_id=job.pk)
        page = trace_suggestions(dart_trace)
    assert job.status == "succeeded" and page["scorers"]["rules"]["steps"]
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and '"traces_stepsuggestion"' in q["sql"]]
    assert reads
    by_trace = [sql for sql in reads if '"traces_step"."trace_id"' in sql.split("WHERE", 1)[-1]]
    assert not by_trace, by_trace[0]
