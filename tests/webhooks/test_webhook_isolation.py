"""Nothing one webhook receiver does stops the others. Deliveries run on the `webhooks` queue (workers of
their own), each attempt ends by an overall deadline (a receiver answering a byte every few seconds is cut off), an
endpoint gets at most a few deliveries at once, and after repeated failures it is paused and the lead is told."""

from __future__ import annotations

import threading
import time

import pytest
from django.test import Client, override_settings

from tests.conftest import TEST_PASSWORD, WorkerProcess, purge_broker, wait_for
from tests.factories import native_trace_folder
from tests.fixtures_webhooks import Receiver, Trickler
from traces import services as trace_services
from traces.models import ImportJob
from webhooks import network, services
from webhooks.models import Delivery, DeliveryStatus, Webhook


def _hook(project, url: str) -> Webhook:
    return Webhook.objects.create(project=project, url=url, events=["import.failed", "bundle.ready"], secret="s" * 64)


def test_a_trickling_receiver_is_cut_off_at_the_attempt_deadline(db, settings):
    """Before: a 10 s per-read timeout and no overall deadline; one byte every 0.5 s held the worker 40 s."""
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["127.0.0.1"]
    settings.WEBHOOKS_DEADLINE_S = 2
    settings.WEBHOOKS_READ_TIMEOUT_S = 10
    trickler = Trickler(interval_s=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(network.DeliveryTimedOut, match="no whole answer within 2 s"):
            network.post(trickler.url, b"{}", {"Content-Type": "application/json"})
        assert time.monotonic() - started < 3
        wait_for(lambda: trickler.open == 0, 5, message="the receiver's connection closed")
    finally:
        trickler.close()


def test_a_quick_answer_is_read_whole_within_the_deadline(db, settings):
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["127.0.0.1"]
    receiver = Receiver(answers=(202,))
    try:
        answer = network.post(receiver.url + "?x=1", b'{"a":1}', {"Content-Type": "application/json"}, deadline_s=5)
        assert (answer.status, answer.text) == (202, "ok")
        assert receiver.requests[0]["body"] == b'{"a":1}'
    finally:
        receiver.close()


@pytest.mark.heavy
def test_an_endpoint_gets_at_most_its_concurrency_at_once(transactional_db, project, settings):
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["127.0.0.1"]
    settings.WEBHOOKS_DEADLINE_S = 3
    settings.WEBHOOKS_ENDPOINT_CONCURRENCY = 2
    trickler = Trickler(interval_s=1)
    try:
        hook = _hook(project, trickler.url)
        deliveries = [Delivery.objects.create(webhook=hook, event="bundle.ready", payload={"n": n}) for n in range(3)]
        outcomes = {}

        def attempt(delivery):
            outcomes[delivery.pk] = services.delivery_attempt(delivery_id=delivery.pk)

        threads = [threading.Thread(target=attempt, args=(d,)) for d in deliveries[:2]]
        for thread in threads:
            thread.start()
        wait_for(lambda: trickler.taken == 2, 5, message="two deliveries sending")
        third = services.delivery_attempt(delivery_id=deliveries[2].pk)
        assert third.retry_in_s is not None and not third.delivered  # waits for a slot
        assert trickler.taken == 2 and Delivery.objects.get(pk=deliveries[2].pk).attempts == 0  # no attempt spent
        for thread in threads:
            thread.join(10)
        assert all(o.retry_in_s is not None for o in outcomes.values())
        assert set(Delivery.objects.filter(pk__in=outcomes).values_list("attempts", flat=True)) == {1}
        assert Delivery.objects.get(pk=deliveries[0].pk).last_error.startswith("timed out: no whole answer within 3 s")
        # The slots are free again: the third goes now.
        services.delivery_attempt(delivery_id=deliveries[2].pk)
        assert trickler.taken == 3
    finally:
        trickler.close()


def test_a_process_runs_at_most_its_delivery_slots_at_once(transactional_db, project, settings):
    """runstudio's one worker runs jobs and deliveries on one pool of threads: past WEBHOOKS_DELIVERIES_PER_PROCESS
    deliveries in flight, one more (to another endpoint, whose own slots are free) waits without an attempt, so the
    remaining threads stay the jobs'."""
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["127.0.0.1"]
    settings.WEBHOOKS_DEADLINE_S = 3
    settings.WEBHOOKS_DELIVERIES_PER_PROCESS = 1
    trickler, receiver = Trickler(interval_s=1), Receiver(answers=(200,))
    try:
        slow = Delivery.objects.create(webhook=_hook(project, trickler.url), event="bundle.ready", payload={})
        other = Delivery.objects.create(webhook=_hook(project, receiver.url), event="bundle.ready", payload={})
        sending = threading.Thread(target=services.delivery_attempt, kwargs={"delivery_id": slow.pk})
        sending.start()
        wait_for(lambda: trickler.taken == 1, 5, message="the slow delivery sending")
        waiting = services.delivery_attempt(delivery_id=other.pk)
        assert waiting.retry_in_s is not None and not waiting.delivered
        assert receiver.requests == [] and Delivery.objects.get(pk=other.pk).attempts == 0  # no attempt spent
        sending.join(10)
        # The process's slot is free again: the other endpoint's delivery goes now.
        assert services.delivery_attempt(delivery_id=other.pk).delivered
        assert len(receiver.requests) == 1
    finally:
        trickler.close()
        receiver.close()


@pytest.mark.worker
def test_the_embedded_worker_imports_beside_more_trickling_deliveries_than_it_has_threads(
    transactional_db, project, lead, loopback_hooks, tmp_path
):
    """runstudio's one worker (job queues and webhooks, threads) with 2 delivery slots has 4 threads; three endpoints
    trickling two deliveries each want 6. An import started after them runs while the slots' deliveries still
    trickle (each attempt may last 60 s here): deliveries never hold the jobs' threads. Without the slots the
    deliveries took all 4 threads and the import waited for an attempt's deadline."""
    from studio.management.commands.runstudio import embedded_worker_command

    tricklers = [Trickler(interval_s=5) for _ in range(3)]
    purge_broker()
    slots = {"STUDIO_WEBHOOKS_DELIVERIES_PER_PROCESS": "2", "STUDIO_WEBHOOKS_DEADLINE_S": "60"}
    with override_settings(WEBHOOKS_DELIVERIES_PER_PROCESS=2):
        command = embedded_worker_command("default,gpu")
    assert command[command.index("--pool") + 1 :][:3] == ["threads", "--concurrency", "4"]
    worker = WorkerProcess(command=command, env=slots).start()
    try:
        for trickler in tricklers:
            _hook(project, trickler.url)
        for n in range(2):
            services.event_emit(project=project, event="bundle.ready", payload={"export": {"id": n}})
        wait_for(lambda: sum(t.open for t in tricklers) >= 2, 30, message="deliveries trickling")
        for n in range(3):
            native_trace_folder(tmp_path / "batch" / f"t{n}", external_id=f"one-{n}", steps=1, size=(48, 32))
        job = trace_services.import_job_create(
            project=project, user=lead, upload_name=str(tmp_path / "batch"), server_path=True
        )
        wait_for(
            lambda: ImportJob.objects.get(pk=job.pk).status in ("succeeded", "failed"), 45, message="the import ended"
        )
        job.refresh_from_db()
        assert job.status == "succeeded", job.errors
        # The deliveries that held the slots are still trickling, and no more than the slots ever reached a receiver.
        assert sum(t.open for t in tricklers) == 2 and sum(t.taken for t in tricklers) == 2
        assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 0
    finally:
        worker.stop()
        for trickler in tricklers:
            trickler.close()


def test_repeated_failures_pause_an_endpoint_and_the_lead_is_told(db, project, lead, settings):
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["127.0.0.1"]
    settings.WEBHOOKS_BREAKER_FAILURES = 3
    settings.WEBHOOKS_PAUSE_S = 600
    receiver = Receiver(answers=(500,))
    try:
        hook = _hook(project, receiver.url)
        deliveries = [Delivery.objects.create(webhook=hook, event="bundle.ready", payload={"n": n}) for n in range(4)]
        for delivery in deliveries[:3]:
            outcome = services.delivery_attempt(delivery_id=delivery.pk)
        assert outcome.retry_in_s is not None and outcome.retry_in_s >= 600  # the pause, not the 10 s backoff
        hook.refresh_from_db()
        assert hook.is_paused and hook.failures_in_a_row == 3
        assert hook.pause_reason == "3 deliveries failed in a row, the last: HTTP 500: receiver broke"
        # While paused no delivery reaches the endpoint, and none spends an attempt.
        waiting = services.delivery_attempt(delivery_id=deliveries[3].pk)
        assert waiting.retry_in_s is not None and waiting.retry_in_s > 590
        assert len(receiver.requests) == 3 and Delivery.objects.get(pk=deliveries[3].pk).attempts == 0

        client = Client()
        client.login(username=lead.username, password=TEST_PASSWORD)
        page = client.get(f"/projects/{project.pk}/webhooks/").content.decode()
        assert 'data-paused="true"' in page and "Paused until" in page
        assert "3 deliveries failed in a row, the last: HTTP 500: receiver broke" in page
        api = client.get(f"/api/webhooks/{hook.pk}/").json()
        assert api["paused_until"] and api["failures_in_a_row"] == 3

        # "Try again now": the pause ends; a delivery that succeeds closes the breaker.
        receiver.answers = [200]
        assert client.post(f"/webhooks/{hook.pk}/resume/").status_code == 302
        assert services.delivery_attempt(delivery_id=deliveries[3].pk).delivered
        hook.refresh_from_db()
        assert not hook.is_paused and hook.failures_in_a_row == 0
        assert 'data-paused="false"' in client.get(f"/projects/{project.pk}/webhooks/").content.decode()
    finally:
        receiver.close()


@pytest.mark.worker
def test_an_import_is_not_held_by_two_trickling_receivers(transactional_db, project, lead, loopback_hooks, tmp_path):
    """The attack: two endpoints answering a byte every 5 s, two events each; an import started after them
    stayed queued for 5 minutes. The import runs on `default`, the deliveries wait on `webhooks`."""
    tricklers = [Trickler(interval_s=5), Trickler(interval_s=5)]
    purge_broker()
    jobs_worker = WorkerProcess("default,gpu").start()
    hooks_worker = WorkerProcess("webhooks").start()
    try:
        for trickler in tricklers:
            _hook(project, trickler.url)
        for n in range(2):
            services.event_emit(project=project, event="bundle.ready", payload={"export": {"id": n}})
        wait_for(lambda: sum(t.open for t in tricklers) >= 1, 30, message="a delivery trickling")
        for n in range(3):
            native_trace_folder(tmp_path / "batch" / f"t{n}", external_id=f"iso-{n}", steps=1, size=(48, 32))
        started = time.monotonic()
        job = trace_services.import_job_create(
            project=project, user=lead, upload_name=str(tmp_path / "batch"), server_path=True
        )
        wait_for(
            lambda: ImportJob.objects.get(pk=job.pk).status in ("succeeded", "failed"), 45, message="the import ended"
        )
        job.refresh_from_db()
        assert job.status == "succeeded", job.errors
        assert time.monotonic() - started < 45
        assert Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 0  # the receivers still trickle
    finally:
        jobs_worker.stop()
        hooks_worker.stop()
        for trickler in tricklers:
            trickler.close()


@pytest.mark.parametrize(
    "host, carried",
    [
        ("[::ffff:7f00:1]", "127.0.0.1"),
        ("[0:0:0:0:0:ffff:127.0.0.1]", "127.0.0.1"),
        ("[2002:7f00:1::]", "127.0.0.1"),  # 6to4
        ("[2002:a9fe:a9fe::1]", "169.254.169.254"),  # 6to4 of the metadata service
        ("[64:ff9b::7f00:1]", "127.0.0.1"),  # NAT64
        ("[64:ff9b::10.0.0.5]", "10.0.0.5"),
        ("[64:ff9b:1::7f00:1]", "127.0.0.1"),  # local-use NAT64
        ("[::127.0.0.1]", "127.0.0.1"),  # IPv4-compatible
    ],
)
def test_ipv6_spellings_that_carry_an_inside_address_are_refused(db, project, lead, settings, host, carried):
    """`ipaddress` calls 6to4, NAT64 and IPv4-compatible addresses global; registration refuses them all the same."""
    from webhooks.services import WebhookRefused, webhook_create

    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = []
    settings.WEBHOOKS_ALLOW_PRIVATE_HOSTS = []
    with pytest.raises(WebhookRefused, match=f"carries {carried}"):
        webhook_create(project=project, url=f"https://{host}/hook", events=["bundle.ready"], user=lead)


def test_ipv6_addresses_carrying_a_global_address_stay_allowed(db, project, lead, settings):
    from webhooks.services import webhook_create

    settings.WEBHOOKS_ALLOW_PRIVATE_HOSTS = []
    for host in ("[2002:5db8:d70e::1]", "[64:ff9b::93.184.215.14]", "[2606:4700::1111]"):
        webhook_create(project=project, url=f"https://{host}/hook", events=["bundle.ready"], user=lead)
