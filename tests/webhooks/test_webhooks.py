"""Webhooks: a lead registers an endpoint, a real worker delivers signed events to a receiver on loopback, retries
after a 500, a slow receiver never holds up the request that caused the event, deliveries can be re-sent."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from annotation.models import Verdict
from exports import services as export_services
from tests.conftest import TEST_PASSWORD, WorkerProcess, purge_broker, wait_for
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace
from tests.fixtures_webhooks import Receiver
from traces import services as trace_services
from webhooks import signing
from webhooks.models import Delivery, DeliveryStatus, Webhook
from webhooks.services import WebhookRefused, webhook_create


def register(client: Client, project, url: str) -> str:
    page = client.post(f"/projects/{project.pk}/webhooks/", {"url": url, "events": ["bundle.ready", "import.failed"]})
    assert page.status_code == 200
    html = page.content.decode()
    start = html.index('id="webhook-secret-value">') + len('id="webhook-secret-value">')
    return html[start : html.index("<", start)]


@pytest.mark.worker
def test_signed_delivery_retried_after_a_500_and_resent(
    transactional_db, project, annotator, lead, engineer, loopback_hooks, request
):
    receiver = Receiver(answers=(500, 200))
    client = Client()
    client.login(username=lead.username, password=TEST_PASSWORD)
    secret = register(client, project, receiver.url)
    assert len(secret) == 64
    assert secret not in client.get(f"/projects/{project.pk}/webhooks/").content.decode()  # shown once

    trace = make_trace(project, replies=REPLIES, external_id="hook-1")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=3,
        corrected_thought="Fix.",
        corrected_action="click(start_box='(400,300)')",
    )
    purge_broker()
    request.getfixturevalue("celery_worker")  # from here: the annotation above was made with no worker running
    try:
        job = export_services.export_job_create(project=project, user=engineer, fmt="trl")
        wait_for(lambda: len(receiver.requests) >= 2, 60, message="a failed then a retried delivery")
        delivery = wait_for(
            lambda: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).first(), 30, message="delivery recorded"
        )
        first, second = receiver.requests[:2]
        assert second["at"] - first["at"] >= 0.4  # backoff, not a tight loop
        for request in (first, second):
            assert request["headers"][signing.EVENT_HEADER] == "bundle.ready"
            assert request["headers"][signing.DELIVERY_HEADER] == str(delivery.pk)
            assert signing.verify(
                secret, request["headers"][signing.SIGNATURE_HEADER], request["body"], now=int(time.time())
            )
            assert not signing.verify(
                "not-the-secret", request["headers"][signing.SIGNATURE_HEADER], request["body"], now=int(time.time())
            )
        payload = json.loads(second["body"])
        assert payload["export"]["id"] == job.pk and payload["project"]["id"] == project.pk
        assert delivery.attempts == 2 and delivery.response_status == 200

        log = client.get(f"/projects/{project.pk}/webhooks/").content.decode()
        assert "bundle.ready" in log and "Delivered" in log
        client.post(f"/webhooks/deliveries/{delivery.pk}/resend/")
        wait_for(lambda: len(receiver.requests) >= 3, 30, message="re-sent delivery")
        again = Delivery.objects.get(resent_from=delivery)
        assert json.loads(receiver.requests[2]["body"]) == payload
        wait_for(lambda: Delivery.objects.get(pk=again.pk).status == DeliveryStatus.DELIVERED, 30, message="re-send")
    finally:
        receiver.close()


@pytest.mark.worker
def test_slow_receiver_never_holds_up_the_request(
    transactional_db, project, lead, loopback_hooks, tmp_path, celery_worker
):
    receiver = Receiver(delay_s=5)
    client = Client()
    client.login(username=lead.username, password=TEST_PASSWORD)
    register(client, project, receiver.url)
    try:
        # An import that fails (its upload is not there) is an import.failed event.
        started = time.monotonic()
        job = trace_services.import_job_create(
            project=project,
            user=lead,
            upload_name=str(tmp_path / "missing.zip"),
            original_name="missing.zip",
            server_path=True,
        )
        assert time.monotonic() - started < 1
        wait_for(lambda: receiver.requests, 60, message="import.failed delivered")
        assert json.loads(receiver.requests[0]["body"])["import"]["id"] == job.pk
        delivery = Delivery.objects.get()
        started = time.monotonic()
        response = client.post(f"/webhooks/deliveries/{delivery.pk}/resend/")
        assert response.status_code == 302 and time.monotonic() - started < 1  # the 5 s receiver is the worker's wait
    finally:
        celery_worker.settle()  # the delivery under way ends before its receiver goes
        receiver.close()


def test_registration_rules(db, project, lead, settings):
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = []
    with pytest.raises(WebhookRefused, match="use https://"):
        webhook_create(project=project, url="http://10.0.0.5/hook", events=["bundle.ready"], user=lead)
    with pytest.raises(WebhookRefused, match="credentials"):
        webhook_create(project=project, url="https://u:p@ci.example.org/h", events=["bundle.ready"], user=lead)
    with pytest.raises(WebhookRefused, match="events"):
        webhook_create(project=project, url="https://ci.example.org/h", events=["nope"], user=lead)
    hook, secret = webhook_create(project=project, url="https://ci.example.org/h", events=["bundle.ready"], user=lead)
    assert Webhook.objects.get().secret == secret and hook.events == ["bundle.ready"]
    client = Client()
    client.login(username=lead.username, password=TEST_PASSWORD)
    refused = client.post(f"/projects/{project.pk}/webhooks/", {"url": "ftp://x", "events": ["bundle.ready"]})
    assert refused.status_code == 400 and "is not an http(s) address" in refused.content.decode()
    # The refused form keeps what was typed and ticked (it came back blank, every event ticked again).
    page = refused.content.decode()
    assert 'placeholder="https://ci.example.org/trace-studio" value="ftp://x"' in page
    assert page.count('name="events" value="bundle.ready" checked') == 1
    assert 'name="events" value="import.failed">' in page
    fresh = client.get(f"/projects/{project.pk}/webhooks/").content.decode()
    assert 'value="">' in fresh and 'name="events" value="import.failed" checked' in fresh
    assert f'<a href="/projects/{project.pk}/traces/">{project.name}</a> › webhooks' in fresh  # a way back


def test_signature_rejects_old_timestamps():
    header = signing.signature("s3cret", 1_000, b"{}")
    assert signing.verify("s3cret", header, b"{}", now=1_100)
    assert not signing.verify("s3cret", header, b"{}", now=2_000)
    assert not signing.verify("s3cret", header, b'{"a":1}', now=1_100)
    assert not signing.verify("s3cret", "garbage", b"{}", now=1_100)


def test_api_registers_lists_shows_resends_and_removes_an_endpoint(
    db, project, lead, annotator, make_user, api_client, settings
):
    """A CI script with a lead's token does what the page does; the secret comes back once, in the registration."""
    from studio.permissions import Role
    from traces.services import project_create

    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = []
    client = api_client(lead)
    refused = client.post(
        f"/api/projects/{project.pk}/webhooks/",
        {"url": "http://ci.example.org/h", "events": ["bundle.ready"]},
        format="json",
    )
    assert refused.status_code == 400 and "https" in refused.json()["detail"]
    unknown = client.post(
        f"/api/projects/{project.pk}/webhooks/",
        {"url": "https://ci.example.org/h", "events": ["bundle.gone"]},
        format="json",
    )
    assert unknown.status_code == 400 and "bundle.gone" in unknown.json()["detail"]

    made = client.post(
        f"/api/projects/{project.pk}/webhooks/",
        {"url": "https://ci.example.org/h", "events": ["round.annotated", "bundle.ready"]},
        format="json",
    )
    assert made.status_code == 201, made.content
    body = made.json()
    webhook = Webhook.objects.get(pk=body["id"])
    assert body["secret"] == webhook.secret and len(body["secret"]) == 64
    assert body["events"] == ["bundle.ready", "round.annotated"]

    listed = client.get(f"/api/projects/{project.pk}/webhooks/").json()
    assert [w["id"] for w in listed] == [webhook.pk] and "secret" not in listed[0]

    delivery = Delivery.objects.create(webhook=webhook, event="bundle.ready", payload={"bundle": 1})
    detail = client.get(f"/api/webhooks/{webhook.pk}/").json()
    assert "secret" not in detail and [d["id"] for d in detail["deliveries"]] == [delivery.pk]
    again = client.post(f"/api/deliveries/{delivery.pk}/resend/")
    assert again.status_code == 201 and again.json()["resent_from"] == delivery.pk
    assert Delivery.objects.get(pk=again.json()["id"]).payload == {"bundle": 1}

    # Annotators may not manage webhooks; a lead of another project does not see this one.
    assert api_client(annotator).get(f"/api/projects/{project.pk}/webhooks/").status_code == 403
    other_lead = make_user("other-lead", Role.LEAD)
    project_create(name="Elsewhere", members=[other_lead])
    assert api_client(other_lead).get(f"/api/webhooks/{webhook.pk}/").status_code == 404
    assert api_client(other_lead).delete(f"/api/webhooks/{webhook.pk}/").status_code == 404

    assert client.delete(f"/api/webhooks/{webhook.pk}/").status_code == 204
    assert not Webhook.objects.filter(pk=webhook.pk).exists()
    assert client.get(f"/api/projects/{project.pk}/webhooks/").json() == []


