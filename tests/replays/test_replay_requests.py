"""Replay requests as services (replays/services.py): who may push and finish, what a refusal says and leaves
stored, the claim's exclusivity, the lease and the project's deadline."""

from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import Annotation, AnnotationStatus
from replays.models import ReplayRequest, ReplayStatus
from replays.selectors import NOT_REPLAYED, WAITING, verifications
from replays.services import (
    replay_branch_push,
    replay_policy_set,
    replay_request_cancel,
    replay_request_claim,
    replay_request_create,
    replay_request_finish,
    replays_time_out,
)
from studio.errors import Conflict, Invalid
from traces.models import Trace
from traces.services import trace_end, trace_step_push

STEP = json.dumps({"thought": "t", "action": "click(start_box='(100,200)')"})


def _trace(project, external_id: str, steps: int = 3) -> Trace:
    for index in range(1, steps + 1):
        trace_step_push(
            project=project,
            external_id=external_id,
            index=index,
            step=STEP,
            instruction="Open the settings",
        )
    return trace_end(project=project, external_id=external_id, outcome="failure")


def _request(project, annotator, lead, external_id: str = "t1", tau: int = 2) -> ReplayRequest:
    trace = _trace(project, external_id)
    answer = Annotation.objects.create(
        trace=trace,
        project=project,
        annotator=annotator,
        status=AnnotationStatus.ACCEPTED,
        verdict="error",
        tau=tau,
        corrected_action="click(start_box='(300,400)')",
    )
    return replay_request_create(annotation=answer, actor=lead).request


@pytest.mark.django_db
def test_refusals_name_the_problem_and_store_nothing_half(project, annotator, lead):
    request = _request(project, annotator, lead)
    assert (request.status, request.corrected_action, request.tau) == ("queued", "click(start_box='(300,400)')", 2)
    with pytest.raises(Conflict, match="not claimed"):
        replay_branch_push(request_id=request.pk, claim=0, index=2, step=STEP)
    claimed = replay_request_claim(project=project, runner="r1")
    assert (claimed.pk, claimed.claims, claimed.claimed_by) == (request.pk, 1, "r1")
    with pytest.raises(Conflict, match="claim 7 holds it no more"):
        replay_branch_push(request_id=request.pk, claim=7, index=2, step=STEP)
    with pytest.raises(Conflict, match="push the branch's step 2"):
        replay_request_finish(request_id=request.pk, claim=1, success=True)
    with pytest.raises(Invalid, match="success: true or false"):
        replay_request_finish(request_id=request.pk, claim=1)
    pushed = replay_branch_push(request_id=request.pk, claim=1, index=2, step=STEP)
    assert (pushed.trace.parent_id, pushed.trace.branch_at, pushed.trace.step_count) == (request.trace_id, 2, 2)
    # Cancelled: the unfinished branch goes, and the runner's next push and finish are refused with the reason.
    replay_request_cancel(request=request, actor=lead)
    assert not Trace.objects.filter(pk=pushed.trace.pk).exists()
    with pytest.raises(Conflict, match="cancelled: cancelled by"):
        replay_branch_push(request_id=request.pk, claim=1, index=3, step=STEP)
    with pytest.raises(Conflict, match="cancelled"):
        replay_request_finish(request_id=request.pk, claim=1, success=True)
    assert verifications([request.annotation_id]) == {request.annotation_id: NOT_REPLAYED}

    # Finished once: a second finish, or a push after it, is refused; the branch stays whole.
    second = _request(project, annotator, lead, "t2")
    replay_request_claim(project=project, runner="r1")
    replay_branch_push(request_id=second.pk, claim=1, index=2, step=STEP)
    replay_request_finish(request_id=second.pk, claim=1, success=False, score=0.25, message="still light")
    with pytest.raises(Conflict, match="replayed"):
        replay_request_finish(request_id=second.pk, claim=1, success=True)
    with pytest.raises(Conflict, match="replayed"):
        replay_branch_push(request_id=second.pk, claim=1, index=3, step=STEP)
    second.refresh_from_db()
    assert (second.success, second.score, second.branch.outcome, second.branch.receiving) == (
        False,
        0.25,
        "failure",
        False,
    )


