"""Thumbnails are made at import, on the worker, never in a web request.

Eight first views of large screenshots took the web process from 162 MB to 1,664 MB, because each thumbnail was
decoded from the full image in the request. Now the import writes the thumbnail beside the screenshot; the web
only streams a stored file (or redirects to S3). A screenshot imported before this change has no thumbnail: the
web answers the image itself (streamed, never decoded) and a worker task, or ``manage.py make_thumbnails``,
makes it. ``bench/thumbnails.py`` measures the web memory.
"""

from __future__ import annotations

import io
import uuid

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.test import Client
from PIL import Image

from tests.conftest import TEST_PASSWORD, wait_for
from traces.importers.base import ImageRef, ImportedStep, ImportedTrace
from traces.models import Screenshot
from traces.services import trace_import_one


@pytest.fixture
def media(settings, tmp_path):
    """Local storage in a folder of this test's own, so what the test finds there is what it wrote."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media")},
        },
    }
    return tmp_path / "media"


def screen(size=(3840, 2160), fmt="PNG", tag: str = "") -> bytes:
    """A screenshot-like image: flat background, a few bars, and a tag so every test stores new bytes."""
    from PIL import ImageDraw

    image = Image.new("RGB", size, (238, 240, 244))
    draw = ImageDraw.Draw(image)
    for row in range(12):
        draw.rectangle((40, 60 + row * 90, 40 + (row * 311) % (size[0] - 80), 100 + row * 90), fill=(60, 90, 140))
    draw.text((20, 20), tag or uuid.uuid4().hex, fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, fmt, **({"quality": 85} if fmt == "JPEG" else {}))
    return out.getvalue()


def import_shots(project, images: list[tuple[str, bytes]], external_id: str | None = None):
    steps = [
        ImportedStep(
            screenshot=ImageRef(name, (lambda data=data: data)), raw_response="Action: click(start_box='(1,1)')"
        )
        for name, data in images
    ]
    imported = ImportedTrace(
        external_id=external_id or uuid.uuid4().hex, instruction="Open the settings", source="native", steps=steps
    )
    trace = trace_import_one(project=project, imported=imported).trace
    return [step.screenshot for step in trace.steps.order_by("index").select_related("screenshot")]


def login(user) -> Client:
    client = Client()
    assert client.post("/login/", {"username": user.username, "password": TEST_PASSWORD}).status_code == 302
    return client


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def forget_thumbnail(shot: Screenshot) -> None:
    """What a screenshot imported before thumbnails were made at import looks like."""
    default_storage.delete(shot.thumbnail.name)
    Screenshot.objects.filter(pk=shot.pk).update(thumbnail="")
    shot.refresh_from_db()


@pytest.mark.django_db
def test_the_import_writes_each_thumbnail_beside_its_screenshot(project, media):
    png_shot, jpeg_shot, small = import_shots(
        project,
        [("big.png", screen()), ("big.jpg", screen(fmt="JPEG")), ("small.png", screen(size=(200, 120)))],
    )
    for shot, size in ((png_shot, (320, 180)), (jpeg_shot, (320, 180)), (small, (200, 120))):
        assert shot.thumbnail.name == f"thumbnails/{shot.sha256[:2]}/{shot.sha256}.webp"
        assert (media / shot.thumbnail.name).is_file()  # the same storage as the screenshot
        with Image.open(media / shot.thumbnail.name) as thumb:
            assert (thumb.format, thumb.size) == ("WEBP", size)  # the page's width, never scaled up


@pytest.mark.django_db
def test_the_web_streams_the_stored_thumbnail_and_never_decodes_the_screenshot(project, annotator, media):
    [shot] = import_shots(project, [("big.png", screen())])
    # Were the web to decode the screenshot, this would answer 500: it must only send the stored thumbnail.
    (media / shot.image.name).write_bytes(b"\x89PNG\r\n\x1a\n" + b"not an image" * 100)
    response = login(annotator).get(shot.thumbnail_url)
    assert response.status_code == 200 and response["Content-Type"] == "image/webp"
    assert body(response) == (media / shot.thumbnail.name).read_bytes()
    assert "immutable" in response["Cache-Control"]


@pytest.mark.django_db
def test_a_screenshot_without_thumbnail_gets_the_image_itself_undecoded(project, annotator, media):
    [shot] = import_shots(project, [("big.png", screen())])
    forget_thumbnail(shot)
    junk = b"\x89PNG\r\n\x1a\n" + b"undecodable" * 100
    (media / shot.image.name).write_bytes(junk)
    response = login(annotator).get(shot.thumbnail_url)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert body(response) == junk  # sent as stored: no decode in the request (it would have failed)
    # The browser asks again soon (a worker makes the thumbnail meanwhile), not once a year.
    assert "immutable" not in response["Cache-Control"] and "max-age=60" in response["Cache-Control"]
    shot.refresh_from_db()
    assert not shot.thumbnail and not list((media / "thumbnails").rglob("*.webp"))  # the web made none


@pytest.mark.django_db
def test_make_thumbnails_makes_the_missing_ones_once(project, media):
    shots = import_shots(project, [(f"s{n}.png", screen(size=(1920, 1080))) for n in range(3)])
    shots += import_shots(project, [("broken.png", screen(size=(640, 360)))])
    for shot in shots:
        forget_thumbnail(shot)
    (media / shots[-1].image.name).write_bytes(b"\x89PNG\r\n\x1a\n" + b"broken" * 50)
    out = io.StringIO()
    call_command("make_thumbnails", stdout=out)
    assert "3 thumbnails made" in out.getvalue() and "1 failed" in out.getvalue(), out.getvalue()
    assert shots[-1].sha256[:12] in out.getvalue()  # the one that failed is named
    for shot in shots[:3]:
        shot.refresh_from_db()
        with Image.open(media / shot.thumbnail.name) as thumb:
            assert thumb.size == (320, 180)
    again = io.StringIO()
    call_command("make_thumbnails", stdout=again)
    assert "0 thumbnails made" in again.getvalue()


@pytest.mark.worker
def test_a_first_view_without_thumbnail_has_a_worker_make_it(project, annotator, celery_worker):
    [shot] = import_shots(project, [("big.png", screen(size=(1920, 1080)))])
    forget_thumbnail(shot)
    client = login(annotator)
    first = client.get(shot.thumbnail_url)
    assert first.status_code == 200 and first["Content-Type"] == "image/png"
    wait_for(lambda: Screenshot.objects.get(pk=shot.pk).thumbnail, timeout=60, message="the worker's thumbnail")
    later = client.get(shot.thumbnail_url)
    assert later.status_code == 200 and later["Content-Type"] == "image/webp"
    with Image.open(io.BytesIO(body(later))) as thumb:
        assert thumb.size == (320, 180)


@pytest.mark.django_db
def test_a_thumbnail_request_the_broker_refused_is_asked_again_on_the_next_view(project, media):
    """The "asked" mark was set before the send, so a send that failed left nobody asking for 10 minutes."""
    from django.core.cache import cache

    from studio.celery import app
    from tests.conftest import purge_broker
    from traces.services import screenshot_thumbnail_request

    [shot] = import_shots(project, [("big.png", screen(size=(640, 400)))])
    forget_thumbnail(shot)
    purge_broker()
    conf = app.conf
    original = conf.broker_url, conf.broker_transport, conf.broker_transport_options
    (media.parent / "not-a-folder").write_bytes(b"")  # a broker whose queue folder cannot be made
    queue = str(media.parent / "not-a-folder" / "queue")
    conf.broker_url, conf.broker_transport = "filesystem://", "studio.broker_filesystem:Transport"
    conf.broker_transport_options = {"data_folder_in": queue, "data_folder_out": queue, "control_folder": queue}
    app._pool = None
    app.amqp._producer_pool = None
    try:
        screenshot_thumbnail_request(screenshot=shot)  # logged, never raised: the page still gets its image
    finally:
        conf.broker_url, conf.broker_transport, conf.broker_transport_options = original
        app._pool = None
        app.amqp._producer_pool = None
    assert cache.get(f"thumbnail-asked:{shot.sha256}") is None

    screenshot_thumbnail_request(screenshot=shot)
    with app.connection_for_write() as conn:
        message = conn.default_channel.basic_get(queue="default", no_ack=True)
    assert message is not None and message.headers["task"] == "traces.tasks.make_thumbnail"
    assert shot.sha256 in message.headers["argsrepr"]
    assert cache.get(f"thumbnail-asked:{shot.sha256}") == 1