# --- addresses inside the studio's network (webhooks/network.py) ------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/h",
        "https://localhost:8443/h",
        "https://api.localhost/h",
        "https://169.254.169.254/latest/meta-data",
        "https://10.0.0.5/h",
        "https://[::1]/h",
        "https://[::ffff:127.0.0.1]/h",
        "https://0x7f000001/h",
        "https://2130706433/h",
        "https://127.1/h",
        "https://0.0.0.0/h",
    ],
)
def test_an_address_inside_the_network_is_refused_at_registration(db, project, lead, settings, url):
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = []
    settings.WEBHOOKS_ALLOW_PRIVATE_HOSTS = []
    with pytest.raises(WebhookRefused, match="inside the studio's network.*STUDIO_WEBHOOKS_ALLOW_PRIVATE_HOSTS"):
        webhook_create(project=project, url=url, events=["bundle.ready"], user=lead)
    assert not Webhook.objects.exists()


def test_the_operator_allows_hosts_inside_the_network_by_name_or_network(db, project, lead, settings):
    settings.WEBHOOKS_ALLOW_HTTP_HOSTS = []
    settings.WEBHOOKS_ALLOW_PRIVATE_HOSTS = ["ci.internal", "10.20.0.0/16", "localhost"]
    for url in ("https://10.20.3.4/h", "https://localhost/h", "https://93.184.215.14/h", "https://ci.example.org/h"):
        webhook_create(project=project, url=url, events=["bundle.ready"], user=lead)
    with pytest.raises(WebhookRefused, match="10.21.0.1 is 10.21.0.1"):
        webhook_create(project=project, url="https://10.21.0.1/h", events=["bundle.ready"], user=lead)


