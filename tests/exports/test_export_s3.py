"""Exports on S3 (django-storages) against a real S3 endpoint on loopback (moto server)."""

import hashlib
import select
import socket
import threading
import time
import urllib.request
from urllib.parse import parse_qs, urlparse

import pytest
from django.conf import settings as django_settings

from annotation.models import Verdict
from exports import services
from tests.fixtures_export import REPLIES, accepted_annotation, make_trace
from tests.ports import free_port

BUCKET = "export-tests"


@pytest.fixture
def s3(settings):
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    creds = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}
    client = boto3.client("s3", endpoint_url=endpoint, **creds)
    client.create_bucket(Bucket=BUCKET)
    settings.STUDIO_STORAGE = "s3"
    settings.AWS_QUERYSTRING_EXPIRE = 600
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": endpoint,
                "access_key": "test",
                "secret_key": "test",
                "region_name": "us-east-1",
                "addressing_style": "path",
                "file_overwrite": False,
                "default_acl": None,
                "querystring_expire": 600,
                "signature_version": "s3v4",
            },
        },
    }
    yield client
    server.stop()


@pytest.mark.django_db
def test_bundle_stored_on_s3_and_downloaded_by_presigned_url(s3, project, annotator, lead, engineer, api_client):
    trace = make_trace(project, replies=REPLIES, external_id="s3")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        corrected_thought="Fix.",
        corrected_action="click(start_box='(1,2)')",
    )
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}
    assert any(k.startswith("screenshots/") for k in keys)  # the trace's images live on S3 too

    job = services.export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    job = services.export_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    stored = s3.get_object(Bucket=BUCKET, Key=job.bundle_name)["Body"].read()
    assert hashlib.sha256(stored).hexdigest() == job.bundle_sha256

    assert api_client(annotator).get(f"/api/exports/{job.pk}/bundle").status_code == 403
    response = api_client(engineer).get(f"/api/exports/{job.pk}/bundle")
    assert response.status_code == 302
    url = response["Location"]
    query = parse_qs(urlparse(url).query)
    # SigV4, expiring: a bundle's URL lives a minute (a revoked token's download link dies with it soon).
    assert query["X-Amz-Expires"] == [str(django_settings.S3_BUNDLE_URL_EXPIRY_S)] and "X-Amz-Signature" in query
    with urllib.request.urlopen(url) as fetched:
        body = fetched.read()
    assert hashlib.sha256(body).hexdigest() == job.bundle_sha256


class StallingRelay:
    """A TCP relay to S3 that can stall: while ``stalled`` is set it moves no byte either way and holds new
    connections (an S3 that hangs, as for the 40 s of the outage this was found in)."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.stalled = threading.Event()
        self.stopped = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", free_port()))
        self.listener.listen(64)
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def stall_for(self, seconds: float) -> None:
        self.stalled.set()
        threading.Timer(seconds, self.stalled.clear).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client = self.listener.accept()[0]
            except OSError:
                continue
            threading.Thread(target=self._pump, args=(client,), daemon=True).start()

    def _pump(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        ends = {client: upstream, upstream: client}
        try:
            while not self.stopped.is_set():
                if self.stalled.is_set():
                    time.sleep(0.05)
                    continue
                readable, _, _ = select.select(list(ends), [], [], 0.05)
                for end in readable:
                    data = end.recv(65536)
                    if not data:
                        return
                    ends[end].sendall(data)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def stalling_s3(settings):
    """The studio's own S3 storage (bounded calls: 1.5 s reads, one attempt) through a relay that can stall."""
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    creds = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}
    boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", **creds).create_bucket(Bucket=BUCKET)
    relay = StallingRelay(port)
    # Reads bounded well above what a loaded machine's moto takes (0.5 s timed out setting up a trace under CI's
    # load), yet short beside the stalls below.
    settings.S3_CONNECT_TIMEOUT_S, settings.S3_READ_TIMEOUT_S, settings.S3_MAX_ATTEMPTS = 1.5, 1.5, 1
    settings.JOB_ASSEMBLE_RETRY_PAUSE_S = 0.3
    settings.STUDIO_STORAGE = "s3"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "studio.s3.StudioS3Storage",
            "OPTIONS": {
                "bucket_name": BUCKET,
                "endpoint_url": f"http://127.0.0.1:{relay.port}",
                "access_key": "test",
                "secret_key": "test",
                "region_name": "us-east-1",
                "addressing_style": "path",
                "file_overwrite": False,
                "default_acl": None,
                "signature_version": "s3v4",
            },
        },
    }
    yield relay
    relay.stop()
    server.stop()


def stall_when_assembly_starts(monkeypatch, relay: StallingRelay, seconds: float) -> list[float]:
    """S3 stalls for ``seconds`` as the assembly asks for the shards' files (each try's start is recorded)."""
    from exports.services import export_jobs

    tries: list[float] = []
    results = export_jobs.shards_results

    def stalled_results(job):
        if not tries:
            relay.stall_for(seconds)
        tries.append(time.monotonic())
        return results(job)

    monkeypatch.setattr(export_jobs, "shards_results", stalled_results)
    return tries


def exportable(project, annotator, lead):
    trace = make_trace(project, replies=REPLIES, external_id="stall")
    accepted_annotation(
        trace,
        annotator=annotator,
        reviewer=lead,
        verdict=Verdict.ERROR,
        tau=2,
        corrected_thought="Fix.",
        corrected_action="click(start_box='(1,2)')",
    )


@pytest.mark.heavy
@pytest.mark.django_db
def test_an_assembly_that_meets_a_stalled_s3_is_tried_again(
    stalling_s3, monkeypatch, project, annotator, lead, engineer
):
    """An export whose assembly met a 40 s S3 hang failed at the first ReadTimeoutError, though its shards would
    have been retried through it: the assembly is tried again like them."""
    exportable(project, annotator, lead)
    # Longer than a read's bound (the first try times out), over before the second try's bound ends.
    tries = stall_when_assembly_starts(monkeypatch, stalling_s3, seconds=2.4)
    job = services.export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    job = services.export_job_run(job_id=job.pk)
    assert job.status == "succeeded", job.message
    assert len(tries) >= 2  # the first try met the stall


@pytest.mark.heavy
@pytest.mark.django_db
def test_an_assembly_that_never_reaches_s3_fails_after_its_tries_in_the_studios_words(
    stalling_s3, monkeypatch, project, annotator, lead, engineer, settings
):
    exportable(project, annotator, lead)
    tries = stall_when_assembly_starts(monkeypatch, stalling_s3, seconds=600)
    job = services.export_job_create(project=project, user=engineer, fmt="trl", enqueue=False)
    job = services.export_job_run(job_id=job.pk)
    stalling_s3.stalled.clear()
    assert len(tries) == settings.JOB_SHARD_MAX_ATTEMPTS
    assert job.status == "failed" and job.message.startswith(
        f"Its last step failed {settings.JOB_SHARD_MAX_ATTEMPTS} times: The file storage (S3) is not answering"
    ), job.message
    assert "http" not in job.message  # no endpoint, no key
