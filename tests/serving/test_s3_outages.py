"""S3 for the full stack: bounded calls, screenshots by presigned redirect, presigned URLs
for the public endpoint, and 503 (JSON on the API) while S3 refuses or hangs. S3 is a moto server on loopback."""

from __future__ import annotations

import io
import socket
import threading
import time
import urllib.request
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.test import Client

from tests.conftest import TEST_PASSWORD
from tests.fixtures_export import REPLIES, make_trace
from tests.ports import free_port
from traces.models import Screenshot

BUCKET = "studio-s3-tests"


def use_s3(settings, endpoint: str, *, public_endpoint: str | None = None) -> None:
    settings.STUDIO_STORAGE = "s3"
    settings.AWS_QUERYSTRING_EXPIRE = 600
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "studio.s3.StudioS3Storage",
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
                "public_endpoint_url": public_endpoint,
            },
        },
    }


@pytest.fixture
def moto_endpoint():
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    ).create_bucket(Bucket=BUCKET)
    yield endpoint
    server.stop()


@pytest.fixture
def hung_endpoint():
    """An "S3" that accepts connections and never answers, like a stalled one."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


def login(client: Client, user) -> Client:
    assert client.post("/login/", {"username": user.username, "password": TEST_PASSWORD}).status_code == 302
    return client


def upload_zip() -> io.BytesIO:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("trace-1/trace.json", "{}")
    data.seek(0)
    data.name = "batch.zip"
    return data


def test_calls_are_bounded_by_short_timeouts_and_few_attempts(settings):
    from django.core.files.storage import storages

    use_s3(settings, "http://127.0.0.1:9")
    config = storages.create_storage(settings.STORAGES["default"]).client_config
    assert (config.connect_timeout, config.read_timeout) == (settings.S3_CONNECT_TIMEOUT_S, settings.S3_READ_TIMEOUT_S)
    assert config.retries == {"mode": "standard", "total_max_attempts": settings.S3_MAX_ATTEMPTS}
    assert config.connect_timeout <= 2 and config.read_timeout <= 10 and settings.S3_MAX_ATTEMPTS <= 3
    assert config.s3["addressing_style"] == "path" and config.signature_version == "s3v4"  # options kept


@pytest.mark.django_db
def test_screenshots_are_a_presigned_redirect_for_the_public_endpoint(settings, moto_endpoint, project, annotator):
    public = moto_endpoint.replace("127.0.0.1", "localhost")  # another name for the same server, as a browser's
    use_s3(settings, moto_endpoint, public_endpoint=public)
    trace = make_trace(project, replies=REPLIES[:2], external_id="s3-shots")
    shot = trace.steps.order_by("index").first().screenshot
    client = login(Client(), annotator)
    # The import wrote the thumbnail to S3 beside the screenshot: both are a redirect.
    for url, key, content_type in (
        (shot.image_url, shot.image.name, f"image/{shot.format.lower()}"),
        (shot.thumbnail_url, shot.thumbnail.name, "image/webp"),
    ):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(f"{public}/{BUCKET}/{key}?"), response["Location"]
        assert "X-Amz-Signature=" in response["Location"] and "private" in response["Cache-Control"]
        with urllib.request.urlopen(response["Location"], timeout=5) as fetched:
            body = fetched.read()
            assert fetched.headers["Content-Type"] == content_type
        with default_storage.open(key, "rb") as stored:
            assert body == stored.read()
    assert shot.thumbnail.name.startswith("thumbnails/")
    # A screenshot stored before imports made thumbnails: the image itself, made by nobody's web thread, and only
    # for a minute (a worker makes the thumbnail meanwhile).
    Screenshot.objects.filter(pk=shot.pk).update(thumbnail="")
    legacy = client.get(shot.thumbnail_url)
    assert legacy.status_code == 302 and legacy["Location"].startswith(f"{public}/{BUCKET}/{shot.image.name}?")
    assert legacy["Cache-Control"] == "private, max-age=60"
    img_sources = client.get(f"/projects/{project.pk}/traces/")["Content-Security-Policy"].split("img-src")[1]
    assert public in img_sources.split(";")[0].split()  # the page may load what the redirect points at


@pytest.mark.django_db
def test_bundle_links_name_the_public_endpoint(settings, moto_endpoint):
    from django.core.files.base import ContentFile
    from django.core.files.storage import storages

    public = moto_endpoint.replace("127.0.0.1", "localhost")
    use_s3(settings, moto_endpoint, public_endpoint=public)
    storage = storages.create_storage(settings.STORAGES["default"])
    name = storage.save("exports/1/bundle.zip", ContentFile(b"bundle bytes"))
    url = storage.url(name, parameters={"ResponseContentDisposition": 'attachment; filename="b.zip"'})
    assert url.startswith(f"{public}/{BUCKET}/exports/1/") and "X-Amz-Expires=600" in url
    with urllib.request.urlopen(url, timeout=5) as fetched:
        assert fetched.read() == b"bundle bytes"


@pytest.mark.django_db
def test_s3_refusing_gives_json_503_on_the_api_and_a_503_page(settings, project, lead):
    use_s3(settings, f"http://127.0.0.1:{free_port()}")  # nothing listens there
    client = login(Client(), lead)
    api = client.post(f"/api/projects/{project.pk}/imports/", {"file": upload_zip()}, HTTP_ACCEPT="application/json")
    assert api.status_code == 503, api.content[:300]
    assert api["Content-Type"] == "application/json" and api.json()["retryable"] is True
    assert "S3" in api.json()["detail"] and int(api["Retry-After"]) > 0
    page = client.post(f"/projects/{project.pk}/import/", {"file": upload_zip()})
    assert page.status_code == 503 and b"S3" in page.content and int(page["Retry-After"]) > 0
    assert client.get(f"/projects/{project.pk}/traces/").status_code == 200  # pages that need no S3 still work


@pytest.mark.django_db
def test_a_hung_s3_costs_a_request_seconds_not_minutes(settings, hung_endpoint, project, lead):
    settings.S3_CONNECT_TIMEOUT_S, settings.S3_READ_TIMEOUT_S, settings.S3_MAX_ATTEMPTS = 0.5, 0.5, 2
    use_s3(settings, hung_endpoint)
    client = login(Client(), lead)
    started = time.monotonic()
    api = client.post(f"/api/projects/{project.pk}/imports/", {"file": upload_zip()}, HTTP_ACCEPT="application/json")
    elapsed = time.monotonic() - started
    assert api.status_code == 503 and api.json()["retryable"] is True
    assert elapsed < 5, f"the request held its thread {elapsed:.1f} s"  # botocore's defaults: minutes


def test_redis_outage_during_a_request_is_a_503_not_a_500(rf):
    from redis.exceptions import ConnectionError

    from studio.middleware import DependencyOutageMiddleware

    middleware = DependencyOutageMiddleware(lambda request: None)
    api = middleware.process_exception(rf.get("/api/projects/"), ConnectionError("Connection refused"))
    assert api.status_code == 503 and b'"retryable": true' in api.content and api["Retry-After"] == "5"
    assert middleware.process_exception(rf.get("/api/projects/"), ValueError("a bug")) is None  # bugs stay 500