def test_a_delivery_is_not_sent_inside_the_network_whatever_the_row_says(db, project, lead, settings):
    """An endpoint registered before the rule (or a name that resolves inside only at delivery): the worker looks
    the address up itself and sends nothing there."""
    from webhooks.services import delivery_attempt

    receiver = Receiver()
    try:
        settings.WEBHOOKS_ALLOW_HTTP_HOSTS = []
        settings.WEBHOOKS_ALLOW_PRIVATE_HOSTS = []
        hook = Webhook.objects.create(project=project, url=receiver.url, events=["bundle.ready"], secret="s" * 64)
        delivery = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={"a": 1})
        assert delivery_attempt(delivery_id=delivery.pk).delivered is False
        delivery.refresh_from_db()
        assert delivery.last_error.startswith("refused: 127.0.0.1 is 127.0.0.1, an address inside the studio's network")
        assert delivery.attempts == 1 and receiver.requests == []
    finally:
        receiver.close()


def test_a_named_host_is_reached_through_the_address_the_worker_checked(db, project, lead, settings):
    from webhooks.services import delivery_attempt

    receiver = Receiver(answers=(503,))
    try:
        settings.WEBHOOKS_ALLOW_HTTP_HOSTS = ["localhost"]
        port = receiver.server.server_port
        hook, _ = webhook_create(
            project=project, url=f"http://localhost:{port}/hook?x=1", events=["bundle.ready"], user=lead
        )
        delivery = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={"a": 1})
        assert delivery_attempt(delivery_id=delivery.pk).delivered is False
        delivery.refresh_from_db()
        assert delivery.response_status == 503 and delivery.last_error == "HTTP 503: receiver broke"
        assert receiver.requests[0]["headers"]["Host"] == f"localhost:{port}"
        assert json.loads(receiver.requests[0]["body"]) == {"a": 1}
    finally:
        receiver.close()


