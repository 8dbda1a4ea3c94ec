"""WebSocket consumer against the configured channel layer: Redis when REDIS_URL is set, in-memory otherwise."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from annotation.consumers import CLOSE_FORBIDDEN, CLOSE_INVALID, CLOSE_UNAUTHENTICATED, LiveConsumer
from annotation.models import Annotation, Lease
from annotation.review import services as review
from studio.access import refusal
from studio.permissions import Role
from traces.models import Trace
from traces.services import project_create

# Events go out on commit: the commit must be real.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("role_groups")]


def run(scenario) -> None:
    """Run an async scenario in its own thread: the session's Playwright browser keeps an event loop
    running in the main thread once a browser test has run, and asyncio.run refuses to nest."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()


def communicator(user, query: str = "") -> WebsocketCommunicator:
    comm = WebsocketCommunicator(LiveConsumer.as_asgi(), "/ws/live/" + query)
    comm.scope["user"] = user
    return comm


async def receive_type(comm, kind: str, timeout: float = 5) -> dict:
    """The next message of ``kind`` (other events may interleave)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            raise AssertionError(f"no {kind} message within {timeout}s")
        message = await comm.receive_json_from(timeout=left)
        if message.get("type") == kind:
            return message


@pytest.fixture
def live_setup(project, annotator, lead, make_user):
    trace = Trace.objects.create(
        project=project, external_id="live-1", instruction="x", source="test", step_count=3, standing_annotations=1
    )
    annotation = Annotation.objects.create(
        trace=trace,
        project=trace.project,
        annotator=annotator,
        status="submitted",
        verdict="no_error",
        submitted_at=timezone.now(),
    )
    now = timezone.now()
    lease = Lease.objects.create(trace=trace, user=annotator, heartbeat_at=now, expires_at=now + timedelta(minutes=10))
    outsider = make_user("outsider_lead", Role.LEAD)
    project_create(name="Other project", members=[outsider])
    return {"trace": trace, "annotation": annotation, "lease": lease, "outsider": outsider}


def test_anonymous_socket_is_refused(live_setup):
    async def scenario():
        comm = communicator(AnonymousUser())
        connected, code = await comm.connect()
        assert not connected and code == CLOSE_UNAUTHENTICATED

    run(scenario)


def test_socket_of_a_non_member_project_is_refused(live_setup, project):
    async def scenario():
        comm = communicator(live_setup["outsider"], f"?project={project.pk}")
        connected, code = await comm.connect()
        assert not connected and code == CLOSE_FORBIDDEN

    run(scenario)


def test_review_event_reaches_members_after_commit_only(live_setup, lead, project):
    async def scenario():
        member = communicator(lead)
        outsider = communicator(live_setup["outsider"])
        assert (await member.connect())[0] and (await outsider.connect())[0]
        hello = await receive_type(member, "hello")
        assert hello["projects"] == [project.pk]
        assert [(p["trace_id"], p["user"]) for p in hello["presence"]] == [(live_setup["trace"].pk, "ann")]
        assert (await receive_type(outsider, "hello"))["presence"] == []

        await database_sync_to_async(review.review_reject)(
            annotation_id=live_setup["annotation"].pk, actor=lead, comment="τ is one step early"
        )
        event = await receive_type(member, "annotation")
        assert (event["status"], event["verb"], event["annotator"]) == ("rejected", "reject", "ann")
        assert await outsider.receive_nothing(timeout=0.5)

        # a rolled-back decision sends nothing
        with pytest.raises(review.ReviewError):
            await database_sync_to_async(review.review_accept)(annotation_id=live_setup["annotation"].pk, actor=lead)
        assert await member.receive_nothing(timeout=0.5)
        await member.disconnect()
        await outsider.disconnect()

    run(scenario)


def test_presence_and_lead_lease_release(live_setup, lead, annotator):
    async def scenario():
        lead_socket, ann_socket = communicator(lead), communicator(annotator)
        assert (await lead_socket.connect())[0] and (await ann_socket.connect())[0]
        await receive_type(lead_socket, "hello")
        await receive_type(ann_socket, "hello")

        await ann_socket.send_json_to({"type": "presence.open", "trace_id": live_setup["trace"].pk})
        seen = await receive_type(lead_socket, "presence")
        assert (seen["user"], seen["state"], seen["trace_id"]) == ("ann", "open", live_setup["trace"].pk)

        # an annotator cannot release someone's lease; the lead can
        await ann_socket.send_json_to({"type": "lease.release", "lease_id": live_setup["lease"].pk})
        assert (await receive_type(ann_socket, "error"))["detail"] == refusal("lease.manage")
        await lead_socket.send_json_to({"type": "lease.release", "lease_id": live_setup["lease"].pk})
        released = await receive_type(ann_socket, "lease")
        assert (released["state"], released["user"], released["lease_id"]) == (
            "released",
            "ann",
            live_setup["lease"].pk,
        )
        lease = await database_sync_to_async(Lease.objects.get)(pk=live_setup["lease"].pk)
        assert lease.release_reason == "released-by-lead" and lease.released_by_id == lead.pk

        await ann_socket.disconnect()
        closed = await receive_type(lead_socket, "presence")
        assert (closed["user"], closed["state"]) == ("ann", "closed")
        await lead_socket.disconnect()

    run(scenario)


def test_engineer_socket_is_refused_without_a_project_filter(live_setup, engineer, project):
    async def scenario():
        for query in ("", f"?project={project.pk}"):
            comm = communicator(engineer, query)
            connected, code = await comm.connect()
            assert not connected and code == CLOSE_FORBIDDEN, query

    run(scenario)


def test_a_frame_that_is_not_json_gets_an_error_and_the_socket_stays(live_setup, lead):
    async def scenario():
        comm = communicator(lead)
        assert (await comm.connect())[0]
        await receive_type(comm, "hello")
        await comm.send_to(text_data="this is not json{")
        assert "JSON" in (await receive_type(comm, "error"))["detail"]
        await comm.send_to(bytes_data=b"\x00\x01")
        assert "binary" in (await receive_type(comm, "error"))["detail"]
        await comm.send_json_to({"type": "presence.snapshot"})  # still served
        assert (await receive_type(comm, "presence.snapshot"))["presence"]
        await comm.disconnect()

    run(scenario)


def test_an_outsider_cannot_tell_another_projects_lease_from_no_lease(live_setup):
    async def scenario():
        comm = communicator(live_setup["outsider"])
        assert (await comm.connect())[0]
        await receive_type(comm, "hello")
        existing = live_setup["lease"].pk
        missing = existing + 10_000
        answers = []
        for lease_id in (existing, missing):
            await comm.send_json_to({"type": "lease.release", "lease_id": lease_id})
            frame = await receive_type(comm, "error")
            answers.append((frame["kind"], frame["detail"].replace(str(lease_id), "<id>")))
        assert answers[0] == answers[1] == ("not_found", "No such lease among yours.")  # studio.errors.error_frame
        lease = await database_sync_to_async(Lease.objects.get)(pk=existing)
        assert lease.released_at is None
        await comm.disconnect()

    run(scenario)


def test_a_query_string_that_is_not_utf8_is_refused_with_an_error_frame(live_setup, lead, project):
    # The query was decoded strictly: bytes that are not UTF-8 raised UnicodeDecodeError in connect.
    async def scenario():
        comm = communicator(lead)
        good = f"project={project.pk}&x=".encode()
        comm.scope["query_string"] = good + b"\xff"
        connected, _ = await comm.connect()
        assert connected
        frame = await comm.receive_json_from(timeout=5)
        assert frame == {
            "type": "error",
            "detail": f"the address's query string is not valid UTF-8 (byte {len(good)})",
            "kind": "invalid",
        }
        assert (await comm.receive_output(timeout=5)) == {"type": "websocket.close", "code": CLOSE_INVALID}

    run(scenario)


def test_a_submit_and_a_pause_reach_the_quality_dashboard_as_quality_events(live_setup, lead, annotator, project):
    from annotation.quality.services import annotator_pause_set
    from annotation.services import annotation_submit

    trace = Trace.objects.create(project=project, external_id="live-2", instruction="x", source="test", step_count=2)
    draft = Annotation.objects.create(trace=trace, project=project, annotator=annotator, verdict="no_error")

    async def scenario():
        dashboard = communicator(lead)
        assert (await dashboard.connect())[0]
        await receive_type(dashboard, "hello")
        await database_sync_to_async(annotation_submit)(annotation_id=draft.pk, user=annotator, base_version=1)
        assert await receive_type(dashboard, "quality") == {
            "type": "quality",
            "project_id": project.pk,
            "annotator": "ann",
        }
        await database_sync_to_async(annotator_pause_set)(
            project=project, annotator=annotator, actor=lead, paused=True, reason="check"
        )
        assert (await receive_type(dashboard, "quality"))["annotator"] == "ann"
        await dashboard.disconnect()

    run(scenario)


def test_an_annotators_socket_hears_nothing_that_tells_gold(live_setup, lead, project, make_user):
    """Other annotators' gold answers and leases, and the quality figures, reach the leads' sockets only; the
    annotator hears of their own gold answer as of any other."""
    from annotation.quality import services as quality
    from annotation.services import lease_next_trace
    from tests.fixtures_quality import gold_traces, hand_in, traces_of
    from traces.services import membership_add

    expert = make_user("expert", Role.ANNOTATOR)
    other = make_user("other", Role.ANNOTATOR)
    holder = make_user("holder", Role.ANNOTATOR)
    listener = make_user("listener", Role.ANNOTATOR)
    for user in (expert, other, holder, listener):
        membership_add(project=project, user=user)
    (gold,) = gold_traces(project, traces_of(project, 1), expert=expert, lead=lead)
    quality.quality_settings_save(project=project, user=lead, fields={"gold_every": 1})

    def claim_and_submit(user):
        answer, _ = lease_next_trace(user=user, project=project)
        assert answer.trace_id == gold.trace_id
        return hand_in(answer, user, verdict="no_error")

    def claim(user):
        return lease_next_trace(user=user, project=project)[0]

    async def scenario():
        watcher, leading = communicator(listener), communicator(lead)
        assert (await watcher.connect())[0] and (await leading.connect())[0]
        await receive_type(watcher, "hello")
        await receive_type(leading, "hello")
        theirs = await database_sync_to_async(claim_and_submit)(other)
        assert (await receive_type(leading, "annotation"))["annotation_id"] == theirs.pk
        assert await receive_type(leading, "quality")
        held = await database_sync_to_async(claim)(holder)  # a gold trace held open by another annotator
        assert (await receive_type(leading, "lease"))["user"] == "holder"
        assert await watcher.receive_nothing(timeout=0.5)  # neither their leases, nor their submit, nor the figures
        mine = await database_sync_to_async(claim_and_submit)(listener)
        heard = [await watcher.receive_json_from(timeout=5) for _ in range(3)]
        assert [(e["type"], e.get("state") or e.get("verb")) for e in heard] == [
            ("lease", "open"),
            ("lease", "released"),
            ("annotation", "submit"),
        ]
        assert heard[2]["annotation_id"] == mine.pk
        assert await watcher.receive_nothing(timeout=0.5)  # no quality event after their own submit
        await watcher.send_json_to({"type": "presence.snapshot"})
        seen = (await receive_type(watcher, "presence.snapshot"))["presence"]
        seen_by_lead = await _lead_snapshot(leading)
        assert [(p["trace_id"], p["user"]) for p in seen_by_lead if p["trace_id"] == held.trace_id] == [
            (held.trace_id, "holder")
        ]
        assert seen == [p for p in seen_by_lead if p["trace_id"] != held.trace_id] != []
        await watcher.disconnect()
        await leading.disconnect()

    async def _lead_snapshot(comm):
        await comm.send_json_to({"type": "presence.snapshot"})
        return (await receive_type(comm, "presence.snapshot"))["presence"]

    run(scenario)
