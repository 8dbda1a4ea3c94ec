"""Exports on S3 (django-storages) against a real S3 endpoint on loopback (moto server)."""

import hashlib
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