@pytest.mark.worker
def test_a_delivery_whose_worker_is_killed_during_its_try_is_taken_over_and_sent_again(
    transactional_db, project, loopback_hooks, monkeypatch
):
    """The engine runs a delivery: its worker dies while the receiver is answering; another worker's watchdog finds
    the job's heartbeat stale and runs it again. The receiver gets the delivery twice (at least once) with the same
    delivery id, and the dead worker's try counts."""
    from webhooks.models import DeliveryJob
    from webhooks.services import event_emit

    monkeypatch.setenv("STUDIO_JOB_STALE_AFTER_S", "2")
    monkeypatch.setenv("STUDIO_JOB_WATCH_INTERVAL_S", "1")
    monkeypatch.setenv("STUDIO_REDIS_VISIBILITY_TIMEOUT_S", "3600")  # recovery must not wait for the broker
    receiver = Receiver(delay_s=2)
    Webhook.objects.create(project=project, url=receiver.url, events=["bundle.ready"], secret="s" * 64)
    purge_broker()
    victim = WorkerProcess().start()
    survivor = None
    try:
        (delivery,) = event_emit(project=project, event="bundle.ready", payload={"export": {"id": 1}})
        wait_for(lambda: receiver.requests, 60, 0.05, "the first try under way")
        victim.kill()
        assert Delivery.objects.get(pk=delivery.pk).status == DeliveryStatus.PENDING
        survivor = WorkerProcess().start()
        job = wait_for(
            lambda: (j := DeliveryJob.objects.get(pk=delivery.pk)).is_finished and j, 60, 0.2, "the job ended"
        )
    finally:
        victim.kill()
        if survivor is not None:
            survivor.stop()
        receiver.close()
    assert (job.status, job.message) == ("succeeded", "Delivered on try 2 (HTTP 200)."), job.message
    assert job.attempts == 2  # the dead worker's run, and the one that took it over
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.DELIVERED, 2)
    assert [r["headers"][signing.DELIVERY_HEADER] for r in receiver.requests] == [str(delivery.pk)] * 2