@pytest.mark.django_db
def test_an_expired_lease_returns_the_request_and_the_deadline_ends_it(project, annotator, lead):
    replay_policy_set(project=project, every_accepted_correction=False, lease_s=60, deadline_s=600)
    request = _request(project, annotator, lead)
    replay_request_claim(project=project, runner="killed")
    replay_branch_push(request_id=request.pk, claim=1, index=2, step=STEP)
    assert replay_request_claim(project=project, runner="other") is None  # held by its lease
    assert verifications([request.annotation_id]) == {request.annotation_id: WAITING}
    ReplayRequest.objects.filter(pk=request.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    taken = replay_request_claim(project=project, runner="other")
    assert (taken.pk, taken.claims, taken.claimed_by, taken.branch_id) == (request.pk, 2, "other", None)
    with pytest.raises(Conflict, match="claimed again"):
        replay_branch_push(request_id=request.pk, claim=1, index=2, step=STEP)
    ReplayRequest.objects.filter(pk=request.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))
    assert replays_time_out(project=project) == 1
    request.refresh_from_db()
    assert (request.status, request.message) == (
        ReplayStatus.TIMED_OUT,
        "no runner finished it by the project's deadline",
    )


@pytest.mark.django_db(transaction=True)
def test_runners_claiming_at_once_never_hold_one_request_together(project, annotator, lead):
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED: PostgreSQL (SQLite serialises its writers)")
    for n in range(12):
        _request(project, annotator, lead, f"t{n}")
    held: dict[str, list[int]] = {}

    def runner(name: str) -> None:
        got = held.setdefault(name, [])
        try:
            while (request := replay_request_claim(project=project, runner=name)) is not None:
                got.append(request.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=runner, args=(f"r{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [pk for got in held.values() for pk in got]
    assert sorted(claimed) == sorted(ReplayRequest.objects.values_list("pk", flat=True))
    assert set(ReplayRequest.objects.values_list("claims", flat=True)) == {1}


@pytest.mark.django_db
def test_a_request_is_announced_to_the_projects_endpoints_with_what_to_replay(project, annotator, lead):
    from webhooks.models import Delivery, Webhook

    Webhook.objects.create(
        project=project, url="https://ci.example.org/runner", events=["replay.requested"], secret="s"
    )
    request = _request(project, annotator, lead)
    delivery = Delivery.objects.get(event="replay.requested")
    replay = delivery.payload["replay"]
    assert (replay["id"], replay["tau"], replay["corrected"]["action"]) == (
        request.pk,
        2,
        "click(start_box='(300,400)')",
    )
    assert replay["actions_before"] == [{"index": 1, "thought": "t", "action": "click(start_box='(100,200)')"}]
    assert replay["trace"]["instruction"] == "Open the settings"
    assert replay["push"]["steps"] == f"/api/replays/{request.pk}/steps/"
    # Asked again while it is open: the same request, announced once.
    again = replay_request_create(annotation=request.annotation, actor=lead)
    assert (again.created, again.request.pk, Delivery.objects.count()) == (False, request.pk, 1)


@pytest.mark.django_db
def test_the_corrected_action_is_sent_in_the_traces_convention_as_integers(project, annotator, lead, tmp_path):
    from tests.factories import screen_png

    shot = screen_png(tmp_path / "screen.png", size=(1920, 1080))
    trace_step_push(
        project=project,
        external_id="pixels",
        index=1,
        step=STEP,
        instruction="Open the settings",
        coordinates="screen-pixels",
        screenshot=shot.read_bytes(),
    )
    trace = trace_end(project=project, external_id="pixels")
    answer = Annotation.objects.create(
        trace=trace,
        project=project,
        annotator=annotator,
        status=AnnotationStatus.ACCEPTED,
        verdict="error",
        tau=1,
        corrected_action="click(start_box='(500,333)')",  # the project's relative-1000
    )
    request = replay_request_create(annotation=answer, actor=lead).request
    assert project.coordinate_convention == "relative-1000"
    assert request.corrected_action == "click(start_box='(960,360)')"


@pytest.mark.django_db
def test_the_job_watchdogs_pass_times_out_requests_no_runner_claims(project, annotator, lead):
    from studio.signals import watchdog_passed

    request = _request(project, annotator, lead)
    ReplayRequest.objects.filter(pk=request.pk).update(deadline_at=timezone.now() - timedelta(seconds=1))
    watchdog_passed.send(sender=None)
    request.refresh_from_db()
    assert request.status == ReplayStatus.TIMED_OUT