def test_a_waiting_delivery_is_cancelled_and_its_log_says_so(db, project, django_capture_on_commit_callbacks):
    from webhooks.models import DeliveryJob
    from webhooks.services import delivery_cancel

    hook = Webhook.objects.create(project=project, url="https://ci.example.org/h", events=["bundle.ready"], secret="s")
    waiting = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={})
    DeliveryJob.objects.create(delivery=waiting)
    with django_capture_on_commit_callbacks(execute=True):
        assert delivery_cancel(delivery=waiting) == (True, "Cancelled before it started.")
    assert DeliveryJob.objects.get(pk=waiting.pk).status == "cancelled"
    waiting.refresh_from_db()
    assert (waiting.status, waiting.last_error) == (DeliveryStatus.FAILED, "Cancelled before it started.")
    # A delivery without a job (a row made outside the services) and one already delivered.
    jobless = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={})
    assert delivery_cancel(delivery=jobless) == (True, "Cancelled.")
    assert Delivery.objects.get(pk=jobless.pk).status == DeliveryStatus.FAILED
    done = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={}, status=DeliveryStatus.DELIVERED)
    assert delivery_cancel(delivery=done) == (False, "Nothing to cancel: the delivery is delivered.")


def test_a_lead_cancels_a_waiting_delivery_from_the_api_and_the_page(
    db, project, lead, annotator, api_client, client, django_capture_on_commit_callbacks
):
    """The API and the page's "cancel" stop a pending delivery; an ended one is left as it is and said so; an
    annotator may not cancel."""
    from webhooks.models import DeliveryJob

    hook = Webhook.objects.create(project=project, url="https://ci.example.org/h", events=["bundle.ready"], secret="s")
    waiting = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={})
    DeliveryJob.objects.create(delivery=waiting)
    assert api_client(annotator).post(f"/api/deliveries/{waiting.pk}/cancel/").status_code == 403
    assert Delivery.objects.get(pk=waiting.pk).status == DeliveryStatus.PENDING

    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client(lead).post(f"/api/deliveries/{waiting.pk}/cancel/")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["cancelled"] is True and body["message"] == "Cancelled before it started."
    assert body["delivery"]["id"] == waiting.pk
    assert Delivery.objects.get(pk=waiting.pk).status == DeliveryStatus.FAILED
    again = api_client(lead).post(f"/api/deliveries/{waiting.pk}/cancel/").json()
    assert again["cancelled"] is False and "Nothing to cancel" in again["message"]

    # The page offers "cancel" on pending deliveries only, and its form does what the API does.
    pending = Delivery.objects.create(webhook=hook, event="bundle.ready", payload={})
    DeliveryJob.objects.create(delivery=pending)
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/webhooks/").content.decode()
    assert f"/webhooks/deliveries/{pending.pk}/cancel/" in page
    assert f"/webhooks/deliveries/{waiting.pk}/cancel/" not in page
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(f"/webhooks/deliveries/{pending.pk}/cancel/", follow=True)
    assert f"Delivery {pending.pk}: Cancelled before it started." in done.content.decode()
    assert Delivery.objects.get(pk=pending.pk).status == DeliveryStatus.FAILED


def test_an_events_payload_is_made_only_for_an_endpoint_that_wants_it(db, project):
    """A job's end makes its event's payload only when an active endpoint of its project wants the event: the
    payload names a path, and a process's first reversed path loads every view (a command-line export's quarter of
    a second, for no one)."""
    from webhooks.services import event_emit

    made: list[int] = []

    def payload() -> dict:
        made.append(1)
        return {"export": {"id": 1}}

    assert event_emit(project=project, event="bundle.ready", payload=payload) == []
    Webhook.objects.create(project=project, url="https://ci.example.org/a", events=["import.failed"], secret="s")
    Webhook.objects.create(
        project=project, url="https://ci.example.org/b", events=["bundle.ready"], secret="s", active=False
    )
    assert event_emit(project=project, event="bundle.ready", payload=payload) == [] and made == []
    wanting = Webhook.objects.create(
        project=project, url="https://ci.example.org/c", events=["bundle.ready"], secret="s"
    )
    (delivery,) = event_emit(project=project, event="bundle.ready", payload=payload)
    assert made == [1] and delivery.webhook == wanting and delivery.payload["export"] == {"id": 1}
    assert delivery.payload["event"] == "bundle.ready" and delivery.payload["project"]["id"] == project.pk
